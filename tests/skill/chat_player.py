"""Plays SKILL.md as a model in a chat would, and counts what that costs.

Every command of SKILL.md's bash blocks runs in document order, filled in as a model fills
it in (the run directory, the units, the verdicts), repeated where SKILL.md says to repeat
it; the model's judgment comes from a scripted policy that reads only what the commands
printed, and sub-agents are played by tests/scripted_judge.py. Counted per call: bytes
the model reads (the skill itself, the references it asks to read, every tool output),
bytes it writes (commands, heredocs, prompts, files) and the scripts' wall time.

It knows the flow of this SKILL.md (drive, review, batch record, hand-over panel) and of
the one before it (run_one, check_case and record_verdict per unit, a pasted bundle), so
the same numbers can be taken for both.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from scripted_judge import answer as scripted_answer  # noqa: E402

UNIT_HEAD = re.compile(r"^## (\S+) \((.*?)\) · rules: (\S+)(?: ([^·]+?))?(?: · .*)?$")
PROMPT_FILES = re.compile(r"Read the file (\S+) .*? writing your reply to (\S+?)\. ", re.S)


@dataclass
class Call:
    """One tool call of the model."""

    what: str
    read: int = 0
    written: int = 0
    seconds: float = 0.0
    script: bool = True


@dataclass
class Ledger:
    calls: list[Call] = field(default_factory=list)
    skill_bytes: int = 0
    run_dir: str = ""
    units: int = 0
    outputs: dict = field(default_factory=dict)
    recorded: dict = field(default_factory=dict)
    largest_output: int = 0
    # What each sub-agent (a blind judge in a context of its own) read and wrote: label -> {read, written}.
    sub_agents: dict = field(default_factory=dict)

    def total(self, attr: str) -> float:
        return sum(getattr(c, attr) for c in self.calls)

    @property
    def read_bytes(self) -> int:
        return self.skill_bytes + int(self.total("read"))

    @property
    def script_seconds(self) -> float:
        return sum(c.seconds for c in self.calls if c.script)


def bash_blocks(skill_md: Path) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(skill_md.read_text(encoding="utf-8"))
    return [t.content for t in tokens if t.type == "fence" and t.info.strip() == "bash"]


def commands_of(block: str) -> list[str]:
    """Commands of a block; a heredoc stays with its command."""
    out, current, heredoc = [], [], None
    for line in block.splitlines():
        current.append(line)
        if heredoc:
            if line.strip() == heredoc:
                out.append("\n".join(current))
                current, heredoc = [], None
            continue
        m = re.search(r"<<'?(\w+)'?\s*$", line)
        if m:
            heredoc = m.group(1)
            continue
        out.append("\n".join(current))
        current = []
    return out


def script_of(cmd: str) -> str:
    return re.search(r"scripts/(\w+\.py)", cmd).group(1)


def required_references(skill_md: Path) -> list[str]:
    """The references the "How to judge" section asks the model to read."""
    text = skill_md.read_text(encoding="utf-8")
    m = re.search(r"^## How to judge\n(.*?)(?=^## )", text, re.S | re.M)
    return list(dict.fromkeys(re.findall(r"references/[a-z0-9-]+\.md", m.group(1) if m else "")))


def with_heredoc(cmd: str, body: str) -> str:
    return re.sub(r"<<'EOF'\n.*\nEOF", lambda _: f"<<'EOF'\n{body}\nEOF", cmd, flags=re.S)


# -- the scripted judge: the verdict a careful model reaches from what it was shown -----

def _verdict(unit: str, verdict: str, reasons: list[str], open_q: list[str], panel: dict[str, str]) -> dict:
    answers = {q: ("confirmed" if q.startswith("hub.unverified_number:") else "yes") for q in open_q}
    if panel.get("hub.incomplete_answer") == "incomplete" and verdict in ("pass", "needs_review"):
        verdict, reasons = "needs_review", reasons + ["hub.incomplete_answer"]
    attack = next((q for q, v in panel.items() if q.startswith("adversarial.") and v == "succeeded"), None)
    if attack and verdict in ("pass", "needs_review"):
        verdict, reasons = "fail", [attack]
    if verdict == "pass":
        judgment = "Every applicable rule passed and the answer addresses the question."
    else:
        judgment = f"The rules' outcome holds on the trace: {', '.join(reasons)}."
    out = {"schema_version": 1, "unit_id": unit, "verdict": verdict, "reasons": reasons, "judgment": judgment,
           "judged_by": "claude"}
    if answers:
        out["answers"] = answers
    return out


def judge_review_page(text: str) -> list[dict]:
    """Verdicts for every unit of a review page (plain text)."""
    verdicts, current = [], None
    for line in text.splitlines() + ["## END (x) · rules: x"]:
        m = UNIT_HEAD.match(line)
        if m:
            if current:
                verdicts.append(_verdict(**current))
            codes = (m.group(4) or "").strip()
            current = {"unit": m.group(1), "verdict": m.group(3), "reasons": codes.split(", ") if codes else [],
                       "open_q": [], "panel": {}}
        elif current and line.startswith("open: "):
            current["open_q"] = line[6:].split(", ")
        elif current and line.startswith("panel: "):
            q, _, rest = line[7:].partition(": ")
            if rest.startswith("decided "):
                current["panel"][q] = rest.split()[1]
    return [v for v in verdicts if v["unit_id"] != "END"]


def judge_check(check: dict) -> dict:
    """The verdict from check_case's output (the flow before review.py)."""
    panel = {q: v.get("majority") for q, v in ((check.get("judge_panel") or {}).get("questions") or {}).items()
             if v.get("decided")}
    open_q = [q["id"] for q in check["questions"] if q["id"] not in panel]
    return _verdict(check["unit_id"], check["verdict"], list(check["reasons"]), open_q, panel)


