"""obai-e2e install: layout, upgrade rules for cases/, refusals, and the installed skill running from a host repo."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from obai_e2e.base.errors import UsageError
from obai_e2e.bundle.install import MANIFEST, SKILL_NAME, bundle_items, install

REPO = Path(__file__).resolve().parents[2]

REQUIRED = ["SKILL.md", "README.md", "pyproject.toml", "uv.lock", ".gitignore", "runs/.gitignore",
            "scripts/preflight.py", "scripts/run_suite.py", "scripts/render_report.py", "scripts/obai_e2e/cli.py",
            "scripts/obai_e2e/report/html.py", "scripts/obai_e2e/report/templates/report.html.j2",
            "scripts/obai_e2e/report/templates/report.js", "scripts/obai_e2e/report/templates/report.css",
            "demo/obai_demo/cli.py", "schemas/results.v1.schema.json", "catalogs/loss-catalog.v1.json",
            "cases/cases.yaml", "cases/target.yaml"]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a person in the host repository (none of this checkout's overrides)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OBAI_", "UV_PROJECT", "VIRTUAL_ENV", "OPIK_")) and k != "PYTHONPATH"}
    env.update(extra)
    return env


def test_layout_and_second_install_changes_nothing(tmp_path):
    out = install(tmp_path)
    skill = tmp_path / ".claude" / "skills" / SKILL_NAME
    assert out["skill_dir"] == str(skill) and out["status"] == "installed"
    for rel in REQUIRED:
        assert (skill / rel).is_file(), rel
    for d in ("references", "schemas", "catalogs", "scripts", "demo", "cases", "runs"):
        assert (skill / d).is_dir()
    names = {p.name for p in skill.rglob("*")}
    assert "__pycache__" not in names and ".venv" not in names and not any(n.endswith(".pyc") for n in names)
    assert "node_modules" not in names
    assert [p.name for p in (skill / "runs").iterdir()] == [".gitignore"]
    assert (skill / "runs" / ".gitignore").read_text().splitlines()[-2:] == ["*", "!.gitignore"]
    ignore = (skill / ".gitignore").read_text().splitlines()
    assert ".venv/" in ignore and "runs/*" in ignore
    assert os.access(skill / "scripts" / "preflight.py", os.X_OK)
    assert (skill / "cases" / "cases.yaml").read_bytes() == (REPO / "cases" / "cases.yaml").read_bytes()

    again = install(tmp_path)
    assert again["written"] == [] and again["kept"] == [] and again["removed"] == []
    assert again["unchanged_count"] == out["written_count"]


def test_reinstall_keeps_edited_cases_and_refreshes_the_rest(tmp_path):
    install(tmp_path)
    skill = tmp_path / ".claude" / "skills" / SKILL_NAME
    cases = skill / "cases" / "cases.yaml"
    edited = cases.read_text() + "\n# my own note\n"
    cases.write_text(edited)
    (skill / "scripts" / "obai_e2e" / "cli.py").write_text("# broken\n")
    (skill / "scripts" / "obai_e2e" / "gone.py").write_text("old = 1\n")  # from an "older bundle"
    manifest = json.loads((skill / MANIFEST).read_text())
    manifest["files"]["scripts/obai_e2e/gone.py"] = hashlib.sha256(b"old = 1\n").hexdigest()
    (skill / MANIFEST).write_text(json.dumps(manifest))
    (skill / "scripts" / "mine.py").write_text("# a file the user added\n")

    out = install(tmp_path)
    assert out["kept"] == [{"path": "cases/cases.yaml", "new": "cases/cases.yaml.new"}]
    assert cases.read_text() == edited
    assert (skill / "cases" / "cases.yaml.new").read_bytes() == (REPO / "cases" / "cases.yaml").read_bytes()
    assert "scripts/obai_e2e/cli.py" in out["written"]
    assert (skill / "scripts" / "obai_e2e" / "cli.py").read_bytes() == (REPO / "scripts/obai_e2e/cli.py").read_bytes()
    assert out["removed"] == ["scripts/obai_e2e/gone.py"]
    assert (skill / "scripts" / "mine.py").exists()  # never installed by us: left alone

    # The user takes the bundle's version: the stale .new goes away on the next install.
    shutil.copy(skill / "cases" / "cases.yaml.new", cases)
    out = install(tmp_path)
    assert out["kept"] == [] and out["removed"] == ["cases/cases.yaml.new"]


def test_installed_npm_packages_and_caches_are_left_out_of_the_bundle(tmp_path):
    """An example's node_modules (what ``npm ci`` installed, possibly while another process is still
    writing it) and caches are never part of what an install copies."""
    source = tmp_path / "bundle"
    for rel in ("SKILL.md", "examples/ts-agent/agent.ts", "examples/ts-agent/node_modules/pkg/index.js",
                "examples/py/__pycache__/a.cpython-311.pyc", "scripts/x/node_modules/y.js", "scripts/x/run.py",
                "cases/cases.yaml"):
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text("x\n")
    rels = sorted(item.rel for item in bundle_items(source))
    assert rels == [".gitignore", "SKILL.md", "cases/cases.yaml", "examples/ts-agent/agent.ts", "runs/.gitignore",
                    "scripts/x/run.py"]


def test_installed_pyproject_leaves_out_compile_bytecode_and_nothing_else(tmp_path):
    install(tmp_path)
    skill = tmp_path / ".claude" / "skills" / SKILL_NAME
    bundle = tomllib.loads((REPO / "pyproject.toml").read_text())
    installed = tomllib.loads((skill / "pyproject.toml").read_text())
    assert bundle["tool"]["uv"]["compile-bytecode"] is True
    assert "compile-bytecode" not in installed["tool"]["uv"]
    del bundle["tool"]["uv"]["compile-bytecode"]
    assert installed == bundle
    assert install(tmp_path)["written"] == []  # the rewritten file counts as unchanged on a reinstall


def test_refuses_a_missing_path_a_file_and_the_bundle_itself(tmp_path):
    with pytest.raises(UsageError, match="no such directory"):
        install(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        install(tmp_path / "file")
    with pytest.raises(UsageError, match="symbolic link"):
        install(REPO)  # this checkout's .claude/skills/obai-e2e-regression links back into it


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_installed_skill_runs_from_the_host_repository(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    host = tmp_path / "host"
    host.mkdir()
    store = tmp_path / "trace-store"
    # Bytecode in the skill's .venv can then only come from the install's sync.
    env = clean_env(OBAI_TRACE_STORE_DIR=str(store), PYTHONDONTWRITEBYTECODE="1")
    assert run(["git", "init", "-q"], host, env).returncode == 0
    done = run([uv, "init", "--no-readme", "--name", "host-app"], host, env)
    assert done.returncode == 0, done.stderr
    done = run([uv, "add", "six"], host, env)
    assert done.returncode == 0, done.stderr

    done = run([uv, "run", "obai-e2e", "install", "--into", str(host)], REPO, env)
    assert done.returncode == 0, done.stderr
    skill = host / ".claude" / "skills" / SKILL_NAME
    out = json.loads(done.stdout)
    assert out["skill_dir"] == str(skill)
    assert out["environment"]["status"] == "synced", out["environment"]
    opik_dir = next((skill / ".venv").glob("lib/python3*/site-packages/opik"))
    assert (opik_dir / "__pycache__").is_dir() and list((opik_dir / "__pycache__").glob("__init__.*.pyc"))

    def installed(script: str, *args: str) -> subprocess.CompletedProcess:
        return run([uv, "run", "--project", str(skill), "python", str(skill / "scripts" / script), *args], host, env)

    try:
        done = installed("preflight.py")
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["status"] == "ready"

        done = installed("run_suite.py", "--id", "MD1,R1", "--jobs", "2")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        out = json.loads(done.stdout)
        run_dir = Path(out["run_dir"])
        assert run_dir.is_relative_to(skill / "runs")
        assert out["summary"]["pass"] == 2
        for name in ("results.json", "report.md", "report.html", "results.junit.xml"):
            assert (run_dir / name).is_file(), name
        assert (skill / "runs" / "latest").resolve() == run_dir.resolve()
    finally:
        stopped = installed("trace_store.py", "stop")
        assert stopped.returncode == 0, stopped.stderr

    # The host's own project is untouched: its dependency stays, ours did not leak into it.
    pyproject = (host / "pyproject.toml").read_text()
    assert "six" in pyproject and "opik" not in pyproject
    assert (skill / ".venv").is_dir()
    assert not list((host / ".venv").glob("lib/*/site-packages/opik"))
    assert list((host / ".venv").glob("lib/*/site-packages/six.py"))
    # git sees the skill's files, but not its .venv or run directories.
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], host, env).stdout
    assert f".claude/skills/{SKILL_NAME}/runs/.gitignore" in status
    assert f".claude/skills/{SKILL_NAME}/cases/cases.yaml" in status
    assert "/runs/20" not in status and f"{SKILL_NAME}/.venv" not in status
