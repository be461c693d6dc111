"""Is everything in place for a run? Every check, in order, until the first that fails.

Preflight is a list of small named checks (``CHECKS``), each reading what earlier ones left in
the :class:`State` and returning a line of detail, run by one loop that stops at the first
failure: configuration and cases (every problem of a file named at once), the selection, the
freeze manifest when there is one, korpus cases needing a privacy rule, the blockers (target
command, loss catalog and plan, sandbox in mode A), the ui channel, anti-mock markers, the
target answering its version command, the runs folder, and the trace backend.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..base.errors import ConfigError, ObaiError
from ..base.paths import runs_root
from ..base.schema import raise_all
from ..config.cases import CaseSet, load_cases_for
from ..config.selection import Filters, Selection
from ..config.target import TargetConfig, default_target_path, load_target_config
from ..drive.agent_env import agent_environ
from ..drive.containment import containment, run_version_command
from ..drive.sandbox import clear_leftovers
from ..rundir.meta import is_empty_dir
from ..trace.backend import connect, ping
from .panel_info import panel_info


@dataclass
class Report:
    """Preflight outcome: every check done, and the first failure if any."""

    checks: list[dict] = field(default_factory=list)
    reason: str | None = None
    next_step: str | None = None
    info: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # ready all the same, but worth knowing
    selection: Selection | None = field(default=None, repr=False)  # the filters applied once, for the run

    @property
    def ready(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict:
        return {"status": "ready" if self.ready else "not_ready", "reason": self.reason,
                "next_step": self.next_step, "checks": self.checks, "warnings": self.warnings, **self.info}


@dataclass
class State:
    """What preflight was asked, and what its checks found so far (read by the later checks)."""

    target_path: Path | TargetConfig | None
    cases_given: CaseSet | Path | None
    start_store: bool
    verify_freeze: Callable[[], str | None] | None
    baseline: Path | None
    filters: Filters | None
    report: Report
    config: TargetConfig = None  # type: ignore[assignment]
    cases: CaseSet = None  # type: ignore[assignment]
    catalog: Any = None

    def warn_window(self, chosen) -> None:
        warning = _window_warning(self.config, chosen) if self.config.correlation.window else None
        if warning:
            self.report.warnings.append(warning)


@dataclass(frozen=True)
class Check:
    """One named check: ``run`` returns its detail or raises an ObaiError; ``applies`` may skip it."""

    name: str
    run: Callable[[State], str | None]
    next_step: str
    applies: Callable[[State], bool] = lambda s: True


def _fail(message: str) -> None:
    raise ObaiError(message)


def window_repeats(config: TargetConfig, cases: CaseSet, filters: Filters | None) -> str | None:
    """A warning when turns are told apart by time window and query, and some query is asked more than once."""
    if not config.correlation.window:
        return None
    chosen = filters.apply(cases).cases if filters is not None else [c for c in cases.cases if not c.disabled]
    return _window_warning(config, chosen)


def _window_warning(config: TargetConfig, chosen) -> str | None:
    asked: dict[str, list[str]] = {}
    for c in chosen:
        for _ in range(max(1, c.repeats) * max(1, len(c.channels))):
            asked.setdefault(c.query, []).append(c.id)
    again = {q: ids for q, ids in asked.items() if len(ids) > 1}
    if not again:
        return None
    named = ", ".join(f"{ids[0]} ×{len(ids)}" if len(set(ids)) == 1 else "/".join(dict.fromkeys(ids))
                      for ids in list(again.values())[:5])
    return (f"correlation match: none tells a turn's trace apart only by its time window and query, and "
            f"{len(again)} query(ies) are asked more than once ({named}): those turns run one after another, "
            f"each {config.correlation.window_slack_s:g} s (window_slack_s) after the last ended, so --jobs does "
            "not speed them up. Correlate by thread (the {session} the command passes), tag or metadata instead.")


def anti_mock_findings(config: TargetConfig, env: dict[str, str]) -> list[str]:
    found = []
    for name, values in config.anti_mock_env.items():
        if name in env and (not values or env[name].strip().lower() in [v.lower() for v in values]):
            found.append(f"{name}={env[name]}")
    return found


def resolve_command(config: TargetConfig) -> str | None:
    """The executable a turn starts, found as the turn finds it: a path with a slash from the turn's working
    directory (target.workdir, relative to the target file; a fresh empty folder with sandbox.fresh_workdir,
    where no relative path is found), a bare name on the agent's PATH."""
    exe = config.target.command[0]
    if os.sep in exe:
        if not Path(exe).is_absolute() and config.sandbox.enabled and config.sandbox.fresh_workdir:
            return None
        path = Path(exe) if Path(exe).is_absolute() else config.target.workdir / exe
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(exe, path=agent_environ(config, os.environ, {}).get("PATH", os.defpath))


