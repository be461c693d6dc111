"""Asking one judge once: an HTTP request (httpx, no provider SDK) or a command, with retries.

``Asker.ask(judge, text)`` sends the text, retries what the retry policy says is worth
retrying (honouring the server's Retry-After), and returns a ``CallResult``: the reply,
or why there is none, with every attempt listed. Keys are read from the environment
here and go into request headers only; every message kept is redacted and shown with its
control characters escaped.

An attempt that timed out or lost its connection after the request was sent may still
be billed by the provider: it is marked ``billable``, and ``before_retry`` (the budget)
decides whether another attempt may follow. A command judge runs like a turn of the
agent (drive.turn): in a session of its own with a mark in its environment, its whole
process tree ended at its timeout and after it exits; its output is read up to the size
a stored response may have, and a larger one is refused as too large — a failure that
would repeat, so it is kept like a reply (``lasting``) and not asked again on resume.
"""
from __future__ import annotations

import json
import os
import random
import shlex
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...base import procs
from ...base.errors import NotReady
from ...base.output import visible
from ...base.redact import Redactor
from ...base.seal_key import KEY_ENV as SEAL_KEY_ENV
from ...drive.turn import run_turn
from ..panel.responses import MAX_RAW_BYTES
from .config import Judge, PanelConfig
from .retry import backoff, retry_after, retryable_status
from .wire import Reply, WireError, build, parse_error, parse_reply

ANSWERED, FAILED = "answered", "failed"
STDERR_TAIL = 600          # characters of a command's stderr kept in its error
MAX_MESSAGE = 2000         # characters of any error message kept
MAX_BODY_BYTES = 20_000_000  # a provider's reply holds at most a response's text and its framing
KILL_GRACE_S = 2.0


@dataclass
class CallResult:
    """The outcome of asking one judge one bundle."""

    judge: str
    status: str
    reply: Reply | None = None
    error: str | None = None
    http_status: int | None = None
    attempts: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    lasting: bool = False  # a failure that asking again would repeat (an answer too large)
    # ``reply`` is set when answered, or when an answer came but was refused (its usage counts)

    @property
    def answered(self) -> bool:
        return self.status == ANSWERED


class _Retryable(Exception):
    def __init__(self, message: str, *, status: int | None = None, wait_s: float | None = None,
                 billable: bool = False):
        super().__init__(message)
        self.status, self.wait_s, self.billable = status, wait_s, billable


class _Final(Exception):
    def __init__(self, message: str, *, status: int | None = None, lasting: bool = False,
                 reply: Reply | None = None):
        super().__init__(message)
        self.status, self.lasting, self.reply = status, lasting, reply  # reply: its usage still counts


