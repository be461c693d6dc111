"""Benchmark of the local trace store: ingest, tag search, span search, restart; or its CPU under a run.

Ingests 1,000 traces of 10 spans each through the HTTP endpoints the SDK uses (gzip
batches, every entity posted twice: at start and at end, as the SDK does), then times
searches over raw HTTP (``tags contains`` a whole unique tag, a 6-character piece of one
and a 2-character needle; the spans of one trace) and through the ``opik`` SDK. Prints
the figures as text and, last, as one JSON line.

    uv run python bench/bench_store.py [--traces N] [--spans-per-trace N] [--no-sdk]

``--harness N`` instead runs ``obai-e2e run`` on the N instant cases of bench_peers.py (the
stand-in agent writes each trace, the harness resolves and reads it) against a store served in
this process, and prints the store's CPU per case (this process's CPU: the harness and the agents
are other processes), per route (CPU of the request's handling on its thread), and with
``--profile`` the functions that cost it (cProfile on CPU time, which slows the store down).

    uv run python bench/bench_store.py --harness 300 [--jobs 1] [--profile]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import httpx  # noqa: E402
from obai_e2e.base.opik_env import QUIET_SDK_ENV  # noqa: E402
from obai_e2e.tracestore import ensure_running, stop  # noqa: E402
from obai_e2e.tracestore.timeutil import new_uuid7  # noqa: E402

PROJECT = "bench"
TRACE_BATCH = 100  # the SDK flushes what accumulated in ~2 s; for an agent that is a few turns
SPAN_BATCH = 1000  # the SDK's largest batch


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _rss_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 3), "p95_ms": round(p95 * 1000, 3)}


def _post(http: httpx.Client, plural: str, items: list[dict]) -> None:
    body = gzip.compress(json.dumps({plural: items}).encode(), compresslevel=6)
    response = http.post(
        f"/v1/private/{plural}/batch",
        content=body,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    response.raise_for_status()


Copies = list[tuple[dict, dict]]


def _make_corpus(n_traces: int, spans_per_trace: int) -> tuple[Copies, Copies, list[str]]:
    """(start, end) copies of every trace and span, and each trace's unique tag."""
    base = datetime.now(timezone.utc) - timedelta(hours=1)
    traces, spans, tags = [], [], []
    for i in range(n_traces):
        trace_id = new_uuid7()
        tag = f"corr-{uuid.uuid4().hex[:12]}"
        tags.append(tag)
        start = base + timedelta(seconds=i)
        common = {
            "id": trace_id, "project_name": PROJECT, "name": "hub", "start_time": _iso(start),
            "input": {"query": f"question {i}: what did AAPL close at, and the RSI(14) crossing 30/70?"},
            "tags": [tag, "bench"], "metadata": {"run_id": f"run-{i % 20}", "case": f"C{i}"},
            "thread_id": f"session-{i}",
        }
        end = {**common, "end_time": _iso(start + timedelta(seconds=0.9)),
               "output": {"output": "AAPL closed at 190.50. " + "analysis " * 40}}
        traces.append(({**common, "last_updated_at": _iso(start)},
                       {**end, "last_updated_at": _iso(start + timedelta(seconds=0.9))}))
        parent = None
        for j in range(spans_per_trace):
            s_start = start + timedelta(milliseconds=10 * j)
            s_common = {
                "id": new_uuid7(), "project_name": PROJECT, "trace_id": trace_id, "parent_span_id": parent,
                "name": "hub" if j == 0 else f"specialist_{j}", "type": "general" if j == 0 else "tool",
                "start_time": _iso(s_start), "input": {"args": f"span {j} of trace {i}", "payload": "x" * 150},
            }
            s_end = {**s_common, "end_time": _iso(s_start + timedelta(milliseconds=8)),
                     "output": {"result": f"value {i}.{j}", "detail": "y" * 200}}
            spans.append(({**s_common, "last_updated_at": _iso(s_start)},
                          {**s_end, "last_updated_at": _iso(s_start + timedelta(milliseconds=8))}))
            if j == 0:
                parent = s_common["id"]
    return traces, spans, tags


