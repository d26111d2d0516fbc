"""Options shared by several commands, defined once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from lvegit.repo import Repository

F = TypeVar("F", bound=Callable[..., Any])


def repo_option(function: F) -> F:
    return click.option(
        "--repo",
        "repo_path",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="The LVE repository (default: found by walking up from the current directory "
        "to .lverepo or a repository/ folder).",
    )(function)


def format_option(function: F) -> F:
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format.",
    )(function)


def selection_options(function: F) -> F:
    """LVE paths (directories of LVEs, folders holding LVEs, or files inside one) and --all."""
    function = click.option("--all", "all_lves", is_flag=True, help="Every LVE of the repository.")(function)
    return click.argument("paths", nargs=-1, type=click.Path(path_type=Path))(function)


def open_repository(repo_path: Path | None) -> Repository:
    return Repository.discover(repo_path)