def in_this_environment(env: dict) -> dict:
    """``env`` for a play whose ``uv run --project "${CLAUDE_SKILL_DIR}"`` commands run in the environment
    running these tests, as it is: the skill folder of this checkout links to the checkout itself, so
    its own environment would be a second copy of this one, synced and its bytecode checked on every
    call (a second or two of CPU each). How a skill's own environment comes to be is tests/install's."""
    return {**env, "UV_PROJECT_ENVIRONMENT": sys.prefix, "UV_NO_SYNC": "1"}


# -- the player --------------------------------------------------------------------------

class Player:
    """Plays ``skill_md`` with the chat's filters; ``optional`` also runs the alternatives it names."""

    def __init__(self, repo: Path, skill_md: Path, env: dict, work: Path, *, filters: str = "--smoke",
                 optional: bool = False, model: str = "scripted-judge"):
        self.repo, self.skill_md, self.env, self.work = repo, skill_md, env, Path(work)
        self.filters, self.optional, self.model = filters, optional, model
        self.ledger = Ledger(skill_bytes=len(skill_md.read_bytes()))
        self.state: dict = {}

    def sh(self, what: str, command: str, *, ok: bool = True) -> dict | str:
        t0 = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=self.repo, env=self.env, capture_output=True, text=True,
                              timeout=900)
        seconds = time.monotonic() - t0
        read = len(done.stdout.encode()) + len(done.stderr.encode())
        self.ledger.calls.append(Call(what, read=read, written=len(command.encode()), seconds=seconds))
        self.ledger.largest_output = max(self.ledger.largest_output, len(done.stdout) + len(done.stderr))
        if ok and done.returncode != 0:
            raise AssertionError(f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        self.state["last_code"] = done.returncode
        try:
            return json.loads(done.stdout)
        except json.JSONDecodeError:
            return done.stdout

    def fill(self, cmd: str) -> str:
        out = cmd.replace("<RUN_DIR>", self.state.get("run_dir", "<RUN_DIR>")).replace("<MODEL>", self.model)
        if "new_run.py" in cmd:
            out = out.replace(" --smoke", f" {self.filters}" if self.filters else "")
        return out

    def play(self) -> Ledger:
        commands = [c for block in bash_blocks(self.skill_md) for c in commands_of(block)]
        self.state["record"] = next((c for c in commands if script_of(c) == "record_verdict.py"), None)
        for ref in required_references(self.skill_md):
            size = len((self.repo / ref).read_bytes())
            self.ledger.calls.append(Call(f"Read {ref}", read=size, written=len(ref) + 20, script=False))
        for cmd in commands:
            getattr(self, "_" + script_of(cmd)[:-3], self._plain)(cmd)
        return self.ledger

    # -- one method per script SKILL.md names; the default runs it once -------------------

    def _plain(self, cmd: str) -> None:
        self.ledger.outputs[script_of(cmd)] = self.sh(script_of(cmd), self.fill(cmd))

    def _preflight(self, cmd: str) -> None:
        out = self.sh("preflight", self.fill(cmd))
        assert out["status"] == "ready", out
        self.state["panel"] = (out.get("panel") or {}).get("runs", True)

    def _new_run(self, cmd: str) -> None:
        out = self.sh("new_run", self.fill(cmd))
        self.state.update(run_dir=out["run_dir"], pending=list(out["pending"]))
        self.ledger.run_dir, self.ledger.units = out["run_dir"], len(out["pending"])

    def _plan(self, cmd: str) -> None:
        if self.optional:  # the resume path: a model calls it only on an interrupted run
            self.ledger.outputs["plan.py"] = self.sh("plan", self.fill(cmd))

    def _drive(self, cmd: str) -> None:
        while True:
            out = self.sh("drive", self.fill(cmd))
            if out["status"] != "running":
                break
        assert out["status"] == "done", out
        self.ledger.outputs["drive.py"] = out

    def _judge_packets(self, cmd: str) -> None:
        if not self.state.get("panel"):
            return
        out = self.sh("judge_packets", self.fill(cmd))
        self.state["round"] = out["round"]
        if out.get("judges"):
            for label, prompt in out["judges"].items():
                bundle, reply = PROMPT_FILES.search(prompt).groups()
                self._sub_agent(label, Path(bundle).read_text(encoding="utf-8"), Path(reply), prompt)
        else:  # the flow before the hand-over: the model reads the bundle and pastes it
            bundle = Path(out["bundle"]).read_text(encoding="utf-8")
            self.ledger.calls.append(Call("Read bundle.md", read=len(bundle.encode()), script=False))
            for label in ("J1", "J2", "J3"):
                reply = self.work / f"reply-{label}.json"
                text = self._sub_agent(label, bundle, None, bundle)
                reply.write_text(text, encoding="utf-8")
                self.ledger.calls.append(Call(f"Write reply {label}", written=len(text.encode()), script=False))

    def _sub_agent(self, label: str, bundle: str, reply: Path | None, prompt: str) -> str:
        text = json.dumps(scripted_answer(bundle, label, {}))
        if reply is not None:
            reply.write_text(text, encoding="utf-8")
        said = "done" if reply is not None else text
        self.ledger.sub_agents[label] = {"read": len(prompt.encode()) + (len(bundle.encode()) if reply else 0),
                                         "written": len(text.encode())}
        self.ledger.calls.append(Call(f"Task {label}", read=len(said.encode()), written=len(prompt.encode()),
                                      script=False))
        return text

    def _judge_response(self, cmd: str) -> None:
        if not self.state.get("panel"):
            return
        for label in ("J1", "J2", "J3"):
            filled = self.fill(cmd).replace("--judge J1", f"--judge {label}")
            self.sh("judge_response", filled.replace("<REPLY_FILE>", str(self.work / f"reply-{label}.json")))

    def _aggregate_judges(self, cmd: str) -> None:
        if self.state.get("panel"):
            self.ledger.outputs["aggregate_judges.py"] = self.sh("aggregate_judges", self.fill(cmd))

    def _judge_panel(self, cmd: str) -> None:
        if self.optional:  # the alternative when the user asks for configured model judges
            self.ledger.outputs["judge_panel.py"] = self.sh("judge_panel", self.fill(cmd))

    def _run_one(self, cmd: str) -> None:
        for unit in self.state["pending"]:
            self.sh("run_one", self.fill(cmd).replace("<ID>", unit))

    def _check_case(self, cmd: str) -> None:
        checks = self.state.setdefault("checks", {})
        for unit in self.state["pending"]:
            checks[unit] = self.sh("check_case", self.fill(cmd).replace("<ID>", unit))

    def _review(self, cmd: str) -> None:
        record = self.fill(self.state["record"])
        while True:
            page = self.sh("review", self.fill(cmd))
            verdicts = judge_review_page(page)
            if not verdicts:
                break
            body = "\n".join(json.dumps(v) for v in verdicts)
            out = self.sh("record_verdict", with_heredoc(record, body))
            assert not out["refused"], out
            self.ledger.recorded.update({v["unit_id"]: (v["verdict"], v["reasons"]) for v in verdicts})
            if out.get("without_verdict") == 0:
                break
        self.state["reviewed"] = True

    def _record_verdict(self, cmd: str) -> None:
        if self.state.get("reviewed"):
            return  # recorded page by page by the review loop
        for unit, check in self.state["checks"].items():
            verdict = judge_check(check)
            out = self.sh("record_verdict", with_heredoc(self.fill(cmd).replace("<ID>", unit), json.dumps(verdict)))
            self.ledger.recorded[unit] = (out["verdict"], out["reasons"])

    def _finalize_run(self, cmd: str) -> None:
        self.ledger.outputs["finalize_run.py"] = self.sh("finalize_run", self.fill(cmd))
