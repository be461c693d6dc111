"""report.html: one self-contained, inert page for a finished run.

Built from results.json, the detail blocks of report.md, the run's cases file and, when
the loss layer wrote them, suite.json and TOP-REGRESSIONS.md. The page has no network
access of any kind and works from file://.

Everything that came from the target, the trace, a judge or the cases is untrusted:

* the server-side part (summary, filters, loss section) is a Jinja2 template with
  autoescaping on;
* the units go into one ``<script type="application/json">`` block whose ``<``, ``>``,
  ``&``, U+2028 and U+2029 are written as ``\\uXXXX``, so no text can close the block;
* the client script builds cards with ``createElement``/``textContent`` only and
  renders one page of cards at a time; a curated trace enters the DOM only when its
  card is expanded, so 2,000 units stay light; a larger run has in full only the units
  that need a look and every other unit as a compact row (html_units.py), and the page
  is written a unit at a time, so neither the page nor its writer grows with every
  unit's answer and trace;
* invisible characters (direction overrides, zero-width characters) are written as
  ``<U+XXXX>`` in every text, server-side and in the embedded data;
* a Content-Security-Policy allows only the page's own script (by hash), no network,
  no images: a second wall if an escape were ever missed.

Rendering the same run twice gives the same bytes (no render time in the page, stable
ordering), so ``render-report`` is idempotent.
"""
from __future__ import annotations

import base64
import hashlib
import io
import shutil
import tempfile
import webbrowser
from pathlib import Path
from typing import BinaryIO

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from ..base.errors import ConfigError, UsageError
from ..base.fsutil import replace_from
from ..base.invisible import reveal
from ..config.cases import CaseSet
from .html_view import page_context, stream_units

REPORT_NAME = "report.html"
TEMPLATES = Path(__file__).resolve().parent / "templates"
_HOLE = "\x00report-data\x00"  # where the data block goes in the rendered template



def _shown(value):
    """Every value the template prints: text with its invisible characters revealed; markup as it is."""
    return reveal(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined,
                       keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, finalize=_shown)


def _static(name: str) -> str:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    if "</" in text and ("</script" in text.lower() or "</style" in text.lower()):
        raise ConfigError(f"{TEMPLATES / name}: must not contain a closing </script> or </style>")
    return text


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; script-src 'sha256-" + digest + "'; style-src 'unsafe-inline'; "
            "img-src 'none'; connect-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; "
            "frame-src 'none'; base-uri 'none'; form-action 'none'")


def write_page(out: BinaryIO, run_dir: Path, case_set: CaseSet | None = None) -> None:
    """The report page for ``run_dir``, written into ``out`` (deterministic for the same inputs).

    The units' data block is written first, a unit at a time, into a scratch file (the page
    around it needs what the units add up to: features, the units in full), then the page:
    the template's text before the block, the block, the text after it.
    """
    with tempfile.TemporaryFile() as block:
        results, info, _ = stream_units(run_dir, block, case_set)
        ctx = page_context(run_dir, results, info)
        script = _static("report.js")
        ctx.update(css=Markup(_static("report.css")), js=Markup(script), csp=_csp(script), data_json=Markup(_HOLE))
        # Only the page's own static script follows the block: the last hole is the block's.
        before, _, after = _environment().get_template("report.html.j2").render(**ctx).rpartition(_HOLE)
        out.write(before.encode("utf-8"))
        block.seek(0)
        shutil.copyfileobj(block, out, 1 << 20)
        out.write(after.encode("utf-8"))


def render(run_dir: Path, case_set: CaseSet | None = None) -> str:
    """The report page for ``run_dir`` as text (for a small run; ``write_report`` streams it)."""
    out = io.BytesIO()
    write_page(out, run_dir, case_set)
    return out.getvalue().decode("utf-8")


def write_report(run_dir: Path, case_set: CaseSet | None = None) -> dict:
    """Write ``run_dir/report.html`` (atomically; unchanged bytes are not rewritten)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"run directory {run_dir} does not exist")
    path = run_dir / REPORT_NAME
    replace_from(path, lambda fh: write_page(fh, run_dir, case_set))
    return {"status": "rendered", "report_html": str(path), "bytes": path.stat().st_size}


def open_in_browser(path: Path) -> bool:
    """Open ``path`` with the platform's opener (``$BROWSER`` first); True when one accepted it."""
    try:
        return bool(webbrowser.open(Path(path).resolve().as_uri()))
    except webbrowser.Error:
        return False
