"""A run split over three "runners" (separate processes and run folders) and merged equals an unsharded run.

The agent is the tiny hostile one (tests/agents/hostile_agent.py) with an async job: what is
checked is how the harness splits a plan and merges its parts, which no agent's answers change.
The runners work in one checkout of the bundle and the merge in another (the first, moved),
as a CI merge job checked out at another path does. Forged or broken parts are refused by
name, before anything is written.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from obai_e2e.base.errors import MergeRefused
from obai_e2e.base.mdtable import table_rows
from obai_e2e.protocol.seal import KEY_ENV, SEAL, seal
from obai_e2e.report.report_md import COLUMNS
from obai_e2e.report.results import load_results
from obai_e2e.run.merge import check_parts, load_parts
from bundle_copy import bundle_copy

from .conftest import obai_json, obai_json_here
from .hostile_helpers import hostile_target

pytestmark = [pytest.mark.slow, pytest.mark.heavy(11)]

SHARDS = 3
# Part of the smoke suite: sync cases, an async one, a refusal, and a stochastic case's three
# repeats (7 units), so each runner drives a few units and the repeats can land on different runners.
UNITS = ("--id", "MD1,S1,A1,O1,R1")


def runner_env(tmp: Path, name: str, trace_store, home: Path) -> dict:
    env = {**os.environ, "OBAI_E2E_RUNS": str(tmp / name), "OBAI_TRACE_STORE_DIR": str(trace_store.data_dir),
           "OBAI_E2E_HOME": str(home)}
    env.pop("OBAI_DEMO_FAULTS", None)
    return env


def checkout(path: Path) -> Path:
    """The bundle's files a run reads (cases, catalogs, schemas, the skill's text) at another path."""
    return bundle_copy(path)


def outcomes(run_dir: Path) -> dict[str, tuple]:
    """Per unit: verdict, reasons and every rule's status and code (ids and timings left out)."""
    data = load_results(run_dir / "results.json")
    return {u["unit_id"]: (u["case_id"], u["verdict"], tuple(u["reasons"]), u["judged_by"], u["exit_code"],
                           tuple((o["rule"], o["status"], o["code"]) for o in u["rule_outcomes"]))
            for u in data["units"]}


def rows(run_dir: Path) -> list[tuple]:
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    return [(r["ID"], r["Feature"], r["Verdict"], r["Reason"]) for r in table_rows(text, COLUMNS)]


def partitions(run_dir: Path) -> list[dict]:
    suite = json.loads((run_dir / "suite.json").read_text())
    keep = ("labels", "weight", "n", "n_min", "loss", "stddev_between", "se", "status", "by_category")
    return sorted(({k: p.get(k) for k in keep} for p in suite["partitions"]), key=lambda p: json.dumps(p["labels"]))


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, trace_store):
    tmp = tmp_path_factory.mktemp("shards")
    runners = checkout(tmp / "checkout-runners")
    target, _ = hostile_target(runners / "cases", "async")
    parts = []
    for k in range(1, SHARDS + 1):
        code, out, err = obai_json("run", *UNITS, "--target", str(target), "--jobs", "2", "--shard", f"{k}/{SHARDS}",
                                   env=runner_env(tmp, f"runner-{k}", trace_store, runners))
        assert code in (0, 1) and out.get("run_dir"), err[-3000:]
        parts.append(Path(out["run_dir"]))
    recorded = json.loads((parts[0] / "run.json").read_text())
    assert (recorded["target_config"], recorded["cases_file"]) == (f"cases/{target.name}", "cases/cases.yaml")
    # The merge job's checkout is at another path: the runners' one is gone.
    merger = runners.rename(tmp / "checkout-merger")
    target = merger / "cases" / target.name
    merged_env = runner_env(tmp, "merged", trace_store, merger)
    code, merged, err = obai_json_here("merge-runs", *map(str, parts), "--into", str(tmp / "merged" / "run"),
                                       env=merged_env)
    assert code in (0, 1) and merged.get("run_dir"), err[-3000:]
    whole_code, whole, err = obai_json("run", *UNITS, "--target", str(target), "--jobs", "2",
                                       env=runner_env(tmp, "whole", trace_store, merger))
    assert whole_code in (0, 1) and whole.get("run_dir"), err[-3000:]   # 1: the agent's answers fail some rules
    assert code == whole_code                          # the merged run exits as the unsharded one
    return {"tmp": tmp, "parts": parts, "merged": Path(merged["run_dir"]), "whole": Path(whole["run_dir"]), "code": code,
            "env": merged_env}


