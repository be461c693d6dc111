"""A fast stand-in agent for the scaling benchmark: the demo's trace shape, no opik import.

It answers a price question and writes its trace straight to the local store's batch
endpoints (the same JSON the SDK sends), so a turn costs a Python start and one HTTP
round trip instead of the seconds the SDK import takes. Benchmarks only.
"""
from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.request
from datetime import datetime, timezone


def uuid7() -> str:
    ms = int(time.time() * 1000)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ts() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def post(url: str, body: dict) -> None:
    headers = {"content-type": "application/json"}
    if os.environ.get("OPIK_API_KEY"):  # the store's token, sent as the SDK sends it
        headers["authorization"] = os.environ["OPIK_API_KEY"]
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    urllib.request.urlopen(req, timeout=10).read()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print("standin-agent 1.0")
        return 0
    # `--session S QUERY`; anything after QUERY (promptfoo's exec: provider adds two JSON
    # arguments) is ignored.
    at = argv.index("--session")
    session, query = argv[at + 1], argv[at + 2]
    api = os.environ["OPIK_URL_OVERRIDE"].rstrip("/")
    project = os.environ.get("OPIK_PROJECT_NAME", "obai-demo")
    tag = os.environ.get("OBAI_TRACE_TAG")
    text = "AAPL (Apple)\nLast close: 238.41 on 2026-04-30\n1-day change: +0.92%"
    answer = "AAPL (Apple) last closed at 238.41 on 2026-04-30 (+0.92% on the day)."
    trace_id, hub_id = uuid7(), uuid7()
    t0 = ts()

    def span(name, kind, inp, out, parent=hub_id):
        return {"id": uuid7(), "project_name": project, "trace_id": trace_id, "parent_span_id": parent,
                "name": name, "type": kind, "start_time": ts(), "end_time": ts(), "input": inp, "output": out,
                "last_updated_at": ts()}

    spans = [
        {**span("hub", "general", {"query": query, "session": session}, {"response": answer}, None), "id": hub_id,
         "start_time": t0},
        span("guardrail", "guardrail", {"query": query}, {"allowed": True, "category": "finance", "reason": "ticker"}),
        span("load_skill", "general", {"skill": "market-data"}, {"loaded": "market-data"}),
        span("market_data_analysis", "tool", {"request": "latest close of AAPL"},
             {"content": [{"type": "text", "text": text}], "isError": False}),
    ]
    trace = {"id": trace_id, "project_name": project, "name": "hub", "start_time": t0, "end_time": ts(),
             "input": {"query": query, "session": session}, "output": {"response": answer, "exit_code": 0},
             "tags": ["standin"] + ([tag] if tag else []), "metadata": {"e2e_tag": tag}, "thread_id": session,
             "last_updated_at": ts()}
    post(f"{api}/v1/private/spans/batch", {"spans": spans})
    post(f"{api}/v1/private/traces/batch", {"traces": [trace]})
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