def _ingest(http: httpx.Client, traces: list, spans: list, spans_per_trace: int) -> tuple[float, int]:
    """Post start copies, then end copies, a group of traces (and their spans) at a time."""
    started = time.perf_counter()
    requests = 0
    for offset in range(0, len(traces), TRACE_BATCH):
        group = traces[offset:offset + TRACE_BATCH]
        group_spans = spans[offset * spans_per_trace:(offset + TRACE_BATCH) * spans_per_trace]
        for copy in (0, 1):
            for first in range(0, len(group_spans), SPAN_BATCH):
                _post(http, "spans", [pair[copy] for pair in group_spans[first:first + SPAN_BATCH]])
                requests += 1
            _post(http, "traces", [pair[copy] for pair in group])
            requests += 1
    return time.perf_counter() - started, requests


def _search(http: httpx.Client, plural: str, body: dict) -> list[dict]:
    response = http.post(f"/v1/private/{plural}/search", json=body)
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line]


def _tag_body(tag: str) -> dict:
    return {"project_name": PROJECT, "filters": [{"field": "tags", "operator": "contains", "key": "", "value": tag}],
            "limit": 10, "truncate": True}


def _time_http(http: httpx.Client, tags: list[str], trace_ids: list[str], repeats: int, per_trace: int) -> dict:
    """Tag searches (a whole tag, a 6-character piece of one, a 2-character needle) and span searches."""
    timings: dict[str, list[float]] = {"tag_search": [], "tag_piece": [], "tag_short": [], "search_spans": []}
    for k in range(repeats):
        tag = tags[(k * 37) % len(tags)]
        for name, needle, hits in (("tag_search", tag, 1), ("tag_piece", tag[7:13], None),
                                   ("tag_short", "9a", None)):
            t0 = time.perf_counter()
            found = _search(http, "traces", _tag_body(needle))
            timings[name].append(time.perf_counter() - t0)
            assert all(any(needle in t for t in item["tags"]) for item in found), found
            assert hits is None or (len(found) == hits and tag in found[0]["tags"]), found
        trace_id = trace_ids[(k * 53) % len(trace_ids)]
        t0 = time.perf_counter()
        spans = _search(http, "spans", {"project_name": PROJECT, "trace_id": trace_id, "limit": 1000})
        timings["search_spans"].append(time.perf_counter() - t0)
        assert len(spans) == per_trace, len(spans)
    return {name: _percentiles(samples) for name, samples in timings.items()}


def _time_sdk(api_url: str, token: str, tags: list[str], trace_ids: list[str], repeats: int, per_trace: int) -> dict:
    for name, value in QUIET_SDK_ENV.items():
        os.environ.setdefault(name, value)
    t0 = time.perf_counter()
    import opik

    import_s = time.perf_counter() - t0
    client = opik.Opik(host=api_url, workspace="default", api_key=token, project_name=PROJECT)
    tag_times, span_times = [], []
    try:
        for k in range(repeats):
            tag = tags[(k * 41) % len(tags)]
            t0 = time.perf_counter()
            found = client.search_traces(project_name=PROJECT, filter_string=f'tags contains "{tag}"', max_results=10)
            tag_times.append(time.perf_counter() - t0)
            assert len(found) == 1
            trace_id = trace_ids[(k * 59) % len(trace_ids)]
            t0 = time.perf_counter()
            spans = client.search_spans(project_name=PROJECT, trace_id=trace_id)
            span_times.append(time.perf_counter() - t0)
            assert len(spans) == per_trace
    finally:
        client.end()
    return {"import_opik_s": round(import_s, 2), "tag_search": _percentiles(tag_times),
            "search_spans": _percentiles(span_times)}


