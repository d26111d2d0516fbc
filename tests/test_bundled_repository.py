"""The project's own example repository: it must validate, replay, and cover every form and checker."""

from __future__ import annotations

from lvegit.checkers.custom import checker_files
from lvegit.checkers.registry import BUILTIN_CHECKERS
from lvegit.lve.repo import Repository
from lvegit.lve.spec import load_lve

from builders import PROJECT_ROOT

REPO = Repository(PROJECT_ROOT)


def test_bundled_repository_validates_strictly(cli) -> None:
    result = cli("validate", "--all", "--strict", "--repo", str(PROJECT_ROOT))
    assert result.code == 0, result.out


def test_bundled_repository_passes_its_own_hooks(cli) -> None:
    """What .pre-commit-hooks.yaml runs on a commit that touches the LVEs: validate and readme --check (a
    README reworded by hand, or a checker's description changed without `lvegit readme`, fails here)."""
    for command in (("validate", "--all"), ("readme", "--all", "--check")):
        result = cli(*command, "--repo", str(PROJECT_ROOT))
        assert result.code == 0, result.out


def test_bundled_repository_replays(cli) -> None:
    result = cli("replay", "--all", "--format", "json", "--repo", str(PROJECT_ROOT))
    assert result.code == 0, result.out
    summary = result.json()["summary"]
    assert summary["mismatch"] == summary["error"] == 0
    assert summary["reproduced"] >= 25


def test_bundled_repository_covers_every_prompt_form_and_checker() -> None:
    lves = [load_lve(REPO, d)[0] for d in REPO.lve_dirs()]
    assert all(lve is not None for lve in lves)
    forms = set()
    checkers = set()
    custom_styles = set()
    for lve in lves:
        assert lve is not None
        checkers.add(lve.checker_name)
        assert lve.instance_files(), f"{lve.rel} has no instances"
        if lve.runs is not None:
            forms.add("multi-run")
        elif "" not in lve.prompt_files:
            forms.add("inline")
        else:
            text = (PROJECT_ROOT / lve.prompt_files[""]).read_text()
            forms.add(
                "jsonl" if text.count("\n{") else "single-object" if text.lstrip().startswith("{") else "text"
            )
        if sum(m.role == "assistant" and not m.tool_calls for m in lve.prompt or []) > 1:
            forms.add("multi-variable")
        if lve.tools:
            forms.add("tools")
        if any(m.tool_calls for m in lve.prompt or []):
            forms.add("tool exchange in the prompt")
        for path in checker_files(lve.dir):
            custom_styles.add("older" if "from lve." in path.read_text() else "lvegit")
    assert forms == {
        "inline",
        "text",
        "jsonl",
        "single-object",
        "multi-variable",
        "multi-run",
        "tools",
        "tool exchange in the prompt",
    }
    assert set(BUILTIN_CHECKERS) <= checkers
    assert custom_styles == {"older", "lvegit"}