# ---------------------------------------------------------------------- the checks, in order


def target_config(s: State) -> str:
    """The target configuration, with every problem of the file and every file it names that does not exist
    listed at once."""
    try:
        s.config = s.target_path if isinstance(s.target_path, TargetConfig) else load_target_config(s.target_path)
    except ConfigError as exc:
        if not exc.missing:
            raise
        raise_all(exc.problems + exc.missing, str(s.target_path or default_target_path()))
    raise_all(list(s.config.missing_files), str(s.config.path))
    return str(s.config.path)


def cases(s: State) -> str:
    s.cases = s.cases_given if isinstance(s.cases_given, CaseSet) else load_cases_for(s.config, s.cases_given)
    if s.filters is None:
        s.warn_window([c for c in s.cases.cases if not c.disabled])
    return f"{len(s.cases.cases)} cases in {s.cases.path}"


def selection(s: State) -> str:
    s.report.selection = s.filters.apply(s.cases)
    s.warn_window(s.report.selection.cases)
    return f"{len(s.report.selection.cases)} of {len(s.cases.cases)} cases selected"


def freeze(s: State) -> str | None:
    from ..protocol.freeze import preflight_check

    return (s.verify_freeze or preflight_check(s.config))()


def korpus(s: State) -> str:
    found = [c.id for c in s.cases.cases if c.provenance == "korpus" and not c.disabled]
    if found and s.config.privacy is None:
        _fail(f"blocker: korpus cases ({', '.join(found[:5])}) need a privacy section in {s.config.path} "
              "(names to pseudonymise, retention_days, quote_allowed)")
    return f"{len(found)} korpus case(s), privacy rule set" if found else "no korpus cases"


def target_command(s: State) -> str:
    found = resolve_command(s.config)
    if not found:
        exe = s.config.target.command[0]
        if os.sep not in exe:
            where = "is not on PATH (the agent's, as each turn gets it)"
        elif s.config.sandbox.enabled and s.config.sandbox.fresh_workdir:
            where = ("is a relative path, and each turn starts in a fresh empty folder (sandbox.fresh_workdir): "
                     "write an absolute path")
        else:
            where = (f"is not found from the target's working directory {s.config.target.workdir} "
                     "(target.workdir, relative to the target file, where each turn starts it)")
        _fail(f"{s.config.where('target', 'command')}: field /target/command: blocker: the target command "
              f"{exe!r} {where}, or not executable")
    return found


def loss_catalog(s: State) -> str:
    from ..loss.catalog import load_catalog

    config = s.config
    if config.catalog is None:
        _fail(f"{config.path}: field /run/catalog: blocker: no loss catalog configured (the bundle's: "
              "'{bundle}/catalogs/loss-catalog.v1.json')")
    s.catalog = load_catalog(config.catalog)
    chosen = s.report.selection or s.cases
    s.report.info["panel"] = panel_info(s.catalog, config, [c for c in chosen.cases if not c.disabled])
    return f"{config.catalog} ({s.catalog.version})"