class Asker:
    """Sends bundles to judges; one instance per panel run (it holds the connection pool)."""

    def __init__(self, cfg: PanelConfig, redactor: Redactor, *, env=None, rng: random.Random | None = None):
        import httpx  # imported here: it takes a noticeable part of a second, paid only when judges are asked

        self.httpx = httpx
        self.cfg = cfg
        self.redactor = redactor
        self.env = os.environ if env is None else env
        self.rng = rng or random.Random()
        self.mark = f"judge-{uuid.uuid4().hex[:12]}"  # every judge command of this panel carries it
        # Loading the CA bundle takes a good part of a second; a panel of plain-HTTP servers
        # (a local model server) never uses TLS, so it is not loaded for one.
        tls = any((j.base_url or "").startswith("https://") for j in cfg.judges)
        self.http = httpx.Client(limits=httpx.Limits(max_connections=max(4, cfg.concurrency * 2),
                                                     max_keepalive_connections=max(4, cfg.concurrency * 2)),
                                 follow_redirects=False, verify=True if tls else False)

    def close(self) -> None:
        self.http.close()

    def abort(self) -> None:
        """End every judge command still running, with all it started (an interrupted run leaves none)."""
        procs.end_all(mark=self.mark)

    def __enter__(self) -> "Asker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def key(self, judge: Judge) -> str | None:
        return self.env.get(judge.api_key_env) if judge.api_key_env else None

    def _message(self, exc: Exception) -> str:
        return visible(self.redactor.text(str(exc)), MAX_MESSAGE)

    def ask(self, judge: Judge, text: str, *, before_retry: Callable[[dict], bool] | None = None) -> CallResult:
        """Ask until answered, a final failure, or the retries end; ``before_retry(attempt)`` may refuse a retry."""
        t0 = time.monotonic()
        result = CallResult(judge.name, FAILED)
        policy = self.cfg.retry
        for n in range(1, policy.max_attempts + 1):
            started = time.monotonic()
            attempt: dict = {"attempt": n}
            try:
                reply, status = (self._command(judge, text) if judge.provider == "command"
                                 else self._http(judge, text))
            except _Retryable as exc:
                attempt.update(status=exc.status, error=self._message(exc),
                               seconds=round(time.monotonic() - started, 3))
                if exc.billable:
                    attempt["billable"] = True
                result.attempts.append(attempt)
                result.error, result.http_status = attempt["error"], exc.status
                if n == policy.max_attempts:
                    result.error = f"{attempt['error']} (gave up after {n} attempt{'s' if n > 1 else ''})"
                    break
                if exc.wait_s is not None and exc.wait_s > policy.max_wait_s:
                    result.error = (f"{attempt['error']}; the server asked to wait {exc.wait_s:g} s, longer than "
                                    f"retry.max_wait_s ({policy.max_wait_s:g} s): not retried")
                    break
                if before_retry is not None and not before_retry(attempt):
                    result.error = f"{attempt['error']}; not retried: the budget admits no further attempt"
                    break
                wait = exc.wait_s if exc.wait_s is not None else backoff(policy, n, self.rng)
                attempt["wait_s"] = round(wait, 3)
                attempt["wait_from"] = "retry-after" if exc.wait_s is not None else "backoff"
                time.sleep(wait)
                continue
            except _Final as exc:
                attempt.update(status=exc.status, error=self._message(exc),
                               seconds=round(time.monotonic() - started, 3))
                result.attempts.append(attempt)
                result.error, result.http_status, result.lasting = attempt["error"], exc.status, exc.lasting
                result.reply = exc.reply
                break
            attempt.update(status=status, seconds=round(time.monotonic() - started, 3))
            result.attempts.append(attempt)
            result.status, result.reply, result.http_status, result.error = ANSWERED, reply, status, None
            break
        result.seconds = round(time.monotonic() - t0, 3)
        return result

    # -- HTTP -------------------------------------------------------------------------

    def _http(self, judge: Judge, text: str) -> tuple[Reply, int]:
        httpx = self.httpx
        req = build(judge, text, self.key(judge))
        payload = json.dumps(req.body, ensure_ascii=False).encode("utf-8")
        deadline = time.monotonic() + judge.timeout_s
        try:
            with self.http.stream("POST", req.url, headers=req.headers, content=payload,
                                  timeout=httpx.Timeout(judge.timeout_s)) as resp:
                chunks, size = [], 0
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_BODY_BYTES:
                        raise _Final(f"HTTP {resp.status_code}: the response body is larger than {MAX_BODY_BYTES} "
                                     "bytes; refused as too large", status=resp.status_code)
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("total time exceeded")
                content = b"".join(chunks)
                status, headers = resp.status_code, resp.headers
        except (httpx.ConnectTimeout, httpx.ConnectError) as exc:  # never reached the server: nothing to bill
            raise _Retryable(f"connection to {judge.base_url} failed ({type(exc).__name__}: {exc})") from None
        except httpx.TimeoutException:
            raise _Retryable(f"no complete answer within timeout_s = {judge.timeout_s:g} s", billable=True) from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection to {judge.base_url} broke ({type(exc).__name__}: {exc})",
                             billable=True) from None
        if 200 <= status < 300:
            try:
                reply = parse_reply(judge, content)
            except WireError as exc:
                raise _Final(f"HTTP {status} but {exc}", status=status) from None
            size = len(reply.text.encode("utf-8"))
            if size > MAX_RAW_BYTES:
                raise _Final(f"HTTP {status} but the answer is {size} bytes, more than a response may have "
                             f"({MAX_RAW_BYTES}): refused as too large", status=status, lasting=True,
                             reply=reply)
            return reply, status
        err = parse_error(content)
        what = "/".join(x for x in (err.type, err.code) if x)
        message = f"HTTP {status}{' ' + what if what else ''}: {err.message}".rstrip(": ")
        if retryable_status(status) and not err.quota:
            raise _Retryable(message, status=status, wait_s=retry_after(headers))
        if err.quota:
            message += " (a quota or spend limit: not retried)"
        raise _Final(message, status=status)

    # -- command ----------------------------------------------------------------------

    def _command(self, judge: Judge, text: str) -> tuple[Reply, int | None]:
        argv = shlex.split(judge.command)
        env = {**self.env, "OBAI_JUDGE_LABEL": judge.name, "OBAI_JUDGE_MODEL": judge.model}
        env.pop(SEAL_KEY_ENV, None)  # a judge reads the agent's text: it never holds the key that signs the run
        try:
            turn = run_turn(argv, env=env, cwd=Path.cwd(), timeout_s=judge.timeout_s, kill_grace_s=KILL_GRACE_S,
                            stderr_tail_bytes=STDERR_TAIL * 4, mark=f"{self.mark}-{uuid.uuid4().hex[:8]}",
                            stdin=text.encode("utf-8"), stdout_limit=MAX_RAW_BYTES)
        except NotReady as exc:
            raise _Final(str(exc).replace("target command", "judge command")) from None
        if turn.timed_out:
            raise _Retryable(f"the command gave no answer within timeout_s = {judge.timeout_s:g} s "
                             "(it was ended with every process it started)")
        if turn.stdout_truncated:
            raise _Final(f"the command's answer is {turn.stdout_bytes} bytes, more than a response may have "
                         f"({MAX_RAW_BYTES}): refused as too large", lasting=True)
        if turn.exit_code != 0:
            tail = visible(turn.stderr_tail.strip(), STDERR_TAIL)
            raise _Retryable(f"the command exited with {turn.exit_code}" + (f": {tail}" if tail else ""))
        return Reply(turn.stdout, None, None, None, False, judge.model, None), None
