"""Record a trace that was PATCHed after its turn ended, as the harness reads it: ``data/patched_after_turn.json``.

    uv run python tests/trace/record_patched.py

Against a temporary local trace store (which answers as Opik does and stamps ``last_updated_at``
when it applies a PATCH, as Opik does), through the real opik SDK: a turn writes a hub trace with
a guardrail and a specialist span and ends; the harness reads it (``trace.resolve.fetch``); a
second later the specialist span's output is PATCHed (what a later turn holding an unscoped key
can do); the harness reads it again. Kept: the turn's end and both reads, ids as recorded. Prints
the file's path.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "data" / "patched_after_turn.json"
PATCH_AFTER_S = 1.2


def main() -> int:
    from obai_e2e.base.clock import iso, utc_now
    from obai_e2e.trace.backend import Backend
    from obai_e2e.trace.resolve import fetch
    from obai_e2e.tracestore import daemon

    with tempfile.TemporaryDirectory() as folder:
        info = daemon.ensure_running(Path(folder))
        try:
            os.environ.update(OPIK_URL_OVERRIDE=info.api_url, OPIK_API_KEY=info.token, OPIK_WORKSPACE="default",
                              OPIK_PROJECT_NAME="patched-after-turn", HOME=folder)
            import httpx
            import opik

            writer = opik.Opik(project_name="patched-after-turn", host=info.api_url, workspace="default")
            trace = writer.trace(name="hub", input={"query": "What is the latest price of AAPL?"},
                                 output={"response": "AAPL last closed at 238.41."})
            guard = writer.span(trace_id=trace.id, name="guardrail", type="guardrail", input={"query": "AAPL?"},
                                output={"allowed": True})
            guard.end()
            tool = writer.span(trace_id=trace.id, name="market_data_analysis", type="tool",
                               input={"request": "latest close of AAPL"}, output={"content": "Last close: 238.41"})
            tool.end()
            trace.end()
            writer.flush()
            ended_at = iso(utc_now())  # the turn ends once its writes are flushed
            backend = Backend(kind="opik", project="patched-after-turn", api_url=info.api_url, sdk_env={})
            before = fetch(backend, trace.id, deadline_s=5.0)
            time.sleep(PATCH_AFTER_S)
            httpx.patch(f"{info.api_url}/v1/private/spans/{tool.id}", headers={"authorization": info.token},
                        json={"project_name": "patched-after-turn", "trace_id": trace.id,
                              "output": {"content": "Last close: 999.99"}}).raise_for_status()
            after = fetch(backend, trace.id, deadline_s=0.0)
        finally:
            daemon.stop(Path(folder))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"turn_ended_at": ended_at, "patched_span": tool.id, "patched_after_s": PATCH_AFTER_S,
                               "before": {"trace": before.trace, "spans": before.spans},
                               "after": {"trace": after.trace, "spans": after.spans}},
                              indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
