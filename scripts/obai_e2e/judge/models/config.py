"""The judge panel configuration: ``catalogs/judges.yaml`` (frozen with the other catalogs).

Each judge is ``{name, provider, model, ...}`` with a provider of ``anthropic`` (the
Messages API), ``openai`` (Chat Completions, any compatible server, Azure-style base
URLs) or ``command`` (a program that reads the bundle on stdin and prints its answer).
Keys are never written here: a judge names the environment variable that holds its key.
The file also sets the concurrency, the batch size, the retry policy, a per-run token
and cost budget, and the price per million tokens of each model.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from ...base import schema
from ...base.errors import ConfigError
from ...base.fsutil import sha256_file
from ...base.yamlio import Lines, line_for, load_yaml
from ...config.judges_file import default_path

PROVIDERS = ("anthropic", "openai", "command")
DEFAULT_BASE_URL = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"
# Fields that belong to one provider only.
ONLY_FOR = {
    "anthropic_version": ("anthropic",),
    "api_version": ("openai",), "auth": ("openai",), "token_field": ("openai",), "json_mode": ("openai",),
    "system_role": ("openai",), "reasoning_effort": ("openai",),
    "thinking": ("anthropic",), "effort": ("anthropic",),
    "command": ("command",),
    "base_url": ("anthropic", "openai"), "api_key_env": ("anthropic", "openai"),
    "temperature": ("anthropic", "openai"), "max_tokens": ("anthropic", "openai"),
}
MAX_TEMPERATURE = {"anthropic": 1, "openai": 2}


@dataclass(frozen=True)
class Judge:
    """One judge of the panel; its key is read from ``api_key_env`` when it is asked."""

    name: str
    provider: str
    model: str
    family: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0
    max_tokens: int = 16000
    timeout_s: float = 300
    anthropic_version: str = DEFAULT_ANTHROPIC_VERSION
    api_version: str | None = None
    auth: str = "bearer"
    token_field: str = "max_tokens"
    json_mode: bool = False
    system_role: str = "system"
    reasoning_effort: str | None = None
    thinking: dict | None = None
    effort: str | None = None
    command: str | None = None

    def identity(self) -> dict:
        """What a round records about the judge (never a key)."""
        out = {"name": self.name, "provider": self.provider, "model": self.model, "family": self.family,
               "timeout_s": self.timeout_s}
        if self.provider == "command":
            out["command"] = self.command
        else:
            out.update(base_url=public_url(self.base_url), api_key_env=self.api_key_env,
                       temperature=self.temperature, max_tokens=self.max_tokens)
            reasoning = {k: v for k, v in (("reasoning_effort", self.reasoning_effort), ("thinking", self.thinking),
                                           ("effort", self.effort)) if v is not None}
            if reasoning:
                out["reasoning"] = reasoning
        return out


@dataclass(frozen=True)
class Retry:
    """When and how long to wait before asking again."""

    max_attempts: int = 4
    initial_backoff_s: float = 1.0
    multiplier: float = 2.0
    max_backoff_s: float = 30.0
    max_wait_s: float = 120.0
    jitter: bool = True


@dataclass(frozen=True)
class Budget:
    """Per-run limits; None means no limit."""

    max_tokens: int | None = None
    max_cost: Decimal | None = None
    currency: str = "USD"
    bytes_per_token: Decimal = Decimal(1)


@dataclass(frozen=True)
class Price:
    input_per_mtok: Decimal
    output_per_mtok: Decimal


@dataclass(frozen=True)
class PanelConfig:
    """A validated panel configuration."""

    judges: tuple[Judge, ...]
    concurrency: int = 3
    batch_max_chars: int | None = None
    batch_max_packets: int | None = None
    retry: Retry = field(default_factory=Retry)
    budget: Budget = field(default_factory=Budget)
    prices: dict[str, Price] = field(default_factory=dict)
    source: str = "<built in code>"
    sha256: str | None = None

    def judge(self, name: str) -> Judge:
        return next(j for j in self.judges if j.name == name)

    def families(self) -> list[str]:
        return sorted({j.family for j in self.judges})

    def warnings(self) -> list[str]:
        out = []
        if len(self.families()) < 2:
            out.append(f"all {len(self.judges)} judges are of the family {self.families()[0]!r}; judges of "
                       "different model families make the panel's majority less likely to share one blind spot")
        return out


def public_url(url: str | None) -> str | None:
    """``url`` without user info or query values (they may hold credentials)."""
    if not url:
        return url
    url = re.sub(r"^(https?://)[^/@]*@", r"\1", url)
    return re.sub(r"([?&][^=&#]+)=[^&#]*", r"\1=…", url)


def derive_family(provider: str, model: str) -> str:
    """A family name from the model's name: ``gpt-4.1`` → gpt, ``meta-llama/Llama-3.1-70B`` → llama."""
    if provider == "command":
        return "command"
    base = model.rsplit("/", 1)[-1].lower()
    m = re.match(r"[a-z]+", base)
    return m.group(0) if m else provider


