"""One LVE as `lvegit show` presents it: what it tests, with what, and what was recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.lve.prompt import Message
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, blocking_errors, load_lve


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    return [message.as_json() for message in messages]


def _prompt(lve: LVE) -> dict[str, Any]:
    """The prompt as messages, or for a multi-run LVE each run's messages and repetitions."""
    if lve.runs is not None:
        return {
            "runs": [
                {"name": run.name, "repetitions": run.repetitions, "messages": _messages(run.messages)}
                for run in lve.runs
            ]
        }
    return {"messages": _messages(lve.prompt or [])}


def lve_view(repo: Repository, lve_dir: Path, instances: int) -> dict[str, Any]:
    """An LVE's fields, its instance counts per file (safe and unsafe as recorded) and its first
    `instances` instances. An LVE that does not load is a UsageError naming its first problem."""
    lve, problems, _text = load_lve(repo, lve_dir)
    blocking = blocking_errors(problems)
    if lve is None or blocking:
        first = (blocking or problems.errors)[0]
        raise UsageError(first.refusal())
    files = []
    shown: list[dict[str, Any]] = []
    for recorded in lve.recorded():
        safe = sum(instance.passed for instance in recorded.instances)
        files.append(
            {
                "file": recorded.shown,
                "safe": safe,
                "unsafe": len(recorded.instances) - safe,
                "unreadable_lines": len(recorded.problems.errors),
            }
        )
        for instance in recorded.instances[: max(0, instances - len(shown))]:
            shown.append({"file": instance.file, "line": instance.line, **instance.data})
    return {
        "path": lve.rel,
        "description": lve.description,
        "model": lve.model,
        "checker": {
            "name": lve.checker_name,
            "args": {k: v for k, v in lve.checker_args.items() if k != "checker_name"},
        },
        "prompt": _prompt(lve),
        "prompt_parameters": lve.prompt_parameters,
        "default_model_args": lve.default_model_args,
        "tags": lve.tags,
        "author": lve.author,
        "instance_files": files,
        "instances": shown,
    }
