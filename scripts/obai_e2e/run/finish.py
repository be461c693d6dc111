"""What happens after the last verdict: results, the HTML report, JUnit, and the loss layer.

Enters: a run plan whose units are judged. Leaves: results.json, results.junit.xml, the
run's trace pages, suite.json / TOP-REGRESSIONS.md (with a catalog), report.html, runs/latest
and the seal.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..config.cases import CaseSet
from ..config.target import TargetConfig
from ..loss.catalog import load_catalog
from ..loss.score_run import score_run
from ..protocol.seal import seal
from ..report.chat_summary import chat_summary_of
from ..report.html import open_in_browser, write_report
from ..report.junit import write_junit
from ..report.finalize import finalize
from ..report.trace_pages import write_trace_pages
from ..rundir.inputs import with_copies
from ..rundir.meta import chosen_baseline, load_run, plan_of
from .feedback import write_feedback
from .plan import RunPlan


def finish(config: TargetConfig, case_set: CaseSet, plan: RunPlan, *, allow_incomplete: bool = False,
           html: bool = True, open_browser: bool = False, baseline: Path | None = None) -> dict:
    config = with_copies(config, plan.run_dir, plan.meta.inputs)
    out = finalize(config, case_set, plan.run_dir, plan.units, allow_incomplete=allow_incomplete,
                   catalog_version=catalog_version(config), baseline=baseline)
    out.update(after_run(config, case_set, html=html, open_browser=open_browser, baseline=baseline)(plan.run_dir, out))
    out["seal"] = seal(plan.run_dir)["seal"]
    out["chat_summary"] = chat_summary_of(out, Path(out["diff"]) if out.get("diff") else None)
    return out


def catalog_version(config: TargetConfig) -> str | None:
    if config.catalog is None or not Path(config.catalog).exists():
        return None
    return load_catalog(config.catalog).version


def after_run(config: TargetConfig, case_set: CaseSet, *, html: bool = True, open_browser: bool = False,
              baseline: Path | None = None, loss: bool = True) -> Callable[[Path, dict], dict]:
    """The steps that follow finalize(), as a callable for the headless runner.

    Order matters: the loss layer writes suite.json / TOP-REGRESSIONS.md before the HTML
    is rendered, so that report.html carries the Loss section. One shard of a run skips the
    loss layer (``loss=False``): its part says nothing about partitions; the merged run does.
    """
    def hook(run_dir: Path, outcome: dict) -> dict:
        run_dir = Path(run_dir)
        cfg = with_copies(config, run_dir, load_run(run_dir).inputs)  # the run's own loss catalog and plan
        out: dict = {}
        out["junit_xml"] = write_junit(run_dir, case_set=case_set)["junit_xml"]
        out["trace_pages"] = write_trace_pages(run_dir)["trace_pages"]

        if loss and cfg.catalog is not None:
            base = chosen_baseline(run_dir, baseline)
            scored = score_run(run_dir, config=cfg, baseline=base, plan_path=plan_of(run_dir) or cfg.plan)
            out["loss"] = {k: scored[k] for k in ("suite_score", "suite_status", "findings", "top_findings",
                                                 "suite_json", "top_regressions", "baseline", "warnings")}

        if cfg.report.feedback_scores:
            out["feedback_scores"] = write_feedback(cfg, run_dir)

        if html:
            rendered = write_report(run_dir, case_set)
            out["report_html"] = rendered["report_html"]
            out["report_html_bytes"] = rendered["bytes"]
            if open_browser:
                out["opened"] = open_in_browser(Path(rendered["report_html"]))
        return out
    return hook
