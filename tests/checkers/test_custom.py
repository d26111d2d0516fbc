from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from lvegit.base.errors import CheckerError
from lvegit.checkers.registry import CheckerFactory
from lvegit.judge.replay import replay_lve
from lvegit.lve.repo import Repository
from lvegit.lve.spec import load_lve

from builders import RepoBuilder, instance

SEED_STYLE = """
from lvegit.checkers import BaseChecker

class MyChecker(BaseChecker):
    def __init__(self, word="{default}"):
        super().__init__()
        self.word = word

    def is_safe(self, prompt, response, param_values=None) -> bool:
        return self.word not in response
"""

OLD_STYLE = """
from lve.checkers.base import BaseChecker
from lve.checkers import *
from lve.prompt import Role


class MyChecker(BaseChecker):
    def is_safe(self, prompt_out, param_values=None) -> bool:
        assert prompt_out[-1].role == Role.assistant
        return self.extract_response_from_prompt(prompt_out).startswith(param_values["prefix"])
"""

CUSTOM = {
    "checker_args": {"checker_name": "MyChecker"},
    "prompt": [{"content": "hi"}],
    "prompt_parameters": [],
}


def statuses(repo: RepoBuilder, lve_dir: Path) -> list[tuple[str, str | None]]:
    return [(r.status, r.reason) for r in replay_lve(Repository(repo.root.resolve()), lve_dir)]


def test_two_custom_checkers_with_the_same_class_name_in_one_process(repo: RepoBuilder) -> None:
    cats = repo.lve(
        "a/cats",
        CUSTOM,
        files={"checker/checker.py": SEED_STYLE.format(default="cat")},
        instances={"i.jsonl": [instance("a cat", False), instance("a dog", True)]},
    )
    dogs = repo.lve(
        "a/dogs",
        CUSTOM,
        files={"checker/checker.py": SEED_STYLE.format(default="dog")},
        instances={"i.jsonl": [instance("a cat", True), instance("a dog", False)]},
    )
    assert statuses(repo, cats) == [("reproduced", None)] * 2
    assert statuses(repo, dogs) == [("reproduced", None)] * 2
    assert statuses(repo, cats) == [("reproduced", None)] * 2  # the first one was not replaced


def test_older_lve_tools_checker_loads_unchanged(repo: RepoBuilder) -> None:
    test = {**CUSTOM, "prompt": [{"content": "{prefix}"}], "prompt_parameters": ["prefix"]}
    lve_dir = repo.lve(
        "a/old",
        test,
        files={"checker/checker.py": OLD_STYLE},
        instances={"i.jsonl": [instance("Yes sir", True, prefix="Yes"), instance("No", False, prefix="Yes")]},
    )
    assert statuses(repo, lve_dir) == [("reproduced", None)] * 2
    assert not any(name == "lve" or name.startswith("lve.") for name in sys.modules)


def test_missing_optional_package_is_a_skip(repo: RepoBuilder) -> None:
    code = (
        "from lve.checkers.base import BaseChecker\n"
        "from lve.utils.importutils import ensure_installed\n"
        "class MyChecker(BaseChecker):\n"
        "    def __init__(self):\n"
        "        ensure_installed('surely_not_installed_pkg')\n"
    )
    lve_dir = repo.lve(
        "a/needs", CUSTOM, files={"checker/checker.py": code}, instances={"i.jsonl": [instance("x", True)]}
    )
    assert statuses(repo, lve_dir) == [
        (
            "skipped",
            "repository/a/needs/openai--gpt-4o-mini: this checker needs the Python package "
            "'surely_not_installed_pkg', which is not installed",
        )
    ]


def test_missing_package_and_prints_from_an_older_checker(repo: RepoBuilder, cli) -> None:
    needs_openai = "import surely_not_installed_module\nfrom lve.checkers.base import BaseChecker\n"
    prints = (
        "from lve.checkers.base import BaseChecker\n"
        "print('loading')\n"
        "class MyChecker(BaseChecker):\n"
        "    def __init__(self):\n"
        "        print('building')\n"
        "    def is_safe(self, prompt, param_values) -> bool:\n"
        "        print('judging', self.extract_response_from_prompt(prompt, full=True))\n"
        "        return True\n"
    )
    missing = repo.lve(
        "a/missing",
        CUSTOM,
        files={"checker/checker.py": needs_openai},
        instances={"i.jsonl": [instance("x", True)]},
    )
    assert statuses(repo, missing) == [
        (
            "skipped",
            "repository/a/missing/openai--gpt-4o-mini: checker/checker.py imports "
            "'surely_not_installed_module', which is not installed",
        )
    ]
    repo.lve(
        "a/prints", CUSTOM, files={"checker/checker.py": prints}, instances={"i.jsonl": [instance("x", True)]}
    )
    result = cli("replay", "repository/a/prints", "--format", "json", cwd=repo.root)
    assert result.json()["summary"]["reproduced"] == 1


def test_every_checker_file_is_loaded(repo: RepoBuilder) -> None:
    helper = (
        "from lvegit.checkers import BaseChecker\nclass MyChecker(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n        return True\n"
    )
    lve_dir = repo.lve(
        "a/split",
        CUSTOM,
        files={"checker/checker_impl.py": helper, "checker/notes.py": "raise SystemExit"},
        instances={"i.jsonl": [instance("x", True)]},
    )
    assert statuses(repo, lve_dir) == [("reproduced", None)]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("raise RuntimeError('boom')", "checker/checker.py failed to import: RuntimeError: boom"),
        (
            "import not_a_module_anywhere",
            "checker/checker.py imports 'not_a_module_anywhere', which is not installed",
        ),
        ("class Other: pass", "no checker class 'MyChecker' (a BaseChecker subclass) in checker/checker*.py"),
        ("MyChecker = 3", "no checker class 'MyChecker'"),
    ],
)
def test_custom_checker_failures_name_the_lve(repo: RepoBuilder, code: str, message: str) -> None:
    lve_dir = repo.lve("a/broken", CUSTOM, files={"checker/checker.py": code})
    lve, _, _ = load_lve(Repository(repo.root.resolve()), lve_dir)
    assert lve is not None
    with pytest.raises(CheckerError) as info, CheckerFactory(lve) as factory:
        factory.for_args({})
    assert str(info.value).startswith("repository/a/broken/openai--gpt-4o-mini: ")
    assert message in str(info.value)


def test_a_checker_nested_too_deeply_to_parse_is_invalid_not_a_crash(repo: RepoBuilder, cli: Any) -> None:
    repo.lve("a/deep", CUSTOM, files={"checker/checker.py": "x = " + "-" * 200_000 + "1"})
    validated = cli("validate", "--all", cwd=repo.root)
    assert validated.code == 1, validated.err
    assert "checker.py: cannot be parsed (nested too deeply, or null bytes)" in validated.out + validated.err
