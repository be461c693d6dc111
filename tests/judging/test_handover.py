"""The panel's hand-over by file, on the real run directory: each judge reads one file that holds
nothing but the blind bundle, writes its reply beside it, and sees nothing of the run or of another judge."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from obai_e2e.base.errors import UsageError
from obai_e2e.judge.panel.aggregate import aggregate_round
from obai_e2e.judge.panel.handover import BUNDLE, MANIFEST, REPLY, collect, hand_over, note
from obai_e2e.judge.panel.responses import load_responses
from obai_e2e.judge.panel.rounds import load_round

from .helpers import make_round, reply
from .test_packets import FORBIDDEN_KEYS, _json_blocks, _walk

PROMPT_PATHS = re.compile(r"Read the file (\S+) \(that file only, nothing else\) .* writing your reply to (\S+)\. ")


@pytest.fixture
def handed(run, config_cases, tmp_path, monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    rnd = make_round(run, *config_cases)
    return run, rnd, hand_over(run, "r1")


def test_each_judge_gets_one_folder_of_its_own_holding_only_the_bundle(handed, tmp_path):
    run, rnd, prompts = handed
    assert sorted(prompts) == ["J1", "J2", "J3"]
    bundle = (rnd.dir / "bundle.md").read_text(encoding="utf-8")
    folders = set()
    for label, prompt in prompts.items():
        path, reply_path = (Path(p) for p in PROMPT_PATHS.search(prompt).groups())
        folder = path.parent
        folders.add(folder)
        assert path.name == BUNDLE and reply_path == folder / REPLY
        assert re.fullmatch(r"[0-9a-f]{16}", folder.name) and folder.parent == tmp_path / "runs" / ".judges"
        assert not folder.is_relative_to(run)
        assert [p.name for p in folder.iterdir()] == [BUNDLE]
        text = path.read_text(encoding="utf-8")
        assert text == note(reply_path) + bundle  # the note, then the round's bundle byte for byte
        assert text.count(str(reply_path)) == 1 and f"{run}/" not in text
    assert len(folders) == 3  # no judge can see where another writes
    manifest = json.loads((rnd.dir / MANIFEST).read_text())
    assert {Path(f) for f in manifest["judges"].values()} == folders


def test_nothing_handed_over_names_the_run_a_unit_the_round_or_another_judge(handed):
    run, rnd, prompts = handed
    meta = json.loads((run / "run.json").read_text())
    # every file name of the run directory but the judging round's own (the hand-over file is a bundle.md)
    names = {p.name for p in run.rglob("*") if "." in p.name and "judging" not in p.parts}
    units = {uid: json.loads((run / f"{uid}.json").read_text()) for uid in meta["units"]}
    forbidden_values = {v for p in units.values() for v in (p["case"]["feature"], *p["case"].get("labels", {}).values())}
    for label, prompt in prompts.items():
        path = Path(PROMPT_PATHS.search(prompt).group(1))
        for text in (prompt, path.read_text(encoding="utf-8")):
            for uid, packet in units.items():
                for token in {uid, packet["case_id"], packet["session"], packet["run_id"]}:
                    assert not re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text), token
            for word in ("mapping", "judging", "aggregate", "baseline", "r1", "J1", "J2", "J3", meta["run_id"]):
                assert not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text), word
            for name in names:
                assert name not in text, name
        for doc in _json_blocks(path.read_text(encoding="utf-8")):
            keys, values = set(), set()
            _walk(doc, keys, values)
            assert not keys & FORBIDDEN_KEYS and not [k for k in keys if k.startswith("expected")]
            assert not values & forbidden_values, values & forbidden_values


def test_replies_are_stored_exactly_as_written_and_their_folders_removed(handed):
    run, rnd, prompts = handed
    paths = {label: Path(PROMPT_PATHS.search(p).group(2)) for label, p in prompts.items()}
    written = {}
    for label in ("J1", "J2"):
        written[label] = reply(rnd, {u: "complete" for u in ("MD1", "S2", "A1", "O2")}, tag=label) + "\n"
        paths[label].write_text(written[label], encoding="utf-8")
    got = collect(run, "r1", "sub-agent-model")
    assert got["J1"]["status"] == got["J2"]["status"] == "stored" and got["J1"]["valid"] == 4 + len(rnd.fixed)
    assert got["J3"] == {"status": "no reply", "expected_at": str(paths["J3"])}
    stored = load_responses(load_round(run, "r1"))
    assert {j: r["raw"] for j, r in stored.items()} == written
    assert all(r["model"] == "sub-agent-model" for r in stored.values())
    assert not paths["J1"].parent.exists() and paths["J3"].parent.exists()
    with pytest.raises(UsageError, match="2 of 3 judge responses"):
        aggregate_round(run, "r1")
    paths["J3"].write_text("this is not JSON", encoding="utf-8")
    again = collect(run, "r1", "sub-agent-model")
    assert again["J1"] == {"status": "stored before"} and again["J3"]["parse_ok"] is False
    assert aggregate_round(run, "r1")["judges"] == ["J1", "J2", "J3"]


def test_a_round_is_handed_over_once(handed):
    run, _, _ = handed
    with pytest.raises(UsageError, match="handed over already"):
        hand_over(run, "r1")


def test_collecting_a_round_that_was_not_handed_over_says_how_to_store_replies(run, config_cases, tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    make_round(run, *config_cases)
    with pytest.raises(UsageError, match="judge-response --file"):
        collect(run, "r1", "m")


def _paths(prompts) -> dict[str, Path]:
    return {label: Path(PROMPT_PATHS.search(p).group(2)) for label, p in prompts.items()}


def test_a_reply_that_is_a_symbolic_link_is_refused_not_followed(handed, tmp_path):
    run, rnd, prompts = handed
    paths = _paths(prompts)
    elsewhere = tmp_path / "forged.json"
    elsewhere.write_text(reply(rnd, {u: "complete" for u in ("MD1", "S2", "A1", "O2")}, tag="J1"), encoding="utf-8")
    paths["J1"].symlink_to(elsewhere)
    paths["J2"].parent.rename(tmp_path / "moved")
    paths["J2"].parent.symlink_to(tmp_path / "moved")  # the folder itself replaced by a link
    (tmp_path / "moved" / REPLY).write_text(elsewhere.read_text(), encoding="utf-8")
    got = collect(run, "r1", "m")
    assert got["J1"]["status"] == "not read" and "is a symbolic link" in got["J1"]["error"]
    assert str(paths["J1"]) in got["J1"]["error"]
    assert got["J2"]["status"] == "not read" and "no longer a plain folder" in got["J2"]["error"]
    assert load_responses(load_round(run, "r1")) == {}  # no vote came in through a link


def test_a_fifo_or_an_oversized_reply_is_refused_without_waiting_or_reading_it(handed):
    import os

    run, rnd, prompts = handed
    paths = _paths(prompts)
    os.mkfifo(paths["J1"])  # no writer: reading it would wait forever
    with open(paths["J2"], "wb") as fh:  # sparse: 400 MB long, nothing of it on disk
        fh.truncate(400 * 1024 * 1024)
    got = collect(run, "r1", "m")
    assert got["J1"]["status"] == "not read" and "FIFO" in got["J1"]["error"]
    assert got["J2"]["status"] == "not read" and "419430400 bytes, more than the 2000000" in got["J2"]["error"]
    assert got["J3"]["status"] == "no reply"
    assert load_responses(load_round(run, "r1")) == {}


def test_judge_response_refuses_a_fifo_or_a_link_given_as_its_file(handed, tmp_path, capsys):
    import os

    from obai_e2e.cli import main

    run, _, _ = handed
    fifo, link = tmp_path / "reply.fifo", tmp_path / "reply.link"
    os.mkfifo(fifo)
    link.symlink_to(run / "run.json")
    for path, words in ((fifo, "is a FIFO"), (link, "is a symbolic link")):
        code = main(["judge-response", "--run-dir", str(run), "--round", "r1", "--judge", "J1", "--model", "m",
                     "--file", str(path)])
        out = json.loads(capsys.readouterr().out)
        assert code == 2 and out["error"] == "unsafe_file" and words in out["message"], out
    assert load_responses(load_round(run, "r1")) == {}