def loss_plan(s: State) -> str:
    # The loss layer reads the plan after every unit was driven: a bad one must stop the run now.
    from ..loss.plan import default_plan_path, load_plan

    return f"{load_plan(s.config.plan or default_plan_path()).path}"


def baseline(s: State) -> str:
    from ..loss.score_run import baseline_results_path
    from ..report.results import load_results

    if is_empty_dir(Path(s.baseline)):
        return f"{s.baseline} is empty: no baseline (every failed unit counts as new)"
    path = baseline_results_path(Path(s.baseline), s.catalog)
    return f"{path} ({len(load_results(path).get('units') or [])} units)"


def target_workdir(s: State) -> str:
    workdir = s.config.target.workdir
    if s.config.sandbox.enabled and s.config.sandbox.fresh_workdir:
        return "a fresh folder in each sandbox"
    if not workdir.is_dir():
        _fail(f"the target's working directory {workdir} does not exist (target.workdir in {s.config.path}, "
              "relative to that file's folder)")
    return str(workdir)


def sandbox(s: State) -> str:
    config = s.config
    if config.mode == "A" and not config.sandbox.enabled:
        _fail(f"{config.where('sandbox', 'enabled')}: field /sandbox/enabled: blocker: mode A executes the "
              "target and needs a sandbox, but sandbox.enabled is false")
    cleared = clear_leftovers(config)
    return f"mode {config.mode}; cleared {len(cleared)} leftover sandbox(es)" if cleared else f"mode {config.mode}"


def turn_containment(s: State) -> str:
    chosen = containment()
    s.report.info["turn_containment"] = chosen.kind
    if chosen.refused:
        _fail(f"turn containment: {chosen.reason}")
    return chosen.describe()


def ui_channel(s: State) -> str:
    chosen = s.report.selection
    if chosen is not None:
        wanted = [c.id for c in chosen.cases if "ui" in c.channels and (not chosen.channels or "ui" in chosen.channels)]
    else:
        wanted = [c.id for c in s.cases.cases if "ui" in c.channels and not c.disabled]
    if not wanted:
        return "no unit on the ui channel"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _fail(f"blocker: {len(wanted)} case(s) run on the ui channel ({', '.join(wanted[:5])}), which needs "
              "Playwright: it is not installed")
    browser = s.config.ui.browser_executable
    if not browser.exists():
        _fail(f"blocker: the ui channel's browser {browser} does not exist")
    return f"{len(wanted)} case(s) on the ui channel; Playwright and {browser} present"


def anti_mock(s: State) -> str:
    found = anti_mock_findings(s.config, agent_environ(s.config, os.environ, {}))
    if found:
        _fail(f"anti-mock: {', '.join(found)} is set, which marks a stubbed target; unset it for a real run")
    return "no stub markers"


def target_runs(s: State) -> str:
    config = s.config
    cmd = config.target.version_command
    if not cmd:
        return "no version_command configured"
    workdir = config.target.workdir if config.target.workdir.is_dir() else None
    where = f"{config.where('target', 'version_command')}: field /target/version_command"
    try:
        done = run_version_command(config, workdir)
    except FileNotFoundError:
        _fail(f"{where}: the target version command {cmd[0]!r} was not found")
    except PermissionError:
        _fail(f"{where}: the target version command {cmd[0]!r} is not executable")
    except subprocess.TimeoutExpired:
        _fail(f"{where}: the target version command {' '.join(cmd)} did not finish in "
              f"{config.target.version_timeout_s:g} s (target.version_timeout_s)")
    if done.returncode != 0:
        _fail(f"{where}: the target version command exited {done.returncode}: {done.stderr.strip()[-300:]}")
    version = (done.stdout or done.stderr).strip()
    markers = [m for m in config.anti_mock_version_markers if m.lower() in version.lower()]
    if markers:
        _fail(f"anti-mock: the target reports {version!r}, which looks like a stub ({', '.join(markers)})")
    s.report.info["target_version"] = version
    return version