def test_each_shard_drives_its_own_part_of_one_plan(sharded):
    metas = [json.loads((p / "run.json").read_text()) for p in sharded["parts"]]
    plan_units = metas[0]["shard"]["plan_units"]
    assert len({m["shard"]["plan_sha256"] for m in metas}) == 1
    assert sorted(u for m in metas for u in m["units"]) == sorted(plan_units)
    assert all(not (p / "suite.json").exists() for p in sharded["parts"])   # a part has no loss layer
    [a1] = [json.loads((p / "A1.json").read_text()) for p in sharded["parts"] if (p / "A1.json").exists()]
    assert "Total trades" in a1["followup"]["answer"]      # its runner waited for the job and followed it up


def test_the_merged_run_equals_the_unsharded_one(sharded):
    merged, whole = sharded["merged"], sharded["whole"]
    assert outcomes(merged) == outcomes(whole)
    assert sorted(rows(merged)) == sorted(rows(whole))
    plan_units = json.loads((sharded["parts"][0] / "run.json").read_text())["shard"]["plan_units"]
    assert [r[0] for r in rows(merged)] == plan_units          # rows in plan order
    assert partitions(merged) == partitions(whole)
    for name in ("report.html", "results.junit.xml", "seal.json", "suite.json"):
        assert (merged / name).exists(), name
    m_meta = json.loads((merged / "run.json").read_text())
    assert "shard" not in m_meta and [m["shard"] for m in m_meta["merged_from"]] == ["1/3", "2/3", "3/3"]


def test_the_merged_seal_covers_the_verified_bytes(sharded):
    merged = json.loads((sharded["merged"] / SEAL).read_text())["files"]
    m_meta = json.loads((sharded["merged"] / "run.json").read_text())
    for part, named in zip(sharded["parts"], m_meta["merged_from"]):
        assert named["seal_sha256"] == hashlib.sha256((part / SEAL).read_bytes()).hexdigest()
        sealed = json.loads((part / SEAL).read_text())["files"]
        units = json.loads((part / "run.json").read_text())["units"]
        for name in [f"{u}.json" for u in units] + [f"{u}.verdict.json" for u in units] + \
                [f"traces/{u}.json" for u in units]:
            assert merged[name] == sealed[name], name
        # every part's copy of the run's inputs is the merged run's copy, byte for byte
        part_inputs = json.loads((part / "run.json").read_text())["inputs"]
        assert {r: i["sha256"] for r, i in m_meta["inputs"].items()} == {r: i["sha256"] for r, i in part_inputs.items()}
        assert all(merged[i["file"]] == sealed[i["file"]] == i["sha256"] for i in part_inputs.values())


def test_the_merged_run_has_every_units_trace_pages(sharded):
    def pages(run):
        return sorted(p.name for p in (run / "traces").glob("*.html"))
    assert pages(sharded["merged"]) and pages(sharded["merged"]) == pages(sharded["whole"])
    assert "A1.followup.html" in pages(sharded["merged"])


def test_a_merge_with_nothing_to_compare_fails_on_any_failed_unit_under_new_fail(sharded):
    tmp, env = sharded["tmp"], sharded["env"]
    restored = tmp / "e2e-baseline"
    restored.mkdir()  # the CI cache had nothing to restore
    code, out, err = obai_json_here("merge-runs", *map(str, sharded["parts"]), "--into", str(tmp / "ci" / "run"),
                               "--baseline", str(restored), "--fail-on", "new_fail", env=env)
    failed = load_results(tmp / "ci" / "run" / "results.json")["summary"]["fail"]
    assert failed, "the hostile agent's answers fail some rules"
    assert code == 1 and out["fail_on"]["why"].startswith("--fail-on new_fail: no baseline to compare with"), err


