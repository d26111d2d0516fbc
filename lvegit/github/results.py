"""The results file: what check mode found, versioned, and read back by comment mode as hostile data.

Comment mode runs with a write token and must not trust the file a pull request's job produced: it is
size-limited, parsed, checked field by field against the schema below, and every string in it is escaped
when rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lvegit.errors import UsageError
from lvegit.escape import mask

SCHEMA = "lvegit-results"
VERSION = 1
MAX_RESULTS_BYTES = 32 * 1024 * 1024
FAIL_ON = ("invalid", "mismatch", "error", "live-disagree", "live-error")
TOTALS = (
    "changed",
    "removed",
    "invalid",
    "reproduced",
    "mismatch",
    "skipped",
    "error",
    "live_agree",
    "live_disagree",
    "live_error",
    "appended",
)

# The shape of the file: a type, or a dict of fields, or a one-element list for "list of".
_PROBLEM = {"file": str, "field": str, "line": (int, type(None)), "message": str}
_REPLAYED = {
    "file": str,
    "line": (int, type(None)),
    "recorded": (bool, type(None)),
    "replayed": (bool, type(None)),
    "status": str,
    "reason": (str, type(None)),
}
_LIVE = {
    "file": (str, type(None)),
    "line": (int, type(None)),
    "recorded": (bool, type(None)),
    "verdicts": [bool],
    "unsafe": int,
    "runs": int,
    "interval_95": [(int, float)],
    "agree": (bool, type(None)),
    "errors": [str],
}
_APPENDED = {"file": str, "passed": (bool, type(None)), "response": (str, dict, list, type(None))}
LIVE_FIELDS = tuple(_LIVE)
_LVE = {
    "path": str,
    "valid": bool,
    "errors": [_PROBLEM],
    "warnings": [_PROBLEM],
    "replay": {"reproduced": int, "mismatch": int, "skipped": int, "error": int},
    "replayed": [_REPLAYED],
    "live": [_LIVE],
    "appended": [_APPENDED],
}
SHAPE: dict[str, Any] = {
    "schema": str,
    "version": int,
    "lvegit": str,
    "repository": str,
    "event": str,
    "pull_request": (int, type(None)),
    "base_sha": (str, type(None)),
    "head_sha": str,
    "live": {"enabled": bool, "reason": str},
    "lves": [_LVE],
    "removed": [str],
    "totals": dict.fromkeys(TOTALS, int),
    "failures": [str],
    "passed": bool,
}


def _check(value: Any, shape: Any, where: str) -> None:
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise UsageError(f"results file: {where or 'top level'} must be an object")
        for key, inner in shape.items():
            if key not in value:
                raise UsageError(f"results file: {where}{'.' if where else ''}{key} is missing")
            _check(value[key], inner, f"{where}{'.' if where else ''}{key}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise UsageError(f"results file: {where} must be a list")
        for index, item in enumerate(value):
            _check(item, shape[0], f"{where}[{index}]")
    else:
        types = shape if isinstance(shape, tuple) else (shape,)
        if isinstance(value, bool) and bool not in types:  # bool is an int to Python, not to the schema
            raise UsageError(f"results file: {where} has the wrong type")
        if not isinstance(value, types):
            raise UsageError(f"results file: {where} has the wrong type")


def validate(data: Any) -> dict[str, Any]:
    _check(data, SHAPE, "")
    if data["schema"] != SCHEMA or data["version"] != VERSION:
        raise UsageError(f"results file: not a {SCHEMA} file of version {VERSION}")
    return dict(data)


def load(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        if size > MAX_RESULTS_BYTES:
            raise UsageError(f"results file {path} is too large ({size} bytes)")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the results file {path}: {exc}") from None
    return validate(data)


def write(path: Path, data: dict[str, Any]) -> None:
    validate(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(mask(json.dumps(data, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8")


def failures(totals: dict[str, int], fail_on: tuple[str, ...]) -> list[str]:
    """Why the check fails under the policy (empty: it passes)."""
    counts = {
        "invalid": ("invalid LVEs", totals["invalid"]),
        "mismatch": ("recorded verdicts that no longer reproduce", totals["mismatch"]),
        "error": ("instances that could not be replayed", totals["error"]),
        "live-disagree": ("instances whose live verdict differs", totals["live_disagree"]),
        "live-error": ("live re-runs that failed", totals["live_error"]),
    }
    return [f"{count} {what}" for key, (what, count) in counts.items() if key in fail_on and count]


def parse_fail_on(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if names == ("none",):
        return ()
    unknown = [name for name in names if name not in FAIL_ON]
    if unknown:
        raise UsageError(f"input 'fail-on': unknown {unknown[0]!r}; use none or some of {', '.join(FAIL_ON)}")
    return names