def harness_run(n: int, jobs: int, profile: bool) -> int:
    """Store CPU per case while ``obai-e2e run`` drives N instant cases against it (see the module doc)."""
    import cProfile
    import io
    import pstats
    import re
    import subprocess
    import threading

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_peers import write_inputs
    from obai_e2e.tracestore import daemon, server

    lock = threading.Lock()
    routes: dict[str, list[float]] = {}
    profiles: list[cProfile.Profile] = []
    dispatch = server.Handler._dispatch

    def measured(handler: server.Handler) -> None:
        key = re.sub(r"[0-9a-f-]{36}", "ID", f"{handler.command} {handler.path.split('?')[0]}")
        started = time.thread_time()
        prof = cProfile.Profile(time.thread_time) if profile else None
        if prof is not None:
            prof.enable()
        try:
            dispatch(handler)
        finally:
            if prof is not None:
                prof.disable()
            with lock:
                routes.setdefault(key, []).append(time.thread_time() - started)
                if prof is not None:
                    profiles.append(prof)

    for name in ("do_GET", "do_POST", "do_PATCH", "do_PUT", "do_DELETE", "do_HEAD"):
        setattr(server.Handler, name, measured)
    with tempfile.TemporaryDirectory(prefix="bench-store-harness-") as tmp:
        root = Path(tmp)
        ready = threading.Event()
        threading.Thread(target=daemon.serve, kwargs={"store_dir": root / "store", "on_ready": lambda _s: ready.set()},
                         daemon=True).start()
        ready.wait(30)
        cases = write_inputs(root, n)["dir"]
        env = {**os.environ, "OBAI_TRACE_STORE_DIR": str(root / "store"), "OBAI_E2E_RUNS": str(root / "runs")}
        env.pop("OBAI_TRACE_TAG", None)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "obai_e2e", "run", "--target", str(cases / "target.yaml"),
                               "--cases", str(cases / "cases.yaml"), "--jobs", str(jobs)],
                              env=env, cwd=cases, capture_output=True, text=True)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        # The store serves on a daemon thread of this process (daemon.stop would end this process): it ends with it.
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return done.returncode
    result = {"cases": n, "jobs": jobs, "store_cpu_ms_per_case": round(cpu * 1000 / n, 2),
              "wall_s": round(wall, 1), "load_average": round(os.getloadavg()[0], 1), "profiled": profile,
              "routes": {key: {"requests": len(times), "cpu_ms_each": round(sum(times) * 1000 / len(times), 3),
                               "cpu_ms_per_case": round(sum(times) * 1000 / n, 3)}
                         for key, times in sorted(routes.items(), key=lambda kv: -sum(kv[1]))}}
    print(f"store CPU {result['store_cpu_ms_per_case']} ms per case ({n} cases, -j{jobs}, load "
          f"{result['load_average']}{', profiled' if profile else ''})")
    for key, figures in result["routes"].items():
        print(f"  {key:48s} {figures['requests']:6d} x {figures['cpu_ms_each']:.3f} ms = "
              f"{figures['cpu_ms_per_case']:.3f} ms per case")
    if profiles:
        stats = pstats.Stats(profiles[0])
        for prof in profiles[1:]:
            stats.add(prof)
        text = io.StringIO()
        stats.stream = text
        stats.sort_stats("tottime").print_stats(25)
        print(text.getvalue())
    print(json.dumps(result, sort_keys=True))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", type=int, default=None, metavar="N",
                        help="store CPU per case under `obai-e2e run` on N instant cases (see above)")
    parser.add_argument("--jobs", type=int, default=1, help="with --harness: units at a time")
    parser.add_argument("--profile", action="store_true", help="with --harness: cProfile the request handling")
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--spans-per-trace", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--no-sdk", action="store_true", help="skip the timings through the opik SDK")
    args = parser.parse_args()
    if args.harness is not None:
        return harness_run(args.harness, args.jobs, args.profile)

    results: dict = {"traces": args.traces, "spans": args.traces * args.spans_per_trace, "repeats": args.repeats}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        store_dir = Path(tmp)
        t0 = time.perf_counter()
        info = ensure_running(store_dir)
        results["start_s"] = round(time.perf_counter() - t0, 3)
        results["rss_idle_mib"] = round((_rss_kib(info.pid, "VmRSS") or 0) / 1024, 1)
        try:
            traces, spans, tags = _make_corpus(args.traces, args.spans_per_trace)
            trace_ids = [start["id"] for start, _ in traces]
            with httpx.Client(base_url=info.api_url, trust_env=False, timeout=120,
                              headers={"Authorization": info.token}) as http:
                ingest_s, requests = _ingest(http, traces, spans, args.spans_per_trace)
                entities = 2 * (len(traces) + len(spans))
                results["ingest"] = {"wall_s": round(ingest_s, 3), "requests": requests, "entity_posts": entities,
                                     "posts_per_s": round(entities / ingest_s)}
                results["http"] = _time_http(http, tags, trace_ids, args.repeats, args.spans_per_trace)
            if not args.no_sdk:
                results["sdk"] = _time_sdk(info.api_url, info.token, tags, trace_ids, args.repeats,
                                           args.spans_per_trace)
            results["rss_peak_mib"] = round((_rss_kib(info.pid, "VmHWM") or 0) / 1024, 1)
            results["db_mib"] = round(sum(f.stat().st_size for f in store_dir.glob("traces.sqlite3*")) / 2**20, 1)

            t0 = time.perf_counter()
            stop(store_dir)
            stopped = time.perf_counter()
            info = ensure_running(store_dir)
            started = time.perf_counter()
            # Building an httpx client costs ~40 ms of TLS set-up; that is not the store's time.
            with httpx.Client(base_url=info.api_url, trust_env=False, timeout=120,
                              headers={"Authorization": info.token}) as http:
                connected = time.perf_counter()
                found = _search(http, "traces", _tag_body(tags[len(tags) // 2]))
                searched = time.perf_counter()
            assert len(found) == 1
            results["restart"] = {"stop_s": round(stopped - t0, 3), "start_s": round(started - stopped, 3),
                                  "first_search_ms": round((searched - connected) * 1000, 2),
                                  "total_s": round(searched - t0 - (connected - started), 3)}
            results["rss_after_restart_mib"] = round((_rss_kib(info.pid, "VmHWM") or 0) / 1024, 1)
        finally:
            stop(store_dir)

    http_r = results["http"]
    print(f"store: {results['traces']} traces x {args.spans_per_trace} spans (start {results['start_s']} s, "
          f"idle RSS {results['rss_idle_mib']} MiB)")
    ing = results["ingest"]
    print(f"ingest: {ing['entity_posts']} entity posts in {ing['requests']} gzip batches: {ing['wall_s']} s "
          f"({ing['posts_per_s']}/s)")
    print(f"tag search over HTTP (1 hit): median {http_r['tag_search']['median_ms']} ms, "
          f"p95 {http_r['tag_search']['p95_ms']} ms")
    print(f"tag piece (6 chars, 1 hit): median {http_r['tag_piece']['median_ms']} ms, "
          f"p95 {http_r['tag_piece']['p95_ms']} ms; 2-char needle (limit 10): median "
          f"{http_r['tag_short']['median_ms']} ms, p95 {http_r['tag_short']['p95_ms']} ms")
    print(f"span search over HTTP ({args.spans_per_trace} spans): median {http_r['search_spans']['median_ms']} ms, "
          f"p95 {http_r['search_spans']['p95_ms']} ms")
    if "sdk" in results:
        sdk = results["sdk"]
        print(f"through the SDK: search_traces median {sdk['tag_search']['median_ms']} ms "
              f"(p95 {sdk['tag_search']['p95_ms']}), search_spans median {sdk['search_spans']['median_ms']} ms "
              f"(p95 {sdk['search_spans']['p95_ms']}); import opik {sdk['import_opik_s']} s")
    rs = results["restart"]
    print(f"restart: stop {rs['stop_s']} s, start {rs['start_s']} s, first search {rs['first_search_ms']} ms "
          f"(total {rs['total_s']} s)")
    print(f"server peak RSS {results['rss_peak_mib']} MiB (after restart {results['rss_after_restart_mib']} MiB); "
          f"database {results['db_mib']} MiB")
    print(json.dumps(results, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
