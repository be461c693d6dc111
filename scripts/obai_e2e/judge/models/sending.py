"""Sending a round's requests: ``concurrency`` at a time, in order, while the budget admits them.

Each request runs on a daemon thread, so an interrupted run ends at once instead of
waiting for requests in flight (judge commands still running are ended with everything
they started). Replies are handed back on the scheduling thread, one at a time.
"""
from __future__ import annotations

import threading
from queue import Queue
from typing import Callable

from .client import Asker
from .config import Judge, PanelConfig


def send(cfg: PanelConfig, asker: Asker, queue: list, admit: Callable[..., bool], on_reply: Callable[..., None],
         before_retry: Callable[..., bool] | None = None) -> list:
    """Ask every queued ``(batch, text, judge, key, key_sha)``; returns the requests never sent.

    ``admit(batch, text, judge)`` is asked before each request is sent (the budget: the
    first refusal leaves it and every later one unsent); ``before_retry(batch, text,
    judge, attempt)`` before each retry of one; ``on_reply(*request, result)`` gets each
    result.
    """
    finished: Queue = Queue()

    def work(token: int, b: dict, judge: Judge, text: str) -> None:
        hook = None if before_retry is None else (lambda attempt: before_retry(b, text, judge, attempt))
        try:
            finished.put((token, asker.ask(judge, text, before_retry=hook)))
        except BaseException as exc:  # noqa: BLE001 - handed to the scheduler, which raises it
            finished.put((token, exc))

    pending, running, token, unsent = list(queue), {}, 0, []
    try:
        while pending or running:
            while pending and len(running) < cfg.concurrency:
                b, text, judge, _key, _key_sha = pending[0]
                if not admit(b, text, judge):
                    unsent, pending = pending, []  # the budget is reached: nothing more is sent
                    break
                token += 1
                running[token] = pending.pop(0)
                threading.Thread(target=work, args=(token, b, judge, text), daemon=True,
                                 name=f"judge-{judge.name}-{b['index']}").start()
            if not running:
                break
            done, result = finished.get()
            if isinstance(result, BaseException):
                raise result
            on_reply(*running.pop(done), result)
    except BaseException:
        asker.abort()
        raise
    asker.close()
    return unsent
