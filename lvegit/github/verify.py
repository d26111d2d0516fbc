"""What the comment stage can vouch for in a results file, without running the pull request's code.

GitHub runs a `pull_request` workflow from the pull request's merge commit, so a pull request (a fork's
too) can run its own copy of the check workflow, or add another workflow of the same name, and upload
any results artifact. The comment stage holds the write token and trusts only GitHub's own word: the
workflow_run event (which workflow file ran, on which head) and the REST API (the pull request's head,
base and changed files, the head's tree). It doubts the results when the run is not of the base
branch's check workflow, when the pull request changes what the check runs on (a workflow, an action,
lvegit's configuration), or when the results' head, base or set of LVEs is not the pull request's; the
set of changed LVEs is derived again from the pull request's files and the head's tree, never from the
artifact. Each doubt is a sentence for the comment, which then says that its verdicts are unverified.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Final

from lvegit.git.changes import MARKERS
from lvegit.github.context import RunOrigin
from lvegit.github.results import ResultsDocument
from lvegit.lve.repo import REPOSITORY_DIR, text_name
from lvegit.lve.routing_file import ROUTING_FILES

CHECK_WORKFLOW: Final = ".github/workflows/lvegit-check.yml"
# Where the workflows and local actions a check job runs are defined, from the top of the repository.
WORKFLOW_FOLDERS: Final = (".github/workflows/", ".github/actions/")
# A local action (`uses: ./folder`) is a folder holding an action.yml: it runs the files of that folder
# (a composite action's scripts, a Docker action's Dockerfile and what it copies), so a change anywhere
# below one counts. Names are compared case-folded: a macOS or Windows runner finds `Action.YML` as one.
ACTION_DEFINITIONS: Final = ("action.yml", "action.yaml")
ACTION_FILES: Final = (*ACTION_DEFINITIONS, "dockerfile")
MAX_NAMED = 10  # LVEs named in one doubt; the rest are counted


@dataclass(frozen=True)
class ChangedFile:
    """One file of the pull request, as GitHub lists it: its path on head, and its path on the base
    where it was renamed (GitHub's `previous_filename`)."""

    path: str
    status: str  # added, removed, modified, renamed, copied, changed, unchanged
    previous: str | None = None


@dataclass(frozen=True)
class PullRequestFacts:
    """What GitHub says of a pull request now."""

    head_sha: str
    base_sha: str
    files: list[ChangedFile]
    files_complete: bool  # False: GitHub lists no more than 3,000 files and this one has more
    lve_folders: set[str] | None  # the head's folders holding a test.json; None: its tree was too large
    action_folders: set[str] = field(default_factory=set)  # the head's local actions (action_folders)
    base_ref: str = ""  # the branch it is into
    default_branch: str = ""  # the repository's, which workflow_run workflows run from


def is_sha(text: str) -> bool:
    """Whether `text` is a commit's full sha (what a results file says goes into no URL unchecked)."""
    return re.fullmatch(r"[0-9a-f]{40}", text) is not None


def workflow_file(path: str, repository: str) -> str:
    """The workflow file of a run as a path in the repository: GitHub writes `.github/workflows/x.yml`, and
    in places `owner/repo/.github/workflows/x.yml@ref`. Another repository's workflow keeps its prefix."""
    file = path.rsplit("@", 1)[0] if "@" in path else path
    return file.removeprefix(f"{repository}/")


def lve_folders(paths: Iterable[str]) -> set[str]:
    """The folders of a tree's file paths that are LVEs: they hold a test.json or a withheld LVE's abstract
    (lvegit.git.changes.MARKERS, what lvegit's own diff counts)."""
    return {path.rpartition("/")[0] for path in paths if path.rpartition("/")[2] in MARKERS}


def _lve_on_head(path: str, prefix: PurePosixPath, lve_folders: set[str]) -> str | None:
    """The LVE holding `path` on head: its innermost folder below `prefix` that holds a test.json."""
    folders = (folder.as_posix() for folder in PurePosixPath(path).parents if prefix in folder.parents)
    return next((folder for folder in folders if folder in lve_folders), None)


# What a pull request did to an LVE it changes, as the results' change records say it: its status
# (added, modified, renamed) and the folder it was renamed from.
How = tuple[str, str | None]


def changed_lves(
    files: Iterable[ChangedFile], lve_folders: set[str], top: str
) -> tuple[dict[str, How], set[str]]:
    """What the pull request did to each LVE it changes on head, and the LVEs it removes, relative to the
    LVE root `top`, as lvegit.git.changes and lvegit.github.review find them: a file's LVE is its innermost
    folder holding a test.json on head; an LVE whose test.json comes from a folder that is no LVE on head
    is renamed from there, one whose test.json is new is added; an LVE is removed when its test.json goes,
    unless it was renamed into an LVE on head."""
    prefix = PurePosixPath(top, REPOSITORY_DIR)
    start = len(top) + 1 if top else 0
    changed: dict[str, How] = {}
    removed: set[str] = set()
    for file in files:
        lve = _lve_on_head(file.path, prefix, lve_folders)
        old = PurePosixPath(file.previous or file.path)
        folder = old.parent.as_posix()
        went = old.name in MARKERS and prefix in old.parents and folder not in lve_folders
        if went and not (file.status == "renamed" and lve is not None):  # a rename's LVE is changed
            removed.add(text_name(folder[start:]))
        if lve is None:
            continue
        how = changed.setdefault(lve[start:], ("modified", None))
        if PurePosixPath(file.path) in {PurePosixPath(lve, marker) for marker in MARKERS} and file.status in (
            "added",
            "renamed",
            "copied",
        ):
            how = ("renamed", text_name(folder[start:])) if went else ("added", None)
        changed[lve[start:]] = how
    return changed, removed


def _named(paths: Iterable[str]) -> str:
    ordered = sorted(paths)
    shown = ", ".join(ordered[:MAX_NAMED])
    return shown + (f" and {len(ordered) - MAX_NAMED} more" if len(ordered) > MAX_NAMED else "")


def action_folders(paths: Iterable[str]) -> set[str]:
    """The folders of these file paths (a tree's) that hold a local action's definition, case-folded
    ('.' for the top)."""
    return {
        PurePosixPath(path).parent.as_posix().casefold()
        for path in paths
        if PurePosixPath(path).name.casefold() in ACTION_DEFINITIONS
    }


def _runs_on(files: list[ChangedFile], top: str, actions: set[str]) -> list[str]:
    """The files of the pull request that say what its check runs: workflows, actions and the files of
    a local action's folder (`actions`, from action_folders), lvegit's configuration (both names of a
    renamed file); compared case-folded."""
    config = {str(PurePosixPath(top, name)).casefold() for name in ROUTING_FILES}

    def runs(path: str) -> bool:
        folded = PurePosixPath(path.casefold())
        in_action = any(folder.as_posix() in actions for folder in folded.parents)
        return (
            folded.as_posix().startswith(WORKFLOW_FOLDERS)
            or folded.name in ACTION_FILES
            or folded.as_posix() in config
            or in_action
        )

    paths = {path for file in files for path in (file.path, file.previous) if path is not None}
    return sorted(path for path in paths if runs(path))


def runs_on_doubts(files: list[ChangedFile], top: str, actions: set[str]) -> list[str]:
    """The doubt of a pull request that changes what its check runs on (its run may be anything);
    `actions`: the head's local actions (action_folders)."""
    runs_on = _runs_on(files, top, actions)
    what = f"this pull request changes what its check runs on ({_named(runs_on)})"
    return [f"{what}: its run may not be lvegit's check"] if runs_on else []


def _origin_doubts(origin: RunOrigin | None, expected: str, repository: str) -> list[str]:
    if origin is None:
        return ["the comment stage did not run on a workflow_run event: it cannot tell which run wrote them"]
    doubts = []
    ran = workflow_file(origin.path, repository)
    if ran != expected:
        doubts.append(f"they were uploaded by a run of {ran}, not of the check workflow {expected}")
    if origin.event != "pull_request":
        doubts.append(f"the run that uploaded them was triggered by {origin.event}, not pull_request")
    return doubts


def _lve_doubts(
    results_lves: Mapping[str, How | None], results_removed: set[str], facts: PullRequestFacts, top: str
) -> list[str]:
    if not facts.files_complete:
        return [
            "GitHub lists only the first 3,000 files of this pull request: its changed LVEs cannot be derived"
        ]
    if facts.lve_folders is None:
        return ["the head's tree is too large for GitHub to list: the changed LVEs cannot be derived"]
    changed, removed = changed_lves(facts.files, facts.lve_folders, top)
    doubts = []
    left_out, not_changed = changed.keys() - results_lves.keys(), results_lves.keys() - changed.keys()
    if left_out:
        doubts.append(f"they leave out LVEs this pull request changes: {_named(left_out)}")
    if not_changed:
        doubts.append(f"they name LVEs this pull request does not change: {_named(not_changed)}")
    unlike = [lve for lve, how in changed.items() if lve in results_lves and results_lves[lve] != how]
    if unlike:
        doubts.append(
            f"they say otherwise than its files whether these LVEs are new or renamed: {_named(unlike)}"
        )
    if removed != results_removed:
        doubts.append(
            f"their removed LVEs ({_named(results_removed) or 'none'}) are not the ones this pull request "
            f"removes ({_named(removed) or 'none'})"
        )
    return doubts


def doubts(
    results: ResultsDocument,
    origin: RunOrigin | None,
    facts: PullRequestFacts,
    expected_workflow: str,
    repository: str,
    top: str,
    base_on_branch: bool,
    same_workflow: bool,
) -> list[str]:
    """Why the comment stage cannot vouch for these results (empty: it can). `base_on_branch`: whether
    the results' base is the pull request's base commit or an earlier commit of its branch (GitHub's
    compare); `same_workflow`: whether the base branch's check workflow is the default branch's file (the
    one the comment stage's own workflow sits beside); `top`: the LVE root, from the top of the repository
    ('' for the top itself)."""
    found = _origin_doubts(origin, expected_workflow, repository)
    if not same_workflow:
        found.append(
            f"this pull request is into {facts.base_ref}, whose check workflow ({expected_workflow}) is not "
            f"the default branch's ({facts.default_branch})"
        )
    found += runs_on_doubts(facts.files, top, facts.action_folders)
    if results.head_sha != facts.head_sha:
        head, theirs = facts.head_sha[:12], results.head_sha[:12]
        found.append(f"they are for the commit {theirs}, not the pull request's head {head}")
    if results.base_sha is None or not base_on_branch:
        base = results.base_sha[:12] if results.base_sha else "no commit"
        found.append(f"they compare with {base}, which is not on the pull request's base branch")
    hows = {
        lve.path: (lve.change.status, lve.change.renamed_from) if lve.change else None for lve in results.lves
    }
    return found + _lve_doubts(hows, set(results.removed), facts, top)
