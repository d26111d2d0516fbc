from __future__ import annotations

from lvegit.checkers.base import BaseChecker, CheckerNeeds
from lvegit.checkers.core import ExactMatchChecker
from lvegit.checkers.registry import (
    BUILTIN_NAMES,
    MAX_BUILT_BYTES,
    CheckerFactory,
    builtin_checker,
    builtin_signature,
    needs_of,
)
from lvegit.lve.repo import Repository
from lvegit.lve.spec import load_lve

from builders import RepoBuilder


def test_a_name_that_is_none_of_lvegits_checkers_needs_the_sandbox_whatever_its_class_declares() -> None:
    needs = needs_of("MyOwnChecker")
    assert needs == BaseChecker.needs == CheckerNeeds()
    assert needs.runs == "sandbox" and needs.cached and not needs.budgeted_here
    assert needs.judge_argument is None and not needs.lambda_batches and not needs.tools


def test_each_of_lvegits_checkers_declares_needs_that_fit_it() -> None:
    for name in BUILTIN_NAMES:
        needs, cls = needs_of(name), builtin_checker(name)
        assert cls is not None and needs is cls.needs
        assert needs.runs != "sandbox", name  # lvegit's own code
        assert (needs.stack is not None) == (needs.runs == "in_process"), name
        assert needs.cached == (needs.runs != "inline") == (not needs.budgeted_here), name
        signature = builtin_signature(name)
        if needs.judge_argument is not None:  # an argument the checker is built with
            assert needs.judge_argument in (*signature.required, *signature.optional), name
        if needs.lambda_batches:
            assert cls.parameter_lambdas, name


def test_the_judge_model_is_the_named_argument_where_it_is_text() -> None:
    judged = CheckerNeeds(runs="inline", judge_argument="judge")
    assert judged.judge_model({"judge": "openai/gpt-4o-mini"}) == "openai/gpt-4o-mini"
    assert judged.judge_model({"judge": ["openai/gpt-4o-mini"]}) is None
    assert judged.judge_model({}) is None
    assert CheckerNeeds().judge_model({"judge": "openai/gpt-4o-mini"}) is None


def test_the_checkers_a_factory_keeps_built_hold_a_bounded_size_of_arguments(repo: RepoBuilder) -> None:
    """Each instance fills ExactMatchChecker's pattern to 4 MB here: a factory kept every checker built,
    with its arguments, for the rest of the command (160 MB for these 40 instances, 40 GB for 10,000). It
    keeps MAX_BUILT_BYTES of arguments; a checker dropped is built again when asked."""
    import tracemalloc

    checker = {"checker_name": "ExactMatchChecker", "pattern": "{a}{a}{a}{a}", "match_safe": False}
    lve, _problems, _text = load_lve(
        Repository(repo.root.resolve()), repo.lve("cat/x", {"checker_args": checker})
    )
    assert lve is not None
    factory = CheckerFactory(lve)
    tracemalloc.start()
    try:
        for number in range(40):
            built = factory.for_args({"a": f"{number:02}" + "x" * 1_000_000})
            assert isinstance(built, ExactMatchChecker) and len(built.pattern) == 4_000_008
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2 * MAX_BUILT_BYTES + 32 * 1024 * 1024, held
    assert factory.for_args({"a": "39" + "x" * 1_000_000}) is built  # the newest is kept
