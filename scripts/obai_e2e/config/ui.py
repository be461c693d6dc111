"""The ui channel of a target (``target.yaml`` → ``ui``): where its web UI is and how a browser asks.

A driver description is a handful of CSS selectors: where the question is typed, what
sends it, where the newest answer is read, what marks it finished (or failed), where an
error banner shows, and optionally where the page exposes the turn's exit code. ``url``
gets ``{base}`` (the server's address), ``{session}`` and ``{tag}`` (the correlation tag).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from ..base.errors import ConfigError
from ..base.patterns import Pattern, compile_pattern

DEFAULT_URL_PATTERN = r"https?://[^\s\"'<>]+"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
DEFAULT_BROWSER_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run")
# Markup that must not show as text in a rendered answer.
DEFAULT_MARKUP_PATTERNS = (
    r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>",     # an HTML tag
    r"&(?:[A-Za-z]{2,8}|#[0-9]{1,6}|#x[0-9A-Fa-f]{1,6});",  # an HTML entity
    r"\*\*\S|\S\*\*",                              # markdown bold
    r"(?m)^\s*```",                                 # a code fence
    r"(?m)^#{1,6}\s",                               # a markdown heading
    r"\[[^\]\n]+\]\([^)\s]+\)",                     # a markdown link
)


@dataclass(frozen=True)
class UiServer:
    """A web UI the harness starts for a run and stops at its end."""

    command: tuple[str, ...]
    url_pattern: Pattern
    start_timeout_s: float


@dataclass(frozen=True)
class UiConfig:
    """How to reach the target's web UI and drive one question through it."""

    url: str
    base_url: str | None
    server: UiServer | None
    health_url: str | None
    ready: str | None
    question: str
    submit: str | None
    answer: str
    done: str
    failed: str | None
    error_banner: str | None
    exit_code_selector: str | None
    exit_code_attribute: str | None
    timeout_s: float
    first_token_budget_ms: float | None
    done_budget_ms: float | None
    markup_patterns: tuple[Pattern, ...]
    browser_executable: Path
    browser_args: tuple[str, ...]

    def page_url(self, base: str, session: str, tag: str) -> str:
        return (self.url.replace("{base}", base).replace("{session}", quote(session, safe=""))
                .replace("{tag}", quote(tag, safe="")))

    def health(self, base: str) -> str | None:
        return self.health_url.replace("{base}", base) if self.health_url else None


Regex = Callable[[str, tuple], Pattern]
"""Compiles a user pattern at a path of the file, noting a refused one with the file's other problems."""


def parse_ui(u: dict[str, Any] | None, source: str, regex: Regex = lambda value, path: compile_pattern(value)) -> \
        UiConfig | None:
    """The ui section (already checked by the schema), or None when the target has none."""
    if u is None:
        return None
    server = None
    if u.get("server"):
        s = u["server"]
        server = UiServer(command=tuple(s["command"]),
                          url_pattern=regex(s.get("url_pattern", DEFAULT_URL_PATTERN), ("ui", "server", "url_pattern")),
                          start_timeout_s=float(s.get("start_timeout_s", 120)))
    uses_base = "{base}" in u["url"] or "{base}" in u.get("health_url", "")
    if uses_base and server is None and not u.get("base_url"):
        raise ConfigError(f"{source}: field /ui/base_url: required when /ui/url or /ui/health_url uses {{base}} "
                          "and no /ui/server is started")
    if "{session}" not in u["url"]:
        raise ConfigError(f"{source}: field /ui/url: must contain {{session}} so that each unit has its own session")
    budget = u.get("latency_budget_ms", {})
    exit_code = u.get("exit_code") or {}
    browser = u.get("browser", {})
    return UiConfig(
        url=u["url"], base_url=u.get("base_url"), server=server, health_url=u.get("health_url"),
        ready=u.get("ready"), question=u["question"], submit=u.get("submit"), answer=u["answer"], done=u["done"],
        failed=u.get("failed"), error_banner=u.get("error_banner"),
        exit_code_selector=exit_code.get("selector"), exit_code_attribute=exit_code.get("attribute"),
        timeout_s=float(u.get("timeout_s", 60)),
        first_token_budget_ms=budget.get("first_token"), done_budget_ms=budget.get("done"),
        markup_patterns=tuple(regex(p, ("ui", "markup_patterns", i))
                              for i, p in enumerate(u.get("markup_patterns", DEFAULT_MARKUP_PATTERNS))),
        browser_executable=Path(browser.get("executable", DEFAULT_CHROMIUM)),
        browser_args=tuple(browser.get("args", DEFAULT_BROWSER_ARGS)),
    )
