"""What a pull request changed in each LVE it touches, for the reviewer's comment: whether the LVE is new,
renamed or edited; which test.json fields, prompt files, checker code and other files changed; how many
instances were added and removed; and each added instance with its recorded verdict, its filled prompt and
its stored response.

Both sides are read from git (base and head commits), so instances that a live re-run appends to the work
tree are not counted as the pull request's. Instance lines are compared as text: an edited line is one
removed and one added.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

from lvegit.base.errors import LVEError
from lvegit.base.files import MAX_INSTANCE_FILE_BYTES, FileProblem, read_bytes, walk
from lvegit.git.changes import MARKERS, WORK_TREE, Changes
from lvegit.git.vcs import GitCheckout
from lvegit.judge.conversation import prompts_to_send
from lvegit.judge.results import AddedInstance, LVEChange, judge_said
from lvegit.lve.prompt import response_text, transcript
from lvegit.lve.repo import TEST_FILE, Repository
from lvegit.lve.spec import LVE, load_lve

MAX_TEXT = 4_000  # characters of a prompt or response kept per added instance (the comment shows fewer)
INSTANCES_DIR = "instances"
CHECKER_DIR = "checker"


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _lines(data: bytes | None) -> list[str]:
    return [line.rstrip("\r") for line in data.decode("utf-8", "replace").split("\n")] if data else []


def _fields_changed(old: bytes | None, new: bytes | None) -> list[str]:
    """The top-level test.json fields whose values differ, or why they cannot be compared."""
    try:
        before, after = json.loads(old or b"{}"), json.loads(new or b"{}")
    except ValueError:
        return ["test.json (not JSON on one side)"]
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ["test.json (not an object on one side)"]
    keys = sorted(k for k in before.keys() | after.keys() if before.get(k, ...) != after.get(k, ...))
    return [f"test.json: {', '.join(keys)}"] if keys else []


def _prompt_text(lve: LVE | None, args: Any) -> str:
    if lve is None:
        return "(the prompt cannot be shown: test.json does not load)"
    try:
        runs = prompts_to_send(lve, args if isinstance(args, dict) else {})
    except LVEError as exc:
        return f"(the prompt cannot be filled: {exc})"
    blocks = []
    for number, messages in enumerate(runs, start=1):
        shown = messages[:-1] if messages and messages[-1].content is None else messages  # the answer's hole
        text = transcript(shown)
        blocks.append(text if len(runs) == 1 else f"--- run {number} ---\n{text}")
    return _shorten("\n".join(blocks))


def _response_text(response: Any) -> str:
    return _shorten(response_text(response))


class _Sides:
    """Reads a file of the repository as of the base commit and as of the head (a commit or the work tree)."""

    def __init__(self, repo: Repository, changes: Changes) -> None:
        self.repo, self.changes = repo, changes
        self.checkout = GitCheckout(repo.root)

    def base(self, rel: str) -> bytes | None:
        return self.checkout.read(self.changes.base, self.repo.root / rel)

    def head(self, lve: str, name: str) -> bytes | None:
        """The file `name` of the LVE at `lve` on the head side; None where it has none, or (in the
        work tree) none that may be read: a link out of the LVE, a device (validation says why)."""
        if self.changes.head == WORK_TREE:
            lve_dir = self.repo.root / lve
            try:
                return read_bytes(lve_dir / name, MAX_INSTANCE_FILE_BYTES, within=lve_dir)
            except FileProblem:
                return None
        return self.checkout.read(self.changes.head, self.repo.root / lve / name)


def _instances(
    sides: _Sides, lve: LVE | None, path: str, old: str, name: str, change: dict[str, Any]
) -> None:
    head_lines = _lines(sides.head(path, name))
    base_left = Counter(line for line in _lines(sides.base(f"{old}/{name}")) if line.strip())
    for number, line in enumerate(head_lines, start=1):
        if not line.strip():
            continue
        if base_left[line] > 0:
            base_left[line] -= 1
            change["instances_unchanged"] += 1
            continue
        change["instances_added"] += 1
        try:
            data = json.loads(line)
        except ValueError:
            continue  # validation reports the line
        if not isinstance(data, dict):
            continue
        passed = data.get("passed", True)
        change["added"].append(
            AddedInstance(
                file=f"{path}/{name}",
                line=number,
                passed=passed if isinstance(passed, bool) else None,
                prompt=_prompt_text(lve, data.get("args")),
                response=_response_text(data.get("response")),
                judged=judge_said(data.get("judgement")),
            )
        )
    change["instances_removed"] += sum(base_left.values())


def lve_change(sides: _Sides, path: str) -> LVEChange:
    changes = sides.changes
    old = changes.renamed.get(path, path)
    files = changes.files.get(path, [])
    existed = any(sides.base(f"{old}/{marker}") is not None for marker in MARKERS)
    status: Literal["added", "modified", "renamed"] = (
        "renamed" if path in changes.renamed else "modified" if existed else "added"
    )
    change: dict[str, Any] = {
        "instances_added": 0,
        "instances_removed": 0,
        "instances_unchanged": 0,
        "added": [],
    }
    changed: list[str] = []
    head_dir = sides.repo.root / path
    lve, _problems, _text = load_lve(sides.repo, head_dir)
    names = set(files)
    if status == "added":  # every file of a new LVE is new: its instances are all added
        names |= {
            (folder / name).relative_to(head_dir).as_posix()
            for folder, _folders, others in walk(head_dir)
            for name in others
        }
    for name in sorted(names):
        if name.startswith(f"{INSTANCES_DIR}/"):
            _instances(sides, lve, path, old, name, change)
        elif status == "added":
            continue
        elif name == TEST_FILE:
            changed += _fields_changed(sides.base(f"{old}/{name}"), sides.head(path, name))
        elif sides.base(f"{old}/{name}") != sides.head(path, name):
            what = "checker code" if name.startswith(f"{CHECKER_DIR}/") else "file"
            changed.append(f"{what} {name}")
    return LVEChange(
        status=status,
        renamed_from=old if status == "renamed" else None,
        changed=changed,
        **change,
    )


def review(repo: Repository, changes: Changes) -> dict[str, LVEChange]:
    """What the changes did to each changed LVE, by its folder (relative to the LVE root)."""
    sides = _Sides(repo, changes)
    return {path: lve_change(sides, path) for path in changes.changed if (repo.root / path).is_dir()}
