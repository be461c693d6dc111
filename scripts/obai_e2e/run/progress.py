"""Progress of a headless run on stderr: a bar on a terminal, one line per unit otherwise."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from ..base.output import visible

NOTE_CHARS = 600


@dataclass
class Progress:
    """Reports each unit as it finishes."""

    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    _bar: object = None
    _task: object = None

    def __enter__(self) -> "Progress":
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("[bold]e2e[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"), console=console)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total)
        return self

    def unit(self, unit_id: str, verdict: str, reasons: list[str], seconds: float, note: str | None = None) -> None:
        """One finished unit; ``note`` (why an inconclusive unit is so) goes on a second, indented line."""
        self.done += 1
        line = f"[{self.done}/{self.total}] {unit_id} {verdict}{' ' + ', '.join(reasons) if reasons else ''} ({seconds:.1f}s)"
        if note:
            note = " ".join(note.split())
            line += "\n    " + visible(note if len(note) <= NOTE_CHARS else note[:NOTE_CHARS] + " …")
        if self._bar is not None:
            from rich.markup import escape

            self._bar.update(self._task, advance=1, description=escape(line.split("\n")[0]))
            self._bar.console.print(line, highlight=False, markup=False)
        else:
            print(line, file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