def _decimal(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _fail(source: str, lines: Lines, path: tuple, who: str | None, message: str) -> ConfigError:
    line = line_for(lines, path)
    where = f"{source}:{line}" if line else source
    subject = f"{who}, field {schema.pointer(path)}" if who else f"field {schema.pointer(path)}"
    return ConfigError(f"{where}: {subject}: {message}")


def parse(data, *, source: str, lines: Lines | None = None, sha256: str | None = None,
          env_check: bool = False) -> PanelConfig:
    """A PanelConfig from the loaded YAML; raises ConfigError naming the file, the judge and the field."""
    lines = lines or {}
    if isinstance(data, dict) and isinstance(data.get("judges"), list) and len(data["judges"]) < 3:
        raise _fail(source, lines, ("judges",), None, f"a panel needs at least 3 independent judges, "
                    f"the file names {len(data['judges'])}")
    schema.check(data, "judges.schema.json", source=source, lines=lines,
                 item_label=lambda p: _judge_label(data, p))
    judges, seen = [], {}
    for i, raw in enumerate(data["judges"]):
        who = f"judge {raw['name']!r}"
        provider = raw["provider"]
        for key in raw:
            allowed = ONLY_FOR.get(key)
            if allowed and provider not in allowed:
                raise _fail(source, lines, ("judges", i, key), who,
                            f"not a field of provider {provider} (only {', '.join(allowed)})")
        folded = raw["name"].lower()
        if folded in seen:
            raise _fail(source, lines, ("judges", i, "name"), who,
                        f"the name is taken by /judges/{seen[folded]} already (names are compared "
                            "ignoring case); every judge needs its own name")
        seen[folded] = i
        if provider == "command":
            if not raw.get("command", "").strip():
                raise _fail(source, lines, ("judges", i), who, "a command judge needs 'command' (the program to run)")
        else:
            if "api_key_env" not in raw:
                raise _fail(source, lines, ("judges", i), who,
                            "'api_key_env' is required: the name of the environment variable holding the key "
                            "(null for a server that needs none)")
            t = raw.get("temperature", 0)
            if t is not None and t > MAX_TEMPERATURE[provider]:
                raise _fail(source, lines, ("judges", i, "temperature"), who,
                            f"{t} is above {MAX_TEMPERATURE[provider]}, the largest temperature {provider} accepts")
            if env_check and raw["api_key_env"] and not os.environ.get(raw["api_key_env"]):
                raise _fail(source, lines, ("judges", i, "api_key_env"), who,
                            f"the environment variable {raw['api_key_env']} is not set (it must hold the key)")
        kw = {k: v for k, v in raw.items() if k not in ("family",)}
        kw.update(_reasoning(raw, source, lines, ("judges", i), who))
        kw["family"] = raw.get("family") or derive_family(provider, raw["model"])
        if provider != "command":
            kw["base_url"] = raw.get("base_url") or DEFAULT_BASE_URL[provider]
        judges.append(Judge(**kw))
    retry = Retry(**data.get("retry", {}))
    b = data.get("budget", {})
    budget = Budget(max_tokens=b.get("max_tokens"), max_cost=_decimal(b.get("max_cost")),
                    currency=b.get("currency", "USD"), bytes_per_token=_decimal(b.get("bytes_per_token", 1)))
    prices = {m: Price(_decimal(p["input_per_mtok"]), _decimal(p["output_per_mtok"]))
              for m, p in (data.get("prices") or {}).items()}
    if budget.max_cost is not None:
        for i, j in enumerate(judges):
            if j.provider != "command" and j.model not in prices:
                raise _fail(source, lines, ("prices",), None,
                            f"budget.max_cost is set, so every model needs a price: add {j.model!r} (judge "
                            f"{j.name!r}) with input_per_mtok and output_per_mtok")
    batch = data.get("batch", {})
    return PanelConfig(judges=tuple(judges), concurrency=data.get("concurrency", 3),
                       batch_max_chars=batch.get("max_chars"), batch_max_packets=batch.get("max_packets"),
                       retry=retry, budget=budget, prices=prices, source=source, sha256=sha256)


def _reasoning(raw: dict, source: str, lines: Lines, at: tuple, who: str) -> dict:
    """Defaults and checks that a reasoning model's settings imply, as the providers document them.

    OpenAI reasoning models (``reasoning_effort``) take ``max_completion_tokens``, accept no
    temperature and read their instructions as a ``developer`` message. Anthropic extended
    thinking needs ``budget_tokens`` of at least 1024 and below ``max_tokens``, and accepts
    no temperature but 1.
    """
    out: dict = {}
    if raw.get("reasoning_effort") is not None:
        if raw.get("token_field", "max_completion_tokens") != "max_completion_tokens":
            raise _fail(source, lines, (*at, "token_field"), who, "a reasoning model (reasoning_effort is set) takes "
                        "max_completion_tokens; max_tokens is not accepted with reasoning models")
        if raw.get("temperature") is not None:
            raise _fail(source, lines, (*at, "temperature"), who, "a reasoning model (reasoning_effort is set) accepts "
                        "no temperature: leave it out or set null")
        out = {"token_field": "max_completion_tokens", "temperature": None,
               "system_role": raw.get("system_role", "developer")}
    thinking = raw.get("thinking")
    if thinking is not None:
        budget = thinking.get("budget_tokens")
        if thinking["type"] == "enabled" and budget is not None and budget >= raw.get("max_tokens", Judge.max_tokens):
            raise _fail(source, lines, (*at, "thinking", "budget_tokens"), who,
                        f"{budget} must be less than max_tokens ({raw.get('max_tokens', Judge.max_tokens)}): the "
                        "thinking budget is part of the answer's tokens")
        if raw.get("temperature") not in (None, 1):
            raise _fail(source, lines, (*at, "temperature"), who, "with thinking the temperature cannot be changed: "
                        "leave it out or set null")
        out = {"temperature": raw.get("temperature")}
    return out


def _judge_label(data, path: tuple) -> str | None:
    if len(path) >= 2 and path[0] == "judges" and isinstance(path[1], int):
        try:
            name = data["judges"][path[1]].get("name")
        except (IndexError, AttributeError, TypeError):
            return None
        return f"judge {name!r}" if name else f"judge {path[1] + 1}"
    return None


def load(path: Path | None = None, *, env_check: bool = False) -> PanelConfig:
    """Read and validate the panel file (default ``catalogs/judges.yaml``, or ``$OBAI_E2E_JUDGES``)."""
    path = Path(path) if path else default_path()
    data, lines = load_yaml(path, label=str(path))
    if data is None:
        raise ConfigError(f"{path}: the file is empty; it needs 'version: 1' and a list of 'judges'")
    return parse(data, source=str(path), lines=lines, sha256=sha256_file(path), env_check=env_check)


def command_panel(command: str, *, judges: int = 3, model: str | None = None,
                  timeout_s: float = 900) -> PanelConfig:
    """The panel of ``--panel-command``: ``judges`` fresh runs of one program, labelled J1, J2, …"""
    import shlex

    argv = shlex.split(command)
    if not argv:
        raise ConfigError("--panel-command is empty")
    if judges < 3:
        raise ConfigError(f"--panel-judges {judges}: a judge panel needs at least 3 independent judges")
    name = model or f"command:{Path(argv[0]).name}"
    return PanelConfig(judges=tuple(Judge(name=f"J{i}", provider="command", model=name, family="command",
                                          command=command, timeout_s=timeout_s) for i in range(1, judges + 1)),
                       concurrency=judges, retry=Retry(max_attempts=1), source="--panel-command")
