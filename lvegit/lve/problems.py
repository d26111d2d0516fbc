"""Findings about an LVE: each names the file, the field (a JSON path) and, when known, the line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# What lvegit new writes where the author has to fill in; an error while it stays.
PLACEHOLDER = "<please fill in>"

Severity = Literal["error", "warning"]

# The records that the Action's results file holds are these dataclasses themselves: pydantic checks them
# there (closed, no coercion) and generates the file's JSON Schema from them.
RECORD_CONFIG = {"strict": True, "extra": "forbid"}


def location(file: str, line: int | None) -> str:
    """`file:line`, or the file alone when the line is unknown."""
    return file if line is None else f"{file}:{line}"


@dataclass(frozen=True)
class Problem:
    __pydantic_config__ = RECORD_CONFIG

    severity: Severity
    file: str
    field: str
    message: str
    line: int | None = None

    @property
    def what(self) -> str:
        """The finding without its place: `field: message`."""
        return f"{self.field}: {self.message}" if self.field else self.message

    def refusal(self) -> str:
        """Why a command cannot work on the LVE when this is its first problem, and where to see them all."""
        return f"{location(self.file, self.line)}: {self.what} (lvegit validate says more)"

    def render(self) -> str:
        return f"{self.severity}: {location(self.file, self.line)}: {self.what}"

    def as_json(self) -> dict[str, object]:
        """The one JSON form of a finding: in `validate` and `check` output, the cache and the Action's
        results file alike."""
        return {
            "severity": self.severity,
            "file": self.file,
            "field": self.field,
            "message": self.message,
            "line": self.line,
        }


@dataclass
class Problems:
    """Collects problems while loading; `file` is the default file they are reported against."""

    file: str
    items: list[Problem] = field(default_factory=list)

    def error(self, field: str, message: str, line: int | None = None, file: str | None = None) -> None:
        self.items.append(Problem("error", file or self.file, field, message, line))

    def warning(self, field: str, message: str, line: int | None = None, file: str | None = None) -> None:
        self.items.append(Problem("warning", file or self.file, field, message, line))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "warning"]


def is_draft(problems: Problems) -> bool:
    """Whether an LVE is a draft of `lvegit new`: it still holds a placeholder where the author fills in.
    Published pages and stable ids are for LVEs as merged, not for drafts."""
    return any(PLACEHOLDER in problem.message for problem in problems.errors)


def alike(problems: Sequence[Problem]) -> list[tuple[Problem, list[int]]]:
    """Problems that differ only in their line (one cause in many instance lines), together: each first
    one with the lines of all of them, in the order found."""
    groups: dict[tuple[str, str, str, str], tuple[Problem, list[int]]] = {}
    found: list[tuple[Problem, list[int]]] = []
    for problem in problems:
        key = (problem.severity, problem.file, problem.field, problem.message)
        if problem.line is not None and key in groups:
            groups[key][1].append(problem.line)
            continue
        group = (problem, [problem.line] if problem.line is not None else [])
        found.append(group)
        if problem.line is not None:
            groups[key] = group
    return found


def line_ranges(lines: list[int]) -> str:
    """`1-3, 7`: line numbers, runs shortened."""
    runs: list[list[int]] = []
    for number in sorted(lines):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def placed(problem: Problem, lines: list[int]) -> str:
    """Where a group of alike problems is: `file:3`, or `file, 8 lines (1-8)`."""
    if len(lines) > 1:
        return f"{problem.file}, {len(lines)} lines ({line_ranges(lines)})"
    return location(problem.file, problem.line)


def join_path(parent: str, key: str | int) -> str:
    """JSON path of a child: `checker_args.pattern`, `prompt[2].content`."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "an object"
    )


def nearest_name(name: str, known: list[str]) -> str | None:
    """The known name a mistyped one most likely meant (`RegexChekcer` -> RegexChecker), if any is close."""
    from rapidfuzz import fuzz, process

    found = process.extractOne(name, known, scorer=fuzz.ratio, score_cutoff=80)
    return str(found[0]) if found else None


def suggestion(name: str, known: list[str]) -> str:
    """' (did you mean X?)' for a name close to a known one, else ''."""
    near = nearest_name(name, known)
    return f" (did you mean {near}?)" if near else ""
