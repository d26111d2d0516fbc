"""`lvegit record`: run one new instance of each selected LVE and append it (postprocessed) to its
instances."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, path_inside
from lvegit.base.settings import RetryPolicy
from lvegit.lve.spec import LVE
from lvegit.models.routing import ModelPool
from lvegit.run.attempt import Attempt, attempt_id
from lvegit.run.runner import Recorder, Runner, Task

INSTANCE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\.jsonl$")


def parse_params(
    lve: LVE, pairs: tuple[str, ...], strings: tuple[str, ...] = (), others: bool = False
) -> dict[str, Any]:
    """`--param NAME=VALUE` values are read as JSON when they parse (`12` is a number, `["a"]` a list,
    `true` a boolean), else taken as text; `--param-str NAME=VALUE` is always text. An environment's
    injection vectors take values as prompt parameters do, and have defaults. Recorded instances
    hold typed values, and checkers compute with them (`int(a) + int(b)` or `a + b`). `others`: the
    values are given to several LVEs at once, so a name this LVE does not declare is another's."""
    params: dict[str, Any] = {}
    given = [(pair, False) for pair in pairs] + [(pair, True) for pair in strings]
    for pair, as_text in given:
        name, separator, text = pair.partition("=")
        option = "--param-str" if as_text else "--param"
        if not separator:
            raise UsageError(f"{option} takes NAME=VALUE, not {pair!r}")
        if name not in lve.parameter_names and others:
            continue
        if name not in lve.parameter_names:
            known = ", ".join(lve.parameter_names) or "none"
            raise UsageError(f"{lve.rel} has no prompt parameter '{name}' (its parameters: {known})")
        if name in params:
            raise UsageError(f"{option} {name}=...: a value for '{name}' is given twice")
        params[name] = text if as_text else _typed(text)
    missing = [name for name in lve.prompt_parameters if name not in params]
    if missing:
        raise UsageError(f"give a value for every prompt parameter: missing --param {missing[0]}=...")
    return params


def _typed(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    # A bare NaN or Infinity is no JSON a recording should hold, and `null` is no parameter value.
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return text
    return value


def check_file_name(file_name: str) -> None:
    if not INSTANCE_FILE.match(file_name):
        raise UsageError(f"--file {file_name!r}: give a plain file name ending in .jsonl")


def recording(lve: LVE, params: dict[str, Any], temperature: float | None, file_name: str) -> Task:
    """The task that records one new instance of `lve` into instances/FILE."""
    try:
        target = path_inside(lve.dir, f"instances/{file_name}")
    except FileProblem as exc:
        raise UsageError(f"--file {file_name!r}: {exc}") from None
    overrides: dict[str, Any] = {"temperature": temperature} if temperature is not None else {}
    args = {**lve.default_model_args, **overrides, **params}
    attempt = Attempt(
        id=attempt_id(lve.rel, "record", args, lve.model), lve=lve.rel, model=lve.model, args=args
    )
    return Task(lve, attempt, target, new_recording=True)


def record_instances(
    pool: ModelPool, tasks: list[Task], author: str | None, policy: RetryPolicy
) -> list[Attempt]:
    """Run the recordings (at once, as a run does) and append each complete one; the attempts in order."""
    for task in tasks:
        for model_id in task.models:  # the model's and its judge's: no route, no key: a usage error first
            pool.get(model_id)
    return Runner(pool, policy=policy, recorder=Recorder(author=author)).run(tasks)
