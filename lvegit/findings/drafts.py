"""An LVE draft and how it is written: test.json, README.md and the instances, into a folder of its own
that must not exist (nothing is ever overwritten). What the scan did not say (a checker for a detector
lvegit has no counterpart of, a judge model) is the placeholder `lvegit validate` reports."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, ensure_inside, write_inside
from lvegit.lve.problems import PLACEHOLDER
from lvegit.lve.repo import REPOSITORY_DIR, TEST_FILE, Repository, model_folder
from lvegit.publish.readme import readme_of, write_readme


def segment(text: str) -> str:
    """A folder name from a probe's or a plugin's name: lower case, letters, digits and '_'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60] or "finding"


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
    """Write each draft whose folder does not exist yet: (the LVEs written, those left as they were)."""
    written, existing = [], []
    for draft in drafts:
        lve_dir = repo.root / draft.rel
        if os.path.lexists(lve_dir):
            existing.append(draft.rel)
            continue
        try:
            ensure_inside(repo.lve_root, lve_dir, f"{REPOSITORY_DIR}/")
            _write(repo, draft, author)
        except FileProblem as exc:
            raise UsageError(f"cannot write {draft.rel}: {exc}") from None
        written.append(draft.rel)
    return written, existing


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
            {**instance, "author": author or tool, "run_info": {**draft.source, **instance["run_info"]}}
        )
        + "\n"
        for instance in draft.instances
    )
    readme = README.format(name=draft.name, description=draft.description, note=draft.note, path=draft.rel)
    files = {
        TEST_FILE: json.dumps(test, indent=4, ensure_ascii=False) + "\n",
        f"instances/{segment(tool)}.jsonl": lines,
        "README.md": readme,
    }
    for relative, content in files.items():
        write_inside(lve_dir, lve_dir / relative, content.encode("utf-8"))
    write_readme(readme_of(repo, lve_dir))