def runs_writable(s: State) -> str:
    root = runs_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".preflight-"):
            pass
    except OSError as exc:
        _fail(f"the runs folder {root} is not writable ({exc.strerror})")
    return str(root)


def trace_backend(s: State) -> str:
    backend = connect(s.config, start_local=s.start_store)
    note = ping(backend)
    s.report.info["trace_backend"] = {"kind": backend.kind, "api_url": backend.api_url, "project": backend.project}
    if note:
        s.report.info.setdefault("warnings", []).append(note)
    return backend.describe() + (f"; {note}" if note else "")


CHECKS = (
    Check("target_config", target_config, "fix the target configuration file named above (every problem is listed)"),
    Check("cases", cases, "fix the cases file at the lines named above"),
    Check("selection", selection, "select by the case ids, features and channels of the cases file named above",
          applies=lambda s: s.filters is not None),
    Check("freeze", freeze,
          "undo the change to the frozen file, or re-freeze on purpose (freeze_audit.py freeze --reason …)"),
    Check("korpus", korpus, "add the privacy section to the target configuration"),
    Check("target_command", target_command, "install the target CLI or set target.command in the target configuration"),
    Check("loss_catalog", loss_catalog, "point run.catalog at a loss catalog ('{bundle}/catalogs/loss-catalog.v1.json')"),
    Check("loss_plan", loss_plan, "fix the loss plan named above (or run.plan in the target configuration)"),
    Check("baseline", baseline, "pass a finished run directory or its results.json as --baseline",
          applies=lambda s: s.baseline is not None),
    Check("target_workdir", target_workdir, "create the folder or fix target.workdir"),
    Check("sandbox", sandbox, "enable the sandbox (sandbox.enabled: true) or use mode B"),
    Check("turn_containment", turn_containment,
          "install Debian's bubblewrap (apt-get install bubblewrap), or choose another way with "
          "OBAI_E2E_TURN_CONTAINMENT=bwrap|jail|none (see references/run-layout.md, Turn containment)"),
    Check("ui_channel", ui_channel,
          "install the ui extra (uv sync --extra ui, or pip install 'obai-e2e-regression[ui]') and Chromium "
          "(apt-get install -y chromium), or run without ui units (--channel cli)"),
    Check("anti_mock", anti_mock, "unset the stub markers named above"),
    Check("target_runs", target_runs, "make the target CLI start (run its version command by hand)"),
    Check("runs_writable", runs_writable,
          "make the runs folder writable, or set run.runs_dir in the target configuration (or OBAI_E2E_RUNS)"),
    Check("trace_backend", trace_backend, "start the local store (obai-e2e traces start) or fix the Opik configuration"),
)


def run(target_path: Path | TargetConfig | None = None, cases: CaseSet | Path | None = None, *, start_store: bool = True,
        verify_freeze: Callable[[], str | None] | None = None, baseline: Path | None = None,
        filters: Filters | None = None) -> Report:
    """Run ``CHECKS`` in order until one fails; ``cases`` is a loaded case set, a cases file, or None for the bundle's.

    ``baseline`` (a run directory or results file to compare with) is read now, as the loss
    layer would read it after the last unit: a bad one stops the run before it starts.
    With ``filters`` the ui channel is checked only when the selected units use it, and the
    selection (``Report.selection``) is built once, here, for the run.
    """
    report = Report()
    s = State(target_path, cases, start_store, verify_freeze, baseline, filters, report)
    for check in CHECKS:
        if not check.applies(s):
            continue
        try:
            detail = check.run(s)
        except ObaiError as exc:
            report.checks.append({"name": check.name, "ok": False, "detail": str(exc)})
            report.reason, report.next_step = str(exc), check.next_step
            if isinstance(exc, ConfigError):
                report.info.update(exc.problems_json())
            break
        report.checks.append({"name": check.name, "ok": True, "detail": detail or ""})
    return report
