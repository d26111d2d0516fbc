"""An LVE draft and how it is written: test.json, README.md and the instances, into a folder of its own
that must not exist (nothing is ever overwritten). What the scan did not say (a checker for a detector
lvegit has no counterpart of, a judge model) is the placeholder `lvegit validate` reports."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base.errors import LVEError, UsageError
from lvegit.base.files import FileProblem, ensure_inside, write_inside
from lvegit.lve.problems import PLACEHOLDER
from lvegit.lve.repo import REPOSITORY_DIR, TEST_FILE, Repository, model_folder
from lvegit.publish.readme import readme_of, write_readme


def segment(text: str) -> str:
    """A folder name from a probe's or a plugin's name: lower case, letters, digits and '_'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60] or "finding"


def model_id(*names: str) -> str:
    """A model id from a scanner's names for it (a generator and a model, a provider's parts): each part
    kept to the characters a model id holds, empty parts and `.`/`..` dropped (a NUL or a slash in a
    scanner's field would otherwise become an odd or nested folder); a missing provider or model is
    `unknown`, so every draft has a model folder of its own."""
    parts = [
        cleaned
        for name in names
        for part in str(name).split("/")
        if (cleaned := re.sub(r"[^A-Za-z0-9._:-]", "", part).strip("."))
        and re.search(r"[A-Za-z0-9]", cleaned)
    ]
    while len(parts) < 2:
        parts.append("unknown")
    return "/".join(parts)


def json_value(value: Any) -> Any:
    """`value` as standard JSON holds it: a score of infinity or NaN (which json.dumps would write as
    Infinity or NaN, no JSON reader's) as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: json_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_value(item) for item in value]
    return value


def literal(text: str) -> str:
    """Text as a prompt template holds it literally (its braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def as_object(value: Any) -> dict[str, Any]:
    """A scanner's field as an object (anything else counts as an empty one)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def placeholder(what: str) -> str:
    return f"{PLACEHOLDER}: {what}"


@dataclass
class Draft:
    category: str
    name: str
    model: str
    description: str
    checker_args: dict[str, Any]
    prompt: list[dict[str, Any]]
    parameters: list[str]
    source: dict[str, Any]  # tool, version, run: in each instance's run_info and a tag
    note: str  # what the README says of where it came from
    instances: list[dict[str, Any]] = field(default_factory=list)

    def add_finding(self, args: dict[str, Any], response: str, run_info: dict[str, Any]) -> None:
        """A failing output of the scan, as an instance: unsafe, with where in the scan it came from."""
        self.instances.append({"args": args, "response": response, "passed": False, "run_info": run_info})

    @property
    def rel(self) -> str:
        return f"{REPOSITORY_DIR}/{self.category}/{self.name}/{model_folder(self.model)}"


README = """# {name}

{description}

{note}

This is a draft: `lvegit validate {path}` says what is left to fill in (the placeholders
`<please fill in>`), and `lvegit replay {path}` whether the checker agrees with the scanner's verdicts.
"""


def write_drafts(repo: Repository, drafts: list[Draft], author: str | None) -> tuple[list[str], list[str]]:
    """Write each draft whose folder does not exist yet: (the LVEs written, those left as they were). A
    draft is written whole or not at all."""
    written, existing = [], []
    for draft in drafts:
        lve_dir = repo.root / draft.rel
        if os.path.lexists(lve_dir):
            existing.append(draft.rel)
            continue
        created = [folder for folder in (lve_dir, *lve_dir.parents) if not os.path.lexists(folder)]
        try:
            ensure_inside(repo.lve_root, lve_dir, f"{REPOSITORY_DIR}/")
            _write(repo, draft, author)
        except (FileProblem, LVEError) as exc:
            _remove(created)
            raise UsageError(f"cannot write {draft.rel}: {exc}") from None
        written.append(draft.rel)
    return written, existing


def _remove(created: list[Path]) -> None:
    """Take back the folders a draft that could not be written created (innermost first)."""
    if created:
        shutil.rmtree(created[0], ignore_errors=True)
    for folder in created[1:]:
        try:
            folder.rmdir()
        except OSError:
            return


def _readme_text(text: str) -> str:
    """A scanner's text in a draft's README: no HTML comment, so none can pass for lvegit's markers."""
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def _write(repo: Repository, draft: Draft, author: str | None) -> None:
    lve_dir = repo.root / draft.rel
    tool = str(draft.source.get("tool"))
    test = {
        "description": draft.description,
        "model": draft.model,
        "checker_args": draft.checker_args,
        "prompt": draft.prompt,
        "prompt_parameters": draft.parameters,
        "tags": [
            {"name": "severity", "value": "medium"},
            {"name": "source", "value": " ".join(str(v) for v in draft.source.values() if v)},
        ],
        "author": author or tool,
    }
    lines = "".join(
        json.dumps(
            json_value(
                {**instance, "author": author or tool, "run_info": {**draft.source, **instance["run_info"]}}
            ),
            allow_nan=False,
        )
        + "\n"
        for instance in draft.instances
    )
    readme = README.format(
        name=draft.name,
        description=_readme_text(draft.description),
        note=_readme_text(draft.note),
        path=draft.rel,
    )
    files = {
        TEST_FILE: json.dumps(json_value(test), indent=4, ensure_ascii=False, allow_nan=False) + "\n",
        f"instances/{segment(tool)}.jsonl": lines,
        "README.md": readme,
    }
    for relative, content in files.items():
        write_inside(lve_dir, lve_dir / relative, content.encode("utf-8"))
    write_readme(readme_of(repo, lve_dir))
