"""The CI examples are valid pipelines with the keys their comments promise, and run the README's commands."""
from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import yaml
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]

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
                       "properties": {"uses": {"type": "string", "pattern": r"^[\w.-]+/[\w.-]+@v\d+$"},
                                      "run": {"type": "string"}, "with": {"type": "object"}, "if": {"type": "string"}},
                       "additionalProperties": False}},
}


def readme_commands() -> set[str]:
    tokens = MarkdownIt("commonmark").parse((REPO / "README.md").read_text(encoding="utf-8"))
    return {line.strip() for t in tokens if t.type == "fence" for line in t.content.splitlines() if line.strip()}


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
    assert commands and all(c in readme_commands() for c in commands), commands
    assert any("--shard ${{ matrix.shard }}/$SHARDS" in c for c in commands)
    assert any(c.startswith("uv run obai-e2e merge-runs") for c in commands)
    uses = [s.get("uses", "") for s in jobs["shard"]["steps"] + jobs["merge"]["steps"]]
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert any(u.startswith("actions/download-artifact@") for u in uses)


def test_gitlab_example():
    data = yaml.safe_load((REPO / "examples/ci/gitlab-ci.yml").read_text())
    shard, merge = data["e2e-shard"], data["e2e-merge"]
    assert shard["parallel"] >= 2 and merge["needs"] == ["e2e-shard"] and merge["when"] == "always"
    assert shard["stage"] in data["stages"] and merge["stage"] in data["stages"]
    assert data["stages"].index(shard["stage"]) < data["stages"].index(merge["stage"])
    assert any(re.search(r"--shard \$CI_NODE_INDEX/\$CI_NODE_TOTAL", line) for line in shard["script"])
    assert any(line.startswith("uv run obai-e2e merge-runs") for line in merge["script"])
    assert merge["artifacts"]["reports"]["junit"].endswith("results.junit.xml")