def test_merging_again_changes_nothing(sharded):
    before = {p.name: p.read_bytes() for p in sharded["merged"].iterdir() if p.is_file() and not p.name.startswith(".")}
    code, _, err = obai_json_here("merge-runs", *map(str, sharded["parts"]), "--into", str(sharded["merged"]),
                                  env=sharded["env"])
    assert code == sharded["code"], err[-2000:]
    after = {p.name: p.read_bytes() for p in sharded["merged"].iterdir() if p.is_file() and not p.name.startswith(".")}
    assert after == before


def test_a_missing_or_doubled_shard_or_another_commit_is_refused(sharded):
    tmp, parts, env = sharded["tmp"], sharded["parts"], sharded["env"]
    code, out, _ = obai_json_here("merge-runs", str(parts[0]), str(parts[1]), "--into", str(tmp / "bad1"), env=env)
    assert code == 2 and "shard 3/3 missing" in out["message"]
    code, out, _ = obai_json_here("merge-runs", str(parts[0]), str(parts[0]), str(parts[1]), str(parts[2]),
                             "--into", str(tmp / "bad2"), env=env)
    assert code == 2 and "shard 1/3 given more than once" in out["message"]
    other = tmp / "other-commit"
    shutil.copytree(parts[2], other)
    meta = json.loads((other / "run.json").read_text())
    meta["git_commit"] = "0" * 40
    (other / "run.json").write_text(json.dumps(meta))
    seal_again(other)
    code, out, _ = obai_json_here("merge-runs", str(parts[0]), str(parts[1]), str(other), "--into", str(tmp / "bad3"),
                                  env=env)
    assert code == 2 and "git_commit" in out["message"] and str(other) in out["message"]
    assert not (tmp / "bad1" / "run.json").exists() and not (tmp / "bad3" / "run.json").exists()


# ---------------------------------------------------------------------- parts moved as CI artifacts


def moved_as_artifact(parts: list[Path], into: Path, *, hidden: bool) -> list[Path]:
    """The parts as a CI merge job finds them: under e2e-runs/shard-K/<date>/<time>/ of another folder, dot files
    left out by GitHub's upload-artifact (its default since v4.4) and kept by GitLab's artifacts."""
    moved = []
    for k, part in enumerate(parts, 1):
        dest = into / "e2e-runs" / f"shard-{k}" / part.parent.name / part.name
        shutil.copytree(part, dest, ignore=None if hidden else shutil.ignore_patterns(".*"))
        moved.append(dest)
    return moved


@pytest.mark.parametrize("platform,hidden", [("github", False), ("gitlab", True)])
def test_parts_moved_as_a_platforms_artifact_step_moves_them_merge(sharded, platform, hidden):
    assert any(p.name.startswith(".") for p in sharded["parts"][0].iterdir())  # a part holds dot files (the salt)
    job = sharded["tmp"] / f"{platform}-merge-job"
    moved = moved_as_artifact(sharded["parts"], job, hidden=hidden)
    assert hidden == any(p.name.startswith(".") for p in moved[0].iterdir())
    into = job / "e2e-runs" / "merged" / "run"
    code, out, err = obai_json_here("merge-runs", *map(str, moved), "--into", str(into), "--no-html",
                                    env=sharded["env"])
    assert code == sharded["code"] and out["run_dir"] == str(into), err[-2000:]
    assert outcomes(into) == outcomes(sharded["whole"])


# ---------------------------------------------------------------------- forged parts


def seal_again(run_dir: Path) -> None:
    """What a forger with write access does after editing a finished shard: seal it anew."""
    (run_dir / SEAL).unlink()
    seal(run_dir)


def forge(sharded, name: str) -> tuple[list[Path], Path, list[str]]:
    """The parts with the first one replaced by a copy to forge; (parts, the copy, its units)."""
    copy = sharded["tmp"] / "forged" / name
    shutil.copytree(sharded["parts"][0], copy)
    units = json.loads((copy / "run.json").read_text())["units"]
    assert len(units) >= 2
    return [copy, *sharded["parts"][1:]], copy, units


