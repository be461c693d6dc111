"""Benchmark of trace resolution as the project grows: searches per unit and ms per search.

For each project size (default: 0, 10,000 and 200,000 earlier traces, spread over 30 days),
a fresh store is filled straight through its database, served on loopback, and then each of
``--units`` turns writes its own trace (with a few spans) and is resolved by the harness
through the real opik SDK, in every correlation mode (tag, metadata, time window + input):

- ``bounded``: the harness as it is, every search limited to the turn's time range
  (``from_time`` / ``to_time``, an id range in Opik and in the store);
- ``unbounded``: the same filter without the time range, as resolution searched before.

Per size, mode and variant it prints the searches a unit needed (resolve and fetch) and the
median and p95 milliseconds of one trace search. Last, one JSON line with every figure.

    uv run python bench/bench_resolve.py [--sizes 0,10000,200000] [--units 20]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from obai_e2e.base.clock import iso  # noqa: E402
from obai_e2e.base.opik_env import QUIET_SDK_ENV, local_store_env  # noqa: E402
from obai_e2e.config.target import load_target_config  # noqa: E402
from obai_e2e.trace import resolve as resolving  # noqa: E402
from obai_e2e.trace.backend import Backend  # noqa: E402
from obai_e2e.trace.search import search_traces  # noqa: E402
from obai_e2e.tracestore.db import Store  # noqa: E402
from obai_e2e.tracestore.payloads import SPAN, TRACE, parse_write  # noqa: E402
from obai_e2e.tracestore.server import make_server  # noqa: E402
from obai_e2e.tracestore.timeutil import uuid7_bound  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PROJECT = "bench-resolve"
BATCH = 1000
MODES = ("tag", "metadata", "window")
TOKEN = "bench-token"


def _id_at(moment: datetime) -> str:
    low = uuid.UUID(uuid7_bound(moment, upper=False)).int
    return str(uuid.UUID(int=low | int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)))


def _trace(moment: datetime, tag: str, query: str) -> dict:
    return {"id": _id_at(moment), "project_name": PROJECT, "name": "hub", "start_time": iso(moment),
            "end_time": iso(moment + timedelta(seconds=1)), "tags": [tag], "input": {"query": query},
            "output": {"response": "AAPL closed at 190.50."}, "metadata": {"e2e_tag": tag}}


def _fill(store: Store, size: int) -> float:
    """``size`` earlier traces over the 30 days before now; seconds it took."""
    t0 = time.perf_counter()
    start = datetime.now(timezone.utc) - timedelta(days=30)
    step = timedelta(days=30) / max(size, 1)
    for first in range(0, size, BATCH):
        docs = [parse_write(_trace(start + i * step, f"e2e-{uuid.uuid4().hex}", f"old question {i}"), TRACE, "t")
                for i in range(first, min(size, first + BATCH))]
        store.write(TRACE, docs)
    return time.perf_counter() - t0


def _turn(store: Store, n: int) -> tuple[resolving.TurnKey, str]:
    """One turn's trace and three spans, written now; its key."""
    started = datetime.now(timezone.utc)
    tag = f"e2e-{uuid.uuid4().hex}"
    query = f"What is the latest price of AAPL? (turn {n}, {tag[4:16]})"
    trace = _trace(started, tag, query)
    store.write(TRACE, [parse_write(trace, TRACE, "t")])
    spans = [{"id": _id_at(started), "project_name": PROJECT, "trace_id": trace["id"], "name": f"step{j}",
              "type": "tool", "start_time": iso(started), "end_time": iso(started), "output": {"r": j}}
             for j in range(3)]
    store.write(SPAN, [parse_write(s, SPAN, "s") for s in spans])
    ended = started + timedelta(milliseconds=50)
    return resolving.TurnKey(query=query, started_at=iso(started), ended_at=iso(ended), tag=tag), trace["id"]


def _pct(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"median_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 2)}


def _measure(store: Store, backend: Backend, config, units: int) -> dict:
    _turn(store, -1)
    search_traces(backend, None, limit=1)  # the SDK's first call builds its client: not a search's cost
    out: dict = {}
    for mode in MODES:
        c = dataclasses.replace(config, correlation=dataclasses.replace(
            config.correlation, match=mode if mode != "window" else "none",
            metadata_key="e2e_tag" if mode == "metadata" else None))
        for variant in ("bounded", "unbounded"):
            times: list[float] = []
            searches: list[int] = []
            for n in range(units):
                key, trace_id = _turn(store, n)
                if mode == "window":
                    key = dataclasses.replace(key, tag=None)
                lo, hi = resolving.time_bounds(c, key)
                if variant == "unbounded":
                    lo = hi = None

                def search(fs: str) -> list[dict]:
                    t0 = time.perf_counter()
                    found = search_traces(backend, fs, limit=resolving.MAX_CANDIDATES + 1, from_time=lo, to_time=hi)
                    times.append(time.perf_counter() - t0)
                    return found

                res = resolving.resolve(backend, c, key, search=search)
                assert res.status == resolving.RESOLVED and res.trace_id == trace_id, res
                fetched = resolving.fetch(backend, trace_id, found=res.trace)
                assert fetched.complete and len(fetched.spans) == 3
                searches.append(res.attempts + 1)  # the trace searches, and the one span search of fetch
            out[f"{mode}/{variant}"] = {"searches_per_unit": statistics.mean(searches), **_pct(times)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,10000,200000", help="earlier traces in the project, comma-separated")
    parser.add_argument("--units", type=int, default=20, help="turns resolved per size, mode and variant")
    args = parser.parse_args()
    for name, value in QUIET_SDK_ENV.items():
        os.environ.setdefault(name, value)
    config = load_target_config(REPO / "cases" / "target.yaml")
    config = dataclasses.replace(config, backend=dataclasses.replace(
        config.backend, project=PROJECT, settle_s=0.0, poll_initial_s=0.01, poll_max_s=0.05))
    results: dict = {"units": args.units, "sizes": {}}
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-resolve-") as tmp:
            store = Store(Path(tmp) / "traces.sqlite3")
            fill_s = _fill(store, size)
            server = make_server(store, "127.0.0.1", 0, 20 * 2**20, {"service": "obai-trace-store"}, token=TOKEN)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            api_url = f"http://127.0.0.1:{server.server_address[1]}/api"
            backend = Backend(kind="local", project=PROJECT, api_url=api_url,
                              sdk_env={**local_store_env(api_url, token=TOKEN), "OPIK_PROJECT_NAME": PROJECT})
            try:
                figures = _measure(store, backend, config, args.units)
            finally:
                server.shutdown()
                server.server_close()
                store.close()
        results["sizes"][size] = {"fill_s": round(fill_s, 1), **figures}
        print(f"\nproject of {size:,} earlier traces (filled in {fill_s:.1f} s)")
        print(f"  {'mode':<9} {'variant':<10} {'searches/unit':>13} {'median ms':>10} {'p95 ms':>8}")
        for key, f in figures.items():
            mode, variant = key.split("/")
            print(f"  {mode:<9} {variant:<10} {f['searches_per_unit']:>13.1f} {f['median_ms']:>10.2f} "
                  f"{f['p95_ms']:>8.2f}")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
