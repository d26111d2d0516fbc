"""The lambda worker's side (see lvegit.checkers.lambda_worker): a child of the sandbox launcher that
evaluates checker lambdas, confined as a custom checker's worker is (its address space limited too), and
answers each as it is done. Imported by the
launcher (lvegit.checkers.worker), so that a worker it forks starts at once."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import regex  # noqa: F401  # imported before the launcher forks a worker: lambdas' `re` is regex (see safe_regex)

from lvegit.checkers.numbers import normalize_number
from lvegit.checkers.safe_lambda import compile_lambda

FLUSH_SECONDS = 0.001


def _reduced(value: Any, reduce: str) -> Any:
    if reduce == "truth":
        return bool(value)
    number = normalize_number(value)
    return None if number is None else str(number)


_TRUTHS = {True: "true", False: "false"}


def _evaluate(call: dict[str, Any]) -> str:
    """The call's reply line (without its newline)."""
    started = time.perf_counter()
    try:
        value = _reduced(compile_lambda(call["f"])(*call["a"], **call["k"]), call["r"])
    except MemoryError:
        reply: dict[str, Any] = {"ok": False, "type": "MemoryError", "message": ""}
    except Exception as exc:  # the lambda's failure, reported; the worker lives on
        reply = {"ok": False, "type": type(exc).__name__, "message": str(exc)[:2000]}
    else:  # the common reply written directly: json.dumps took a quarter of a verdict's time here
        shown = _TRUTHS[value] if type(value) is bool else json.dumps(value)
        return f'{{"ok": true, "v": {shown}, "s": {time.perf_counter() - started!r}}}'
    reply["s"] = time.perf_counter() - started
    return json.dumps(reply)


def serve(isolation: list[str], may_run: bool) -> None:
    """In a child the launcher forked and confined (worker.become_worker): say how it is confined
    ({"ready": true, "isolation": [...], "confined": bool}), then, where it may run lambdas, answer each
    batch's calls, a line each, until stdin closes. Its stdin, stdout and stderr are lvegit's pipes."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    replies.write(json.dumps({"ready": True, "isolation": isolation, "confined": may_run}) + "\n")
    replies.flush()
    if not may_run:
        return
    for line in sys.stdin:
        flushed = time.perf_counter()
        for call in json.loads(line):
            try:
                reply = _evaluate(call)
            except MemoryError:  # a reply too large to write
                reply = json.dumps({"ok": False, "type": "MemoryError", "message": "", "s": 0.0})
            replies.write(reply + "\n")
            # lvegit times the verdict it waits for from the last reply it read: it needs them as they come,
            # give or take a millisecond (quick verdicts go together)
            if time.perf_counter() - flushed > FLUSH_SECONDS:
                replies.flush()
                flushed = time.perf_counter()
        replies.flush()
