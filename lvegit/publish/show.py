"""One LVE as `lvegit show` presents it: what it tests, with what, and what was recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.lve.ids import id_of
from lvegit.lve.prompt import Message
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, blocking_errors, load_lve
from lvegit.publish.documents import (
    VERSION,
    InstanceFileCounts,
    ShowDocument,
    ShownChecker,
    ShownMessage,
    ShownPrompt,
    ShownRun,
    shown,
)


def _messages(messages: list[Message]) -> list[ShownMessage]:
    return [ShownMessage(**message.as_json()) for message in messages]


def _prompt(lve: LVE) -> ShownPrompt:
    """The prompt as messages, or for a multi-run LVE each run's messages and repetitions."""
    if lve.runs is not None:
        runs = [
            ShownRun(name=r.name, repetitions=r.repetitions, messages=_messages(r.messages)) for r in lve.runs
        ]
        return ShownPrompt(runs=runs)
    return ShownPrompt(messages=_messages(lve.prompt or []))


def lve_view(repo: Repository, lve_dir: Path, instances: int) -> dict[str, Any]:
    """An LVE's fields, its instance counts per file (safe and unsafe as recorded) and its first
    `instances` instances: the lvegit-show document. An LVE that does not load is a UsageError naming its
    first problem."""
    lve, problems, _text = load_lve(repo, lve_dir)
    blocking = blocking_errors(problems)
    if lve is None or blocking:
        raise UsageError((blocking or problems.errors)[0].refusal())
    files = []
    first: list[dict[str, Any]] = []
    for recorded in lve.recorded():
        safe = sum(instance.passed is True for instance in recorded.instances)
        unreadable = len(recorded.problems.errors)
        unsafe = sum(instance.passed is False for instance in recorded.instances)  # invalid ones are neither
        invalid = len(recorded.instances) - safe - unsafe
        files.append(
            InstanceFileCounts(
                file=recorded.shown, safe=safe, unsafe=unsafe, unreadable_lines=unreadable, invalid=invalid
            )
        )
        for instance in recorded.instances[: max(0, instances - len(first))]:
            first.append({"file": instance.file, "line": instance.line, **instance.data})
    document = ShowDocument(
        schema="lvegit-show",
        version=VERSION,
        id=id_of(repo, lve_dir),
        path=lve.rel,
        description=lve.description,
        model=lve.model,
        checker=ShownChecker(name=lve.checker_name, args=lve.checker_args),
        prompt=_prompt(lve),
        prompt_parameters=lve.prompt_parameters,
        default_model_args=lve.default_model_args,
        tags=lve.tags,
        author=lve.author,
        instance_files=files,
        instances=first,
        tools=[tool.as_declared() for tool in lve.tools.values()],
        max_tool_steps=lve.step_limit if lve.tools else None,  # 0: calls recorded, never answered
    )
    return shown(document)