def refused(parts: list[Path]) -> MergeRefused:
    with pytest.raises(MergeRefused) as caught:
        check_parts(load_parts(parts))
    return caught.value


def edit_verdict(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_a_verdict_flipped_after_sealing_is_refused_by_the_cli(sharded):
    parts, copy, units = forge(sharded, "flipped")
    verdict = copy / f"{units[0]}.verdict.json"
    was = json.loads(verdict.read_text())["verdict"]
    edit_verdict(verdict, verdict="fail" if was == "pass" else "pass", reasons=[])
    into = sharded["tmp"] / "merged-flipped"
    code, out, err = obai_json_here("merge-runs", *map(str, parts), "--into", str(into), env=sharded["env"])
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert (out["error"], out["reason"]) == ("merge_refused", "seal_broken")
    assert f"changed: {verdict.name}" in out["message"] and str(copy) in out["message"]
    assert not into.exists() or not (into / "run.json").exists()


def test_a_packet_linked_to_a_file_outside_is_refused_by_name_by_the_cli(sharded):
    parts, copy, units = forge(sharded, "linked-packet")
    packet = copy / f"{units[0]}.json"
    packet.unlink()
    packet.symlink_to("/etc/hostname")
    code, out, err = obai_json_here("merge-runs", *map(str, parts), "--into", str(sharded["tmp"] / "merged-linked"),
                               env=sharded["env"])
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert out["reason"] == "symlink" and str(packet) in out["message"] and "/etc/hostname" in out["message"]


def test_a_verdict_linked_to_a_forged_file_is_refused_even_when_sealed(sharded):
    parts, copy, units = forge(sharded, "linked-verdict")
    forged = sharded["tmp"] / "forged" / "elsewhere.json"
    verdict = copy / f"{units[0]}.verdict.json"
    forged.write_text(verdict.read_text())
    verdict.unlink()
    verdict.symlink_to(forged)
    seal_again(copy)
    e = refused(parts)
    assert e.reason == "symlink" and e.where == str(copy) and str(verdict) in str(e)


def test_a_half_edited_verdict_is_refused_unless_an_override_says_why(sharded):
    parts, copy, units = forge(sharded, "half-edited")
    verdict = copy / f"{units[0]}.verdict.json"
    mechanical = json.loads(verdict.read_text())["mechanical"]
    flipped = "fail" if mechanical["verdict"] == "pass" else "pass"
    edit_verdict(verdict, verdict=flipped, reasons=["routing.skill_missing"] if flipped == "fail" else [])
    seal_again(copy)
    e = refused(parts)
    assert e.reason == "verdict_disagrees" and e.where == str(verdict) and "no override" in str(e)
    edit_verdict(verdict, override={"rule": "routing.skill_missing", "reason": "the skill loads lazily"})
    seal_again(copy)
    plan_units, _ = check_parts(load_parts(parts))
    assert plan_units == json.loads((copy / "run.json").read_text())["shard"]["plan_units"]


def test_a_record_of_another_unit_is_refused(sharded):
    parts, copy, units = forge(sharded, "swapped")
    first, second = (copy / f"{u}.verdict.json" for u in units[:2])
    text = second.read_text()
    first.write_text(text)
    seal_again(copy)
    e = refused(parts)
    assert e.reason == "unit_mismatch" and f"of {units[1]!r}, not of {units[0]!r}" in str(e)


@pytest.mark.parametrize("damage", ["unsealed", "garbage"])
def test_an_unsealed_or_unreadable_part_is_refused(sharded, damage):
    parts, copy, units = forge(sharded, damage)
    if damage == "unsealed":
        (copy / SEAL).unlink()
    else:
        (copy / f"{units[0]}.json").write_bytes(b'{"unit_id": ')
        seal_again(copy)
    e = refused(parts)
    assert e.reason == ("not_sealed" if damage == "unsealed" else "unreadable"), e


# ---------------------------------------------------------------------- signed seals

SEAL_KEY = "seal-key-of-the-ci-secret-0123456789"


def signed_copies(sharded, name: str) -> list[Path]:
    """Copies of every part, each sealed anew with the key in the environment."""
    out = []
    for k, part in enumerate(sharded["parts"], 1):
        copy = sharded["tmp"] / name / f"part-{k}"
        shutil.copytree(part, copy)
        seal_again(copy)
        out.append(copy)
    return out


def test_with_a_seal_key_only_parts_signed_with_it_are_evidence(sharded, monkeypatch):
    """A checksum list can be written again by whoever edits the files; a signature only by a holder of the key.
    The override that the unsigned merge accepts after a reseal (above) is refused once the key is set."""
    monkeypatch.setenv(KEY_ENV, SEAL_KEY)
    e = refused(list(sharded["parts"]))  # sealed without the key
    assert e.reason == "seal_unsigned" and "carries no signature" in str(e) and e.where == str(sharded["parts"][0])
    signed = signed_copies(sharded, "signed")
    assert all(json.loads((p / SEAL).read_text())["mac"]["alg"] == "hmac-sha256" for p in signed)
    assert check_parts(load_parts(signed))

    units = json.loads((signed[0] / "run.json").read_text())["units"]
    verdict = signed[0] / f"{units[0]}.verdict.json"
    mechanical = json.loads(verdict.read_text())["mechanical"]
    flipped = "fail" if mechanical["verdict"] == "pass" else "pass"
    edit_verdict(verdict, verdict=flipped, reasons=["routing.skill_missing"] if flipped == "fail" else [],
                 override={"rule": "routing.skill_missing", "reason": "forged"})
    monkeypatch.setenv(KEY_ENV, "a key the forger made up, not the secret")
    seal_again(signed[0])
    monkeypatch.setenv(KEY_ENV, SEAL_KEY)
    e = refused(signed)
    assert e.reason == "seal_forged" and "does not match" in str(e)
    monkeypatch.delenv(KEY_ENV)
    seal_again(signed[0])
    monkeypatch.setenv(KEY_ENV, SEAL_KEY)
    assert refused(signed).reason == "seal_unsigned"

    env = {**sharded["env"], KEY_ENV: SEAL_KEY}
    code, out, err = obai_json_here("freeze-audit", "verify", "--run-dir", str(signed[0]), env=env)
    assert code == 6 and (out["clean"], out["signature"]) == (False, "unsigned") and "no signature" in err
    code, out, _ = obai_json_here("freeze-audit", "verify", "--run-dir", str(signed[1]), env=env)
    assert code == 0 and (out["clean"], out["signature"]) == (True, "valid")
    code, out, _ = obai_json_here("freeze-audit", "verify", "--run-dir", str(signed[1]), env=sharded["env"])
    assert code == 0 and out["signature"].startswith("not checked")


def test_a_merge_of_signed_parts_says_so_and_signs_its_own_seal(sharded, monkeypatch):
    env = {**sharded["env"], KEY_ENV: SEAL_KEY}
    monkeypatch.setenv(KEY_ENV, SEAL_KEY)
    signed = signed_copies(sharded, "signed-for-merge")
    monkeypatch.delenv(KEY_ENV)
    into = sharded["tmp"] / "merged-signed" / "run"
    code, out, err = obai_json_here("merge-runs", *map(str, signed), "--into", str(into), "--no-html", env=env)
    assert code == sharded["code"] and out["signatures"].startswith("verified"), err[-2000:]
    code, verified, _ = obai_json_here("freeze-audit", "verify", "--run-dir", str(into), env=env)
    assert code == 0 and verified["signature"] == "valid"
    code, out, _ = obai_json_here("merge-runs", *map(str, sharded["parts"]), "--into", str(into.parent / "plain"),
                             "--no-html", env=sharded["env"])
    assert out["signatures"].startswith("not checked") and "mac" not in json.loads((into.parent / "plain" / SEAL)
                                                                                   .read_text())
