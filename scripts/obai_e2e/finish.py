"""What happens after the last verdict: results, the HTML report, JUnit, and the loss layer."""
from __future__ import annotations

from pathlib import Path

from .results import finalize


def finish(config, case_set, run_dir: Path, *, allow_incomplete: bool = False, html: bool = True,
           open_browser: bool = False, baseline: Path | None = None) -> dict:
    out = finalize(config, case_set, run_dir, allow_incomplete=allow_incomplete)
    out.update(after_run(config, case_set, html=html, open_browser=open_browser, baseline=baseline)(Path(run_dir), out))
    return out


def after_run(config, case_set, *, html: bool = True, open_browser: bool = False, baseline: Path | None = None):
    """The steps that follow finalize(), as a callable for the headless runner."""
    def hook(run_dir: Path, outcome: dict) -> dict:
        return {}
    return hook
