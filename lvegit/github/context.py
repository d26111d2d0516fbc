"""GitHub's standard environment and event payloads, read into what the action needs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lvegit.base.errors import UsageError

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
EVENTS = (*PULL_REQUEST_EVENTS, "push", "workflow_dispatch", "workflow_run")


def action_input(name: str, default: str = "") -> str:
    """An action input: GitHub passes `foo-bar` as INPUT_FOO-BAR; INPUT_FOO_BAR is accepted too."""
    upper = name.upper()
    for key in (f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}"):
        value = os.environ.get(key)
        if value is not None and value.strip():
            return value.strip()
    return default


def flag(name: str, default: bool) -> bool:
    value = action_input(name, "true" if default else "false").lower()
    if value not in ("true", "false", "yes", "no", "1", "0"):
        raise UsageError(f"input '{name}' must be true or false, not {value!r}")
    return value in ("true", "yes", "1")


@dataclass(frozen=True)
class RunOrigin:
    """The run a workflow_run event follows (GitHub's word): the one that uploaded the results artifact."""

    path: str  # its workflow file
    event: str  # what triggered it
    head_label: str = ""  # the branch it ran for, as `owner:branch` (GitHub's `head` filter of pulls)


@dataclass(frozen=True)
class Event:
    """What one run of the action is about."""

    name: str
    base: str | None  # the revision to compare with; None: no comparison (all LVEs)
    head: str
    pull_request: int | None = None
    origin: RunOrigin | None = None  # a workflow_run event's run


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _sha(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"the event payload has no {where}")
    return value.strip()


def _pull_request(payload: Any, base: str | None) -> tuple[str | None, str, int | None]:
    pull = _get(payload, "pull_request")
    return (
        base or _sha(_get(pull, "base", "sha"), "pull_request.base.sha"),
        _sha(_get(pull, "head", "sha"), "pull_request.head.sha"),
        _get(pull, "number"),
    )


def _push(payload: Any, base: str | None) -> tuple[str | None, str, int | None]:
    before = _get(payload, "before")
    zero = isinstance(before, str) and set(before) == {"0"}  # a new branch: nothing to compare with
    return base or (None if zero or not before else before), _sha(_get(payload, "after"), "after"), None


def _workflow_run(payload: Any, base: str | None) -> tuple[str | None, str, int | None]:
    run = _get(payload, "workflow_run")
    pulls = _get(run, "pull_requests") or []
    number = _get(pulls[0], "number") if pulls and isinstance(pulls, list) else None
    head = _sha(_get(run, "head_sha"), "workflow_run.head_sha")
    return base, head, number if isinstance(number, int) else None


def _workflow_dispatch(payload: Any, base: str | None) -> tuple[str | None, str, int | None]:
    dispatched = _get(payload, "inputs", "base")
    head = os.environ.get("GITHUB_SHA") or "HEAD"
    return base or (dispatched if isinstance(dispatched, str) and dispatched else None), head, None


# Each event's base, head and pull request number, from its payload and the base the inputs give (if any).
_READERS: dict[str, Callable[[Any, str | None], tuple[str | None, str, int | None]]] = {
    **{name: _pull_request for name in PULL_REQUEST_EVENTS},
    "push": _push,
    "workflow_run": _workflow_run,
    "workflow_dispatch": _workflow_dispatch,
}


def read_event(name: str | None = None, payload_path: str | None = None, base_override: str = "") -> Event:
    name = name or os.environ.get("GITHUB_EVENT_NAME", "")
    if name not in EVENTS:
        raise UsageError(f"lvegit action handles {', '.join(EVENTS)} events, not {name!r}")
    path = payload_path or os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        raise UsageError(
            "GITHUB_EVENT_PATH is not set: run inside GitHub Actions or set it to an event payload file"
        )
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the event payload {path}: {exc}") from None
    event = Event(name, *_READERS[name](payload, base_override or None))
    if name == "workflow_run":
        run = _get(payload, "workflow_run")
        path, trigger = _get(run, "path"), _get(run, "event")
        owner = str(_get(run, "head_repository", "full_name") or "").split("/")[0]
        branch = _get(run, "head_branch")
        label = f"{owner}:{branch}" if owner and isinstance(branch, str) and branch else ""
        event = replace(event, origin=RunOrigin(str(path or ""), str(trigger or ""), label))
    return event
