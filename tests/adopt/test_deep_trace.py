"""``adopt`` on a trace nested 300 levels deep, read back from the local store: pydantic refuses to
serialise it, the harness reads it all the same (a run reads traces the same way) and drafts."""
from __future__ import annotations

import json
import subprocess
import sys

WRITE = r'''
import opik
deep = "x"
for _ in range(300):
    deep = {"a": deep}
c = opik.Opik(project_name="deep-trace")
for i, q in enumerate(("How is Apple trading?", "Write me a poem.")):
    t = c.trace(name="turn", input={"question": q, "deep": deep}, output={"answer": "fine"}, thread_id=f"t{i}")
    t.span(name="guardrail", type="general", input={"question": q}, output={"allowed": i == 0}).end()
    if i == 0:
        t.span(name="quote_lookup", type="tool", input=deep, output={"text": "AAPL closed at 214.55"}).end()
    t.end()
c.flush()
'''


def test_a_300_deep_trace_is_adopted_without_a_traceback(tmp_path, sdk_env, trace_store):
    env = {**sdk_env, "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir), "OBAI_E2E_RUNS": str(tmp_path / "runs")}
    subprocess.run([sys.executable, "-c", WRITE], env=env, check=True, capture_output=True, timeout=300)
    done = subprocess.run([sys.executable, "-m", "obai_e2e", "adopt", "--project", "deep-trace", "--out",
                           str(tmp_path / "draft"), "--command", "agent --session {session} {query}",
                           "--refusal-exit-code", "3"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads(done.stdout)
    assert [r["verdict"] for r in summary["checked"]] == ["pass", "pass"]
    assert (tmp_path / "draft" / "cases.yaml").exists()
