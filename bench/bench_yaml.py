"""How long reading a large cases file takes, and what hostile YAML costs before it is refused.

  uv run python bench/bench_yaml.py [--cases 10000] [--repeat 5]

Writes a cases file of N cases (built from the bundled ones, ids made unique) and a few
hostile files into a temporary folder, then times:
  parse       yamlio.load_yaml alone (one parse, line map, checks)
  load_cases  the whole load: one parse, holdout mark, schema, semantic checks, Case records
  hostile     each hostile file until it is refused (alias bomb, deep nesting, size limit)
Prints figures as text and one JSON line at the end (medians, seconds; peak RSS in MB).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from obai_e2e.base import yamlio  # noqa: E402
from obai_e2e.base.errors import ConfigError  # noqa: E402
from obai_e2e.config.cases import load_cases  # noqa: E402
from obai_e2e.config.target import load_target_config  # noqa: E402


def big_cases_text(n: int) -> str:
    bundled = yaml.safe_load((REPO / "cases" / "cases.yaml").read_text(encoding="utf-8"))["cases"]
    cases = []
    for i in range(n):
        case = dict(bundled[i % len(bundled)])
        case["id"] = f"{case['id']}-{i}"
        cases.append(case)
    return yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False, allow_unicode=True)


def hostile_texts() -> dict[str, str]:
    laughs = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        laughs.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return {
        "alias_bomb": "\n".join(laughs) + "\n",
        "deep_flow": "x: " + "[" * 900 + "]" * 900 + "\n",
        "deep_block": "x:\n" + "".join("  " * (d + 1) + f"k{d}:\n" for d in range(200)) + "  " * 201 + "v\n",
    }


def timed(fn, repeat: int) -> dict:
    """Median wall and CPU seconds of ``repeat`` calls (CPU is steadier on a busy machine)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"wall_s": round(statistics.median(wall), 3), "cpu_s": round(statistics.median(cpu), 3)}


def refused(path: Path) -> str:
    try:
        yamlio.load_yaml(path)
    except ConfigError as exc:
        return str(exc)[:120]
    return "accepted"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    config = load_target_config()
    v = config.vocabulary
    out: dict = {"cases": args.cases, "libyaml": yamlio.LIBYAML}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.yaml"
        path.write_text(big_cases_text(args.cases), encoding="utf-8")
        out["file_mb"] = round(path.stat().st_size / 1e6, 2)
        v_args = dict(specialists=v.specialists, strategy=v.strategy_specialist, options=v.options_specialist)
        out["parse"] = timed(lambda: yamlio.load_yaml(path), args.repeat)
        out["load_cases"] = timed(lambda: load_cases(path, **v_args), args.repeat)
        print(f"{args.cases} cases, {out['file_mb']} MB, libyaml={out['libyaml']} (medians of {args.repeat})")
        for key in ("parse", "load_cases"):
            print(f"  {key:<11} wall {out[key]['wall_s']:.3f} s  cpu {out[key]['cpu_s']:.3f} s")
        out["hostile"] = {}
        for name, text in hostile_texts().items():
            hp = Path(tmp) / f"{name}.yaml"
            hp.write_text(text, encoding="utf-8")
            t0 = time.perf_counter()
            message = refused(hp)
            took = time.perf_counter() - t0
            out["hostile"][name] = {"s": round(took, 4), "message": message}
            print(f"  {name:<11} {took:.4f} s: {message}")
        big = Path(tmp) / "huge.yaml"
        with big.open("w", encoding="utf-8") as fh:
            fh.write("version: 1\ncases:\n")
            line = "  - {id: X, feature: f, query: '" + "x" * 1000 + "'}\n"
            for _ in range(yamlio.max_bytes() // len(line) + 2):
                fh.write(line)
        t0 = time.perf_counter()
        message = refused(big)
        took = time.perf_counter() - t0
        out["hostile"]["over_size_limit"] = {"s": round(took, 4), "message": message}
        print(f"  {'too large':<11} {took:.4f} s: {message}")
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(f"  peak RSS    {out['peak_rss_mb']} MB")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
