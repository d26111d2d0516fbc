"""Conversations of an LVE: the prompts as sent (with holes), filled with responses, and judged."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lvegit.base.errors import CheckerError, LVEError, LvegitError
from lvegit.checkers import BaseChecker, MultiRunBaseChecker
from lvegit.checkers.budget import contributed_verdict
from lvegit.checkers.registry import needs_of
from lvegit.checkers.safe_regex import found
from lvegit.lve.prompt import (
    Message,
    fill_holes,
    fill_messages,
    is_turn,
    turns_of,
    variable_names,
    variables_of,
    with_trailing_hole,
)
from lvegit.lve.spec import LVE
from lvegit.lve.tools import World, answered_step, unique_calls

if TYPE_CHECKING:
    from lvegit.models.base import Completion  # the model's answers: only live runs make them

Pair = tuple[list[Message], list[Message]]  # (prompt as sent, conversation with the responses)


def prompts_to_send(lve: LVE, params: dict[str, Any]) -> list[list[Message]]:
    """Each run's prompt with parameters filled in and its trailing hole; one entry for a single prompt.
    A run is filled once, its repetitions sharing its messages (each filled up to a conversation's bound)."""
    try:
        if lve.runs is None:
            return [with_trailing_hole(fill_messages(lve.prompt or [], params))]
        filled = [with_trailing_hole(fill_messages(run.messages, params)) for run in lve.runs]
    except ValueError as exc:  # TemplateError: a parameter without a value
        raise LVEError(str(exc)) from None
    return [
        list(prompt) for run, prompt in zip(lve.runs, filled, strict=True) for _ in range(run.repetitions)
    ]


@dataclass(frozen=True)
class Step:
    """One request of an attempt: `key` names it within the attempt (run and hole), `messages` are what
    the model sees before the hole."""

    key: str
    messages: list[Message]


def conversation_steps(
    lve: LVE, params: dict[str, Any], world: World | None = None
) -> Generator[list[Step], list[Completion], list[Pair]]:
    """The requests of one attempt, without making them. Each yield is what can be asked now: the next hole
    of every run (the runs of a multi-run prompt are conversations of their own, so they go together);
    `send` takes their completions in the same order; the return value is the filled conversations. The
    live runner awaits the requests of each step; a batch round sends them.

    When the LVE declares tools, a completion that calls them is a step of the model's turn: the calls are
    answered from the tools' declared returns and the same hole is asked again, up to the LVE's
    max_tool_steps; calls past that are recorded unanswered and end the turn. `world`: the attempt's
    environment, which answers the tools declared without returns."""
    prompts = prompts_to_send(lve, params)
    conversations = [list(prompt) for prompt in prompts]
    start = [0] * len(conversations)  # where the next hole of each run is looked for
    taken = [0] * len(conversations)  # tool steps of the turn each run is in
    while True:
        holes = []
        for run, conversation in enumerate(conversations):
            index = next((i for i in range(start[run], len(conversation)) if conversation[i].is_hole), None)
            if index is not None:
                holes.append((run, index))
        if not holes:
            return list(zip(prompts, conversations, strict=True))
        completions = yield [Step(f"{run}.{index}", conversations[run][:index]) for run, index in holes]
        for (run, index), completion in zip(holes, completions, strict=True):
            conversation, hole = conversations[run], conversations[run][index]
            calls = completion.tool_calls if lve.tools else ()
            if calls and taken[run] < lve.step_limit:
                taken[run] += 1
                answered = answered_step(
                    lve.tools, completion.text or None, calls, params, taken[run], conversation, found, world
                )
                conversation[index:index] = answered  # the hole moves on, to be asked again
                start[run] = index + len(answered)
                continue
            if taken[run] or calls:  # the last message of a turn that used tools carries the turn's name
                name = variable_names(conversation)[index]
                step = taken[run] + 1
                conversation[index] = Message(
                    completion.text,
                    hole.role,
                    name,
                    hole.image_url,
                    tool_calls=unique_calls(calls, step),
                    step=step,
                )
            else:
                conversation[index] = Message(completion.text, hole.role, hole.variable, hole.image_url)
            start[run], taken[run] = index + 1, 0


def recorded_pairs(lve: LVE, params: dict[str, Any], response: Any) -> list[Pair]:
    """The conversations of a recorded instance: its response (a string, variables, or one per run)."""
    prompts = prompts_to_send(lve, params)
    if lve.runs is None:
        responses = [response]
    elif not isinstance(response, list) or len(response) != len(prompts):
        raise LVEError(f"the response must be a list with one entry per run ({len(prompts)} runs)")
    else:
        responses = response
    try:
        return [
            (prompt, fill_holes(prompt, recorded, tools=bool(lve.tools)))
            for prompt, recorded in zip(prompts, responses, strict=True)
        ]
    except ValueError as exc:  # the instance does not fit the prompt
        raise LVEError(str(exc)) from None


def recorded_conversations(
    lve: LVE, params: dict[str, Any], response: Any
) -> list[list[dict[str, Any]]] | None:
    """Each run's conversation with `response` filled in, as attempt records keep it; None when the
    response does not fit the prompt (a postprocessed one need not)."""
    try:
        pairs = recorded_pairs(lve, params, response)
    except LvegitError:
        return None
    return [[message.as_json() for message in conversation] for _prompt, conversation in pairs]


def stored_response(lve: LVE, pairs: list[Pair]) -> Any:
    """What an instance records: per run, the last response alone, or every variable when there are several
    (as lve-tools stores it); a list over runs for a multi-run LVE. A turn that used tools is recorded
    whole (`turn_of`)."""
    per_run = []
    for _prompt, conversation in pairs:
        variables = turns_of(conversation) if lve.tools else variables_of(conversation)
        per_run.append(variables if len(variables) > 1 else list(variables.values())[-1])
    return per_run if lve.runs is not None else per_run[0]


def postprocessed(lve: LVE, checker: BaseChecker, response: Any) -> Any:
    """What is stored of a response: the checker's postprocess_response applied to it (to each run's). In
    an LVE with tools it is applied to every text of a turn on its own: the model's text, each call's
    arguments and each tool's result (a result may echo what the model sent)."""

    def text(value: Any) -> Any:
        return checker.postprocess_response(value)

    def turn(value: Any) -> Any:
        if not is_turn(value):
            return text(value)
        steps = []
        for step in value["steps"]:
            if not isinstance(step, dict):  # a turn lvegit wrote: its steps are objects
                raise LVEError("a step of a recorded turn is not an object")
            calls = [
                {key: text(item) if key in ("arguments", "result") else item for key, item in call.items()}
                for call in step.get("tool_calls", [])
            ]
            content = step.get("content")
            steps.append(
                {**step, "content": text(content) if content is not None else None}
                | ({"tool_calls": calls} if "tool_calls" in step else {})
            )
        return {**value, "steps": steps}

    def one(value: Any) -> Any:
        if not lve.tools:
            return text(value)
        if isinstance(value, dict) and not is_turn(value):
            return {name: turn(item) for name, item in value.items()}
        return turn(value)

    return [one(entry) for entry in response] if lve.runs is not None else one(response)


def judge(lve: LVE, checker: BaseChecker, pairs: list[Pair], params: dict[str, Any]) -> bool:
    """The checker's verdict on the conversations of one instance."""
    if isinstance(checker, MultiRunBaseChecker) != lve.is_multi_run:
        needs = "a multi-run checker" if lve.is_multi_run else "a single-run checker"
        raise CheckerError(f"{lve.test_file}: this prompt form needs {needs}; {lve.checker_name} is not one")
    if not needs_of(lve.checker_name).budgeted_here:
        return _verdict(checker, pairs, params)
    with contributed_verdict(lve.rel):  # lvegit's checker at work on the LVE's lambda, pattern or text
        return _verdict(checker, pairs, params)


def _verdict(checker: BaseChecker, pairs: list[Pair], params: dict[str, Any]) -> bool:
    if isinstance(checker, MultiRunBaseChecker):
        return checker.invoke_check_runs([p for p, _ in pairs], [c for _, c in pairs], params)
    prompt_in, prompt_out = pairs[0]
    return checker.invoke_check(prompt_in, prompt_out, params)
