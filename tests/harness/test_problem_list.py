"""A file with thousands of problems: every command that checks it names the first 50 and "… and N more (the
full list: <path>)", writes the whole list once to a private folder, and exits as it did; a file with a few
problems is named in full, with no list written."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from obai_e2e import cli
from obai_e2e.base.errors import PROBLEMS_SHOWN, ConfigError
from obai_e2e.base.problem_list import folder
from obai_e2e.config.cases import load_cases

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def temp(tmp_path, monkeypatch) -> Path:
    """The temporary folder the lists go to, this test's own."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("OBAI_E2E_RUNS", str(tmp_path / "runs"))
    return tmp_path / "tmp"


def broken_cases(tmp_path: Path, count: int) -> Path:
    """``count`` cases with three problems each (an id the schema refuses, a number for a feature, an unknown key)."""
    path = tmp_path / "cases.yaml"
    path.write_text("version: 1\ncases:\n" + "".join(f"  - id: 'bad id {i}'\n    feature: 7\n    bogus: 1\n"
                                                      for i in range(count)), encoding="utf-8")
    return path


def run(capsys, *args: str) -> tuple[int, dict, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.mark.parametrize("command,exit_code", [(["preflight", "--no-start"], 4), (["new-run"], 2),
                                               (["run", "--no-html"], 2), (["plan-loss"], 2)])
def test_a_file_with_thousands_of_problems_names_fifty_and_where_the_rest_are(temp, tmp_path, capsys, command,
                                                                              exit_code):
    cases = broken_cases(tmp_path, 1_000)
    code, out, err = run(capsys, *command, "--cases", str(cases))
    assert code == exit_code
    shown = out.get("problems")
    assert len(shown) == PROBLEMS_SHOWN and out["problems_total"] == 3_000
    listing = Path(out["problems_file"])
    assert listing.parent == temp / f"obai-e2e-{os.getuid()}" / "problems"
    lines = listing.read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"{cases}: 3,000 problems" and len(lines) == 3_001
    assert lines[-1].startswith("3000. ") and "case 'bad id 999', field /cases/999/bogus" in lines[-1]
    message = out.get("reason") or out["message"]
    assert message.startswith(f"{cases}: 3,000 problems") and message.count(f"\n  ") == PROBLEMS_SHOWN + 1
    assert message.endswith(f"  … and 2,950 more (the full list: {listing})")
    assert len(json.dumps(out)) < 60_000 and len(err) < 20_000


def test_checking_the_same_file_again_writes_no_new_list(temp, tmp_path):
    cases = broken_cases(tmp_path, 30)  # 90 problems
    with pytest.raises(ConfigError) as first:
        load_cases(cases)
    listing = Path(first.value.problems_file)
    stamp = listing.stat().st_mtime_ns
    with pytest.raises(ConfigError) as again:
        load_cases(cases)
    assert again.value.problems_file == str(listing) and listing.stat().st_mtime_ns == stamp
    assert sorted(folder().iterdir()) == [listing]


def test_up_to_fifty_problems_are_all_named_and_no_list_is_written(temp, tmp_path, capsys):
    for count, problems in ((1, 3), (16, 48)):
        cases = broken_cases(tmp_path, count)
        code, out, _ = run(capsys, "preflight", "--no-start", "--cases", str(cases))
        assert code == 4 and len(out["problems"]) == problems
        assert "problems_total" not in out and "problems_file" not in out and "more (the full list" not in out["reason"]
    assert not (temp / f"obai-e2e-{os.getuid()}").exists()


def test_a_list_folder_that_is_not_private_is_not_written_and_says_why(temp, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (temp / f"obai-e2e-{os.getuid()}").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError) as err:
        load_cases(broken_cases(tmp_path, 20))
    assert err.value.problems_file is None and len(err.value.problems) == 60
    assert "… and 10 more (the full list could not be written: " in str(err.value)
    assert "is not a folder only this user may write" in str(err.value)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert err.value.problems_json()["problems_file"] is None
