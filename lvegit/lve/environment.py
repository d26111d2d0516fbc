"""An LVE's environment: the state its agent acts on (environment/state.json) and the code of its tools and
checks (environment/*.py, one package), read here as data. The code runs only in the sandbox
(lvegit.checkers.environment); this module reads files and fills the state's templates.

Every string of the state is a template (lve/template.py): `{name}` is an injection vector (test.json's
`environment.injections`, with its default text) or a prompt parameter, filled from an instance's args, so
that an LVE's instances vary the attack where the agent reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base.files import FileProblem, ensure_inside, parse_json, read_text
from lvegit.lve.template import FilledTooLarge, fill, placeholders, utf8_size

ENVIRONMENT_DIR = "environment"
STATE_FILE = "state.json"
TOOLS_MODULE = "tools"  # environment/tools.py: the tool functions
CHECKS_MODULE = "checks"  # environment/checks.py: security and utility
CHECKS = ("security", "utility")
MAX_SOURCE_BYTES = 512 * 1024  # one module of environment code
MAX_SOURCES = 64  # modules of one environment
MAX_STATE_BYTES = 16 * 1024 * 1024
# What the state's templates fill to, together (UTF-8): each string is a template, and a thousand strings
# that each hold a long injection's text would otherwise be a thousand copies of it.
MAX_FILLED_STATE_BYTES = 2 * MAX_STATE_BYTES


@dataclass(frozen=True)
class Environment:
    """test.json's `environment`: the injection vectors and their default texts."""

    injections: dict[str, str] = field(default_factory=dict)

    def values(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """What fills the state's templates: each injection's default, the instance's values over them."""
        return {**self.injections, **params}


def environment_folder(lve_dir: Path) -> Path:
    return lve_dir / ENVIRONMENT_DIR


def read_sources(lve_dir: Path) -> dict[str, str]:
    """The text of every environment/*.py by module name (`tools`, `checks`, ...); a FileProblem names the
    file that cannot be read (a link out of the LVE, too large, not text) or too many modules."""
    folder = environment_folder(lve_dir)
    if not folder.is_dir():
        return {}
    ensure_inside(lve_dir, folder)
    paths = sorted(p for p in folder.glob("*.py") if p.is_symlink() or not p.is_dir())
    if len(paths) > MAX_SOURCES:
        raise FileProblem(f"{ENVIRONMENT_DIR}/ holds {len(paths)} modules (at most {MAX_SOURCES})")
    sources = {}
    for path in paths:
        if not path.stem.isidentifier():
            raise FileProblem(f"{ENVIRONMENT_DIR}/{path.name}: not a module name (letters, digits, _)")
        try:
            sources[path.stem] = read_text(path, MAX_SOURCE_BYTES, within=lve_dir)
        except FileProblem as exc:
            raise FileProblem(f"{ENVIRONMENT_DIR}/{path.name}: {exc}", exc.line, exc.column) from None
    return sources


def read_state(lve_dir: Path) -> Any:
    """The state as state.json holds it (a JSON object; its strings still templates); a FileProblem names
    the line of invalid JSON."""
    path = environment_folder(lve_dir) / STATE_FILE
    if not path.exists() and not path.is_symlink():
        raise FileProblem(f"{ENVIRONMENT_DIR}/{STATE_FILE} is missing: the environment's initial state")
    try:
        state = parse_json(read_text(path, MAX_STATE_BYTES, within=lve_dir))
    except FileProblem as exc:
        raise FileProblem(f"{ENVIRONMENT_DIR}/{STATE_FILE}: {exc}", exc.line, exc.column) from None
    if not isinstance(state, dict):
        raise FileProblem(f"{ENVIRONMENT_DIR}/{STATE_FILE}: must be a JSON object")
    return state


def state_fields(state: Any, where: str = "") -> list[tuple[str, str]]:
    """Every `{name}` of the state's strings with the JSON path of the string (TemplateError: malformed)."""
    if isinstance(state, str):
        return [(where, name) for name in placeholders(state)]
    if isinstance(state, dict):
        return [found for key, value in state.items() for found in state_fields(value, f"{where}.{key}")]
    if isinstance(state, list):
        return [
            found for index, value in enumerate(state) for found in state_fields(value, f"{where}[{index}]")
        ]
    return []


def filled_state(state: Any, values: Mapping[str, Any]) -> Any:
    """The state with every string filled from `values` (TemplateError: a field without a value, or strings
    that fill to more than MAX_FILLED_STATE_BYTES together, raised before the one that passes it is made)."""
    left = MAX_FILLED_STATE_BYTES

    def filled(part: Any) -> Any:
        nonlocal left
        if isinstance(part, str):
            try:
                text = fill(part, values, limit=left)
            except FilledTooLarge:
                raise FilledTooLarge(
                    f"{STATE_FILE}'s strings fill to more than {MAX_FILLED_STATE_BYTES:,} bytes together"
                ) from None
            left -= utf8_size(text)
            return text
        if isinstance(part, dict):
            return {key: filled(value) for key, value in part.items()}
        if isinstance(part, list):
            return [filled(value) for value in part]
        return part

    return filled(state)
