from __future__ import annotations

from lvegit.checkers.base import BaseChecker, CheckerNeeds
from lvegit.checkers.registry import BUILTIN_NAMES, builtin_checker, builtin_signature, needs_of


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
