"""The Jinja2 environment of each kind of document lvegit writes from templates: the site's HTML pages
(autoescaped), the PR comment and the README sections (markdown, escaped by the filters of
lvegit.base.escape that each template applies where it writes a value)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def environment(package: str, autoescape: bool, filters: dict[str, Callable[..., Any]]) -> Any:
    """The templates in `package`'s templates/ folder: blocks on lines of their own leave no line,
    an undefined name is an error, and each filter of `filters` is there by its name."""
    import jinja2  # here: only the commands that write documents import it

    made = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    made.filters.update(filters)
    return made
