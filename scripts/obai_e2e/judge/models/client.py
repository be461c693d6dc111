"""Asking one judge once: an HTTP request (httpx, no provider SDK) or a command, with retries.

``Asker.ask(judge, text)`` sends the text, retries what the retry policy says is worth
retrying (honouring the server's Retry-After), and returns a ``CallResult``: the reply,
or why there is none, with every attempt listed. Keys are read from the environment
here and go into request headers only; every message kept is redacted.
"""
from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from ...base.redact import Redactor
from .config import Judge, PanelConfig
from .retry import backoff, retry_after, retryable_status
from .wire import Reply, WireError, build, parse_error, parse_reply

ANSWERED, FAILED = "answered", "failed"
STDERR_TAIL = 600


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

    @property
    def answered(self) -> bool:
        return self.status == ANSWERED


class _Retryable(Exception):
    def __init__(self, message: str, *, status: int | None = None, wait_s: float | None = None):
        super().__init__(message)
        self.status, self.wait_s = status, wait_s


class _Final(Exception):
    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class Asker:
    """Sends bundles to judges; one instance per panel run (it holds the connection pool)."""

    def __init__(self, cfg: PanelConfig, redactor: Redactor, *, env=None, rng: random.Random | None = None):
        import httpx  # imported here: it takes a noticeable part of a second, paid only when judges are asked

        self.httpx = httpx
        self.cfg = cfg
        self.redactor = redactor
        self.env = os.environ if env is None else env
        self.rng = rng or random.Random()
        self._procs: set = set()
        self._procs_lock = threading.Lock()
        # Loading the CA bundle takes a good part of a second; a panel of plain-HTTP servers
        # (a local model server) never uses TLS, so it is not loaded for one.
        tls = any((j.base_url or "").startswith("https://") for j in cfg.judges)
        self.http = httpx.Client(limits=httpx.Limits(max_connections=max(4, cfg.concurrency * 2),
                                                     max_keepalive_connections=max(4, cfg.concurrency * 2)),
                                 follow_redirects=False, verify=True if tls else False)

    def close(self) -> None:
        self.http.close()

    def abort(self) -> None:
        """End every judge command still running (an interrupted run must not leave them behind)."""
        with self._procs_lock:
            procs = list(self._procs)
        for proc in procs:  # the thread waiting on each one reaps it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def __enter__(self) -> "Asker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def key(self, judge: Judge) -> str | None:
        return self.env.get(judge.api_key_env) if judge.api_key_env else None

    def ask(self, judge: Judge, text: str) -> CallResult:
        t0 = time.monotonic()
        result = CallResult(judge.name, FAILED)
        policy = self.cfg.retry
        for n in range(1, policy.max_attempts + 1):
            started = time.monotonic()
            attempt = {"attempt": n}
            try:
                reply, status = (self._command(judge, text) if judge.provider == "command"
                                 else self._http(judge, text))
            except _Retryable as exc:
                attempt.update(status=exc.status, error=self.redactor.text(str(exc)),
                               seconds=round(time.monotonic() - started, 3))
                result.attempts.append(attempt)
                result.error, result.http_status = attempt["error"], exc.status
                if n == policy.max_attempts:
                    result.error = f"{attempt['error']} (gave up after {n} attempt{'s' if n > 1 else ''})"
                    break
                if exc.wait_s is not None and exc.wait_s > policy.max_wait_s:
                    result.error = (f"{attempt['error']}; the server asked to wait {exc.wait_s:g} s, longer than "
                                    f"retry.max_wait_s ({policy.max_wait_s:g} s): not retried")
                    break
                wait = exc.wait_s if exc.wait_s is not None else backoff(policy, n, self.rng)
                attempt["wait_s"] = round(wait, 3)
                attempt["wait_from"] = "retry-after" if exc.wait_s is not None else "backoff"
                time.sleep(wait)
                continue
            except _Final as exc:
                attempt.update(status=exc.status, error=self.redactor.text(str(exc)),
                               seconds=round(time.monotonic() - started, 3))
                result.attempts.append(attempt)
                result.error, result.http_status = attempt["error"], exc.status
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
                chunks = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("total time exceeded")
                content = b"".join(chunks)
                status, headers = resp.status_code, resp.headers
        except httpx.TimeoutException:
            raise _Retryable(f"no complete answer within timeout_s = {judge.timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection to {judge.base_url} failed ({type(exc).__name__}: {exc})") from None
        if 200 <= status < 300:
            try:
                return parse_reply(judge, content), status
            except WireError as exc:
                raise _Final(f"HTTP {status} but {exc}", status=status) from None
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
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, encoding="utf-8", errors="replace", env=env, start_new_session=True)
        except FileNotFoundError:
            raise _Final(f"judge command not found: {argv[0]!r}") from None
        except PermissionError:
            raise _Final(f"judge command is not executable: {argv[0]!r}") from None
        with self._procs_lock:
            self._procs.add(proc)
        try:
            out, err = proc.communicate(text, timeout=judge.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise _Retryable(f"the command gave no answer within timeout_s = {judge.timeout_s:g} s") from None
        finally:
            with self._procs_lock:
                self._procs.discard(proc)
        if proc.returncode != 0:
            tail = (err or "").strip()[-STDERR_TAIL:]
            raise _Retryable(f"the command exited with {proc.returncode}" + (f": {tail}" if tail else ""))
        return Reply(out, None, None, None, False, judge.model, None), None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
