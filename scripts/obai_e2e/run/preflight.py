"""Is everything in place for a run? One actionable reason when not.

Checks run in order and stop at the first failure: configuration and cases, the freeze
manifest when there is one, korpus cases needing a privacy rule, the blockers (target
command, loss catalog, sandbox in mode A), anti-mock markers, the target answering its
version command, the runs folder, and the trace backend.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..base.errors import ObaiError
from ..base.paths import runs_root
from ..config.cases import CaseSet, load_cases_for
from ..config.selection import Filters
from ..config.target import TargetConfig, load_target_config
from ..drive.agent_env import agent_environ
from ..drive.containment import contained_argv, containment, turn_jail
from ..drive.sandbox import clear_leftovers
from ..rundir.meta import is_empty_dir
from ..trace.backend import connect, ping


@dataclass
class Report:
    """Preflight outcome: every check done, and the first failure if any."""

    checks: list[dict] = field(default_factory=list)
    reason: str | None = None
    next_step: str | None = None
    info: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # ready all the same, but worth knowing

    @property
    def ready(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict:
        return {"status": "ready" if self.ready else "not_ready", "reason": self.reason,
                "next_step": self.next_step, "checks": self.checks, "warnings": self.warnings, **self.info}


class _Stop(Exception):
    pass


def _check(report: Report, name: str, fn: Callable[[], str | None], next_step: str) -> None:
    try:
        detail = fn()
    except ObaiError as exc:
        report.checks.append({"name": name, "ok": False, "detail": str(exc)})
        report.reason, report.next_step = str(exc), next_step
        raise _Stop from None
    report.checks.append({"name": name, "ok": True, "detail": detail or ""})


def _fail(message: str) -> None:
    raise ObaiError(message)


def window_repeats(config: TargetConfig, cases: CaseSet, filters: Filters | None) -> str | None:
    """A warning when turns are told apart by time window and query, and some query is asked more than once."""
    if not config.correlation.window:
        return None
    chosen = filters.apply(cases).cases if filters is not None else [c for c in cases.cases if not c.disabled]
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


def panel_info(catalog) -> dict:
    """Whether the configured catalog has model-judged categories, i.e. whether a blind panel runs."""
    judged = [c.id for c in catalog.categories if c.type == "model_judged"]
    if judged:
        line = (f"the panel runs: catalog {catalog.version} has model-judged categories ({', '.join(judged)}); "
                "a blind panel of three judges answers them before any verdict is recorded")
    else:
        line = (f"no panel: catalog {catalog.version} has no model-judged category; you answer the open questions "
                "yourself")
    return {"runs": bool(judged), "model_judged": judged, "line": line}


def run(target_path: Path | None = None, cases: CaseSet | Path | None = None, *, start_store: bool = True,
        verify_freeze: Callable[[], str | None] | None = None, baseline: Path | None = None,
        filters: Filters | None = None) -> Report:
    """Check everything in order; ``cases`` is a loaded case set, a cases file, or None for the bundle's.

    ``baseline`` (a run directory or results file to compare with) is read now, as the loss
    layer would read it after the last unit: a bad one stops the run before it starts.
    With ``filters`` the ui channel is checked only when the selected units use it.
    """
    report = Report()
    state: dict = {}
    try:
        def config_ok():
            state["config"] = load_target_config(target_path)
            return str(state["config"].path)
        _check(report, "target_config", config_ok, "fix the target configuration file named above")
        config = state["config"]

        def cases_ok():
            state["cases"] = cases if isinstance(cases, CaseSet) else load_cases_for(config, cases)
            cs = state["cases"]
            return f"{len(cs.cases)} cases in {cs.path}"
        _check(report, "cases", cases_ok, "fix the cases file at the line named above")

        if filters is not None:
            def selection_ok():
                state["selection"] = filters.apply(state["cases"])
                return f"{len(state['selection'].cases)} of {len(state['cases'].cases)} cases selected"
            _check(report, "selection", selection_ok,
                   "select by the case ids, features and channels of the cases file named above")
        warning = window_repeats(config, state["cases"], filters)
        if warning:
            report.warnings.append(warning)

        from ..protocol.freeze import preflight_check

        verify_freeze = verify_freeze or preflight_check(config)
        if verify_freeze is not None:
            _check(report, "freeze", verify_freeze,
                   "undo the change to the frozen file, or re-freeze on purpose (freeze_audit.py freeze --reason …)")

        def korpus_ok():
            korpus = [c.id for c in state["cases"].cases if c.provenance == "korpus" and not c.disabled]
            if korpus and config.privacy is None:
                _fail(f"blocker: korpus cases ({', '.join(korpus[:5])}) need a privacy section in {config.path} "
                      "(names to pseudonymise, retention_days, quote_allowed)")
            return f"{len(korpus)} korpus case(s), privacy rule set" if korpus else "no korpus cases"
        _check(report, "korpus", korpus_ok, "add the privacy section to the target configuration")

        def command_ok():
            exe = config.target.command[0]
            found = shutil.which(exe, path=os.environ.get("PATH")) if os.sep not in exe else (exe if os.access(exe, os.X_OK) else None)
            if not found:
                _fail(f"{config.where('target', 'command')}: field /target/command: blocker: the target command "
                      f"{exe!r} is not on PATH or not executable")
            return found
        _check(report, "target_command", command_ok,
               "install the target CLI or set target.command in the target configuration")

        def catalog_ok():
            from ..loss.catalog import load_catalog

            if config.catalog is None:
                _fail(f"{config.path}: field /run/catalog: blocker: no loss catalog configured")
            if not config.catalog.exists():
                _fail(f"{config.where('run', 'catalog')}: field /run/catalog: blocker: the loss catalog "
                      f"{config.catalog} does not exist")
            state["catalog"] = load_catalog(config.catalog)
            report.info["panel"] = panel_info(state["catalog"])
            return f"{config.catalog} ({state['catalog'].version})"
        _check(report, "loss_catalog", catalog_ok, "point run.catalog at a loss catalog (catalogs/loss-catalog.v1.json)")

        # The loss layer reads these after every unit was driven: a bad one must stop the run now.
        def plan_ok():
            from ..loss.plan import default_plan_path, load_plan

            path = config.plan or default_plan_path()
            if config.plan is not None and not path.exists():
                _fail(f"the loss plan {path} named by run.plan does not exist")
            return f"{load_plan(path).path}"
        _check(report, "loss_plan", plan_ok, "fix the loss plan named above (or run.plan in the target configuration)")

        if baseline is not None:
            def baseline_ok():
                from ..loss.score_run import baseline_results_path
                from ..report.results import load_results

                if is_empty_dir(Path(baseline)):
                    return f"{baseline} is empty: no baseline (every failed unit counts as new)"
                path = baseline_results_path(Path(baseline), state["catalog"])
                units = load_results(path).get("units") or []
                return f"{path} ({len(units)} units)"
            _check(report, "baseline", baseline_ok, "pass a finished run directory or its results.json as --baseline")

        def workdir_ok():
            workdir = config.target.workdir
            if config.sandbox.enabled and config.sandbox.fresh_workdir:
                return "a fresh folder in each sandbox"
            if not workdir.is_dir():
                _fail(f"the target's working directory {workdir} does not exist (target.workdir in {config.path})")
            return str(workdir)
        _check(report, "target_workdir", workdir_ok, "create the folder or fix target.workdir")

        def sandbox_ok():
            if config.mode == "A" and not config.sandbox.enabled:
                _fail(f"{config.where('sandbox', 'enabled')}: field /sandbox/enabled: blocker: mode A executes the "
                      "target and needs a sandbox, but sandbox.enabled is false")
            cleared = clear_leftovers(config)
            return f"mode {config.mode}; cleared {len(cleared)} leftover sandbox(es)" if cleared else f"mode {config.mode}"
        _check(report, "sandbox", sandbox_ok, "enable the sandbox (sandbox.enabled: true) or use mode B")

        def containment_ok():
            chosen = containment()
            report.info["turn_containment"] = chosen.kind
            return chosen.describe()
        _check(report, "turn_containment", containment_ok, "see references/run-layout.md, Turn containment")

        def ui_ok():
            if filters is not None:
                selection = state["selection"]
                wanted = [c.id for c in selection.cases if "ui" in c.channels
                          and (not selection.channels or "ui" in selection.channels)]
            else:
                wanted = [c.id for c in state["cases"].cases if "ui" in c.channels and not c.disabled]
            if not wanted:
                return "no unit on the ui channel"
            try:
                import playwright.sync_api  # noqa: F401
            except ImportError:
                _fail(f"blocker: {len(wanted)} case(s) run on the ui channel ({', '.join(wanted[:5])}), which needs "
                      "Playwright: it is not installed")
            browser = config.ui.browser_executable
            if not browser.exists():
                _fail(f"blocker: the ui channel's browser {browser} does not exist")
            return f"{len(wanted)} case(s) on the ui channel; Playwright and {browser} present"
        _check(report, "ui_channel", ui_ok,
               "install the ui extra (uv sync --extra ui, or pip install 'obai-e2e-regression[ui]') and Chromium "
               "(apt-get install -y chromium), or run without ui units (--channel cli)")

        def anti_mock_ok():
            found = anti_mock_findings(config, agent_environ(config, os.environ, {}))
            if found:
                _fail(f"anti-mock: {', '.join(found)} is set, which marks a stubbed target; unset it for a real run")
            return "no stub markers"
        _check(report, "anti_mock", anti_mock_ok, "unset the stub markers named above")

        def target_runs():
            cmd = config.target.version_command
            if not cmd:
                return "no version_command configured"
            workdir = config.target.workdir if config.target.workdir.is_dir() else None
            where = f"{config.where('target', 'version_command')}: field /target/version_command"
            env = agent_environ(config, os.environ, {})
            try:  # the agent's own command: contained as its turns are
                argv, _ = contained_argv(list(cmd), turn_jail([]), env, workdir)
                done = subprocess.run(argv, capture_output=True, text=True, timeout=config.target.version_timeout_s,
                                      cwd=str(workdir) if workdir else None, env=env, stdin=subprocess.DEVNULL)
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
            report.info["target_version"] = version
            return version
        _check(report, "target_runs", target_runs, "make the target CLI start (run its version command by hand)")

        def runs_writable():
            root = runs_root()
            try:
                root.mkdir(parents=True, exist_ok=True)
                with tempfile.NamedTemporaryFile(dir=root, prefix=".preflight-"):
                    pass
            except OSError as exc:
                _fail(f"the runs folder {root} is not writable ({exc.strerror})")
            return str(root)
        _check(report, "runs_writable", runs_writable, "make the runs folder writable, or set run.runs_dir in the target configuration (or OBAI_E2E_RUNS)")

        def backend_ok():
            backend = connect(config, start_local=start_store)
            note = ping(backend)
            report.info["trace_backend"] = {"kind": backend.kind, "api_url": backend.api_url,
                                            "project": backend.project}
            if note:
                report.info.setdefault("warnings", []).append(note)
            return backend.describe() + (f"; {note}" if note else "")
        _check(report, "trace_backend", backend_ok,
               "start the local store (obai-e2e traces start) or fix the Opik configuration")

    except _Stop:
        pass
    return report
