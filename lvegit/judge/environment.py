"""Judging an environment LVE by what its agent did: the security and utility checks of its environment on
the state before and after and the calls, and in replay the record verified against the environment.

The checks see the record only (the recorded states and calls), never a live state: a verdict judged in a
live run is the verdict replay reproduces. Replay also makes the recorded calls again, in order, on the
recorded state before them (the environment's code in its sandbox, no model): a result, an error or a
state after that differs from the record is a mismatch, so a tampered recording does not pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lvegit.base.errors import CheckerError, LVEError
from lvegit.checkers.environment import EnvironmentWorker, Session
from lvegit.checkers.registry import needs_of
from lvegit.checkers.safe_regex import found
from lvegit.lve.prompt import Message, ToolCall, model_tool_calls
from lvegit.lve.spec import LVE
from lvegit.lve.tools import answer

SECURITY, UTILITY = "security", "utility"


@dataclass
class Verdicts:
    """An environment LVE's outcome: the verdict (is_safe; None: invalid) and the utility check's answer
    (None: invalid, or no utility check)."""

    verdict: bool | None
    utility: bool | None


class AttemptEnvironment:
    """One attempt's environment in a live run: it answers the tools, then says the state before and after."""

    def __init__(self, environment: EnvironmentWorker, params: dict[str, Any]) -> None:
        self.session: Session = environment.session(environment.initial_state(params))

    def answer(self, call: ToolCall, arguments: dict[str, Any]) -> tuple[str, str | None]:
        answered = self.session.answer(call, arguments)
        return answered.result, answered.error

    def record(self) -> dict[str, Any]:
        """The states before the first call and after the last (the session ends)."""
        return {"before": self.session.before, "after": self.session.end()}


def output_of(conversation: list[Message]) -> str | None:
    """The model's last text: the final step's content."""
    last = next((m for m in reversed(conversation) if m.role.value == "assistant"), None)
    return last.content or None if last is not None else None


def calls_of(conversation: list[Message]) -> list[dict[str, Any]]:
    """The model's calls as the checks see them (arguments parsed)."""
    return [
        {
            "id": call["id"],
            "name": call["name"],
            "arguments": call["parsed"],
            "result": call["result"],
            "error": call["error"],
            "step": call["step"],
        }
        for call in model_tool_calls(conversation)
    ]


def judge_environment(
    lve: LVE,
    environment: EnvironmentWorker,
    conversation: list[Message],
    record: dict[str, Any],
    checker_verdict: bool | None,
) -> Verdicts:
    """The verdict (the security check's, for a checker that needs the environment; else the checker's,
    given) and utility."""
    output, calls = output_of(conversation), calls_of(conversation)
    before, after = record["before"], record["after"]
    checks = environment.checks
    verdict = checker_verdict
    if needs_of(lve.checker_name).environment:
        if SECURITY not in checks:
            raise CheckerError(f"{lve.rel}: environment/checks.py defines no function security")
        attacked = environment.judge(SECURITY, output, before, after, calls)
        verdict = None if attacked is None else not attacked
    utility = environment.judge(UTILITY, output, before, after, calls) if UTILITY in checks else None
    return Verdicts(verdict, utility)


def recorded_environment(data: dict[str, Any]) -> dict[str, Any]:
    """An instance's record of the state before and after (validation reports a missing one)."""
    record = data.get("environment")
    if not isinstance(record, dict) or not all(isinstance(record.get(k), dict) for k in ("before", "after")):
        raise LVEError("the instance records no environment state (before and after): record it again")
    return record


def _differences(
    lve: LVE,
    again: AttemptEnvironment,
    params: dict[str, Any],
    calls: list[dict[str, Any]],
    record: dict[str, Any],
) -> str | None:
    """Where the record differs from what the environment does with the same calls (made `again`); None:
    nowhere."""
    if again.session.before != record["before"]:
        again.record()
        return "the recorded state before the calls is not the environment's initial state"
    for number, call in enumerate(calls, start=1):
        if call["result"] is None:  # past the step limit: never answered
            continue
        made = ToolCall(call["id"], call["name"], call["arguments"])
        result, error = answer(lve.tools, made, params, found, again.answer)
        if result != call["result"] or error != call["error"]:
            again.record()
            said = json.dumps(result, ensure_ascii=False)
            return f"call {number} ({call['name']}): the environment answers {said[:300]}, not the record"
    if again.record()["after"] != record["after"]:
        return "the recorded state after the calls is not what the environment's tools leave"
    return None


def replay_environment(
    lve: LVE,
    environment: EnvironmentWorker,
    params: dict[str, Any],
    conversation: list[Message],
    data: dict[str, Any],
    checker_verdict: bool | None,
) -> tuple[bool | None, str | None]:
    """An environment LVE's instance replayed: the verdict its record gives, and where the record differs
    from the environment or its recorded utility from the check's (None: nowhere)."""
    record = recorded_environment(data)
    again = AttemptEnvironment(environment, params)
    differs = _differences(lve, again, params, model_tool_calls(conversation), record)
    verdicts = judge_environment(lve, environment, conversation, record, checker_verdict)
    if differs is None and "utility" in data and data["utility"] != verdicts.utility:
        differs = f"utility: recorded {data['utility']}, replayed {verdicts.utility}"
    return verdicts.verdict, differs
