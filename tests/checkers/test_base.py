from __future__ import annotations

from typing import Any

import pytest

from lvegit.base.errors import CheckerError
from lvegit.checkers.base import BaseChecker, MultiRunBaseChecker
from lvegit.lve.prompt import Message, Role

PROMPT_IN = [
    Message("q1"),
    Message(None, Role.assistant, "a1"),
    Message("q2"),
    Message(None, Role.assistant, "a2"),
]
PROMPT_OUT = [
    Message("q1"),
    Message("r1", Role.assistant, "a1"),
    Message("q2"),
    Message("r2", Role.assistant, "a2"),
]


class Recorder(BaseChecker):
    def is_safe(self, **kwargs: Any) -> bool:  # type: ignore[override]
        self.received = kwargs
        return True


def test_default_flags_pass_prompt_as_sent_and_last_response() -> None:
    checker = Recorder()
    checker.invoke_check(PROMPT_IN, PROMPT_OUT, {"p": 1})
    assert checker.received == {"prompt": PROMPT_IN, "response": "r2", "param_values": {"p": 1}}


def test_flags_choose_what_is_safe_receives() -> None:
    checker = Recorder(prompt_contains_responses=True, get_variables=True, get_response=False)
    checker.invoke_check(PROMPT_IN, PROMPT_OUT, {})
    assert checker.received == {
        "prompt": PROMPT_OUT,
        "variables": {"a1": "r1", "a2": "r2"},
        "param_values": {},
    }


def test_checker_without_super_init_uses_class_defaults() -> None:
    class NoInit(Recorder):
        def __init__(self) -> None:
            pass

    checker = NoInit()
    checker.invoke_check(PROMPT_IN, PROMPT_OUT, {})
    assert set(checker.received) == {"prompt", "response", "param_values"}


def test_older_signature_gets_the_full_conversation() -> None:
    class Old(BaseChecker):
        def is_safe(self, prompt_out, param_values=None):  # type: ignore[no-untyped-def, override]
            self.seen = (
                self.extract_response_from_prompt(prompt_out),
                self.extract_response_from_prompt(prompt_out, full=True),
                param_values,
            )
            return False

    checker = Old()
    assert checker.invoke_check(PROMPT_IN, PROMPT_OUT, {"p": 2}) is False
    assert checker.seen == ("r2", "r1\nr2", {"p": 2})


def test_older_prompt_param_values_signature() -> None:
    class OldNoInit(BaseChecker):
        def __init__(self) -> None:  # older checkers often skip super().__init__()
            pass

        def is_safe(self, prompt, param_values):  # type: ignore[no-untyped-def, override]
            return self.extract_response_from_prompt(prompt) == param_values["want"]

    assert OldNoInit().invoke_check(PROMPT_IN, PROMPT_OUT, {"want": "r2"}) is True


def test_new_api_without_response_is_not_mistaken_for_the_older_one() -> None:
    class VariablesOnly(BaseChecker):
        def __init__(self) -> None:
            super().__init__(get_variables=True, get_response=False)

        def is_safe(self, prompt, variables, param_values=None):  # type: ignore[no-untyped-def, override]
            return prompt is PROMPT_IN and variables == {"a1": "r1", "a2": "r2"}

    assert VariablesOnly().invoke_check(PROMPT_IN, PROMPT_OUT, {}) is True


@pytest.mark.parametrize(("result", "expected"), [(True, True), (False, False), (1, True), (0, False)])
def test_verdicts_are_booleans(result: Any, expected: bool) -> None:
    class Fixed(BaseChecker):
        def is_safe(self, prompt: Any, response: Any, param_values: Any = None) -> Any:
            return result

    assert Fixed().invoke_check(PROMPT_IN, PROMPT_OUT, {}) is expected


@pytest.mark.parametrize("result", [None, "yes", 2, [True]])
def test_non_boolean_verdicts_are_errors(result: Any) -> None:
    class Fixed(BaseChecker):
        def is_safe(self, prompt: Any, response: Any, param_values: Any = None) -> Any:
            return result

    with pytest.raises(CheckerError, match=r"Fixed.is_safe returned .*, expected True or False"):
        Fixed().invoke_check(PROMPT_IN, PROMPT_OUT, {})


def test_base_is_safe_is_abstract_and_postprocess_is_identity() -> None:
    with pytest.raises(NotImplementedError, match="BaseChecker does not implement is_safe"):
        BaseChecker().invoke_check(PROMPT_IN, PROMPT_OUT, {})
    assert BaseChecker().postprocess_response({"a": "b"}) == {"a": "b"}
    assert BaseChecker().replay_skip_reason("x") is None


def test_multi_run_checker_gets_lists_in_run_order() -> None:
    class Runs(MultiRunBaseChecker):
        def is_safe(self, **kwargs: Any) -> bool:  # type: ignore[override]
            self.received = kwargs
            return True

    checker = Runs(get_variables=True)
    second_out = [
        Message("q1"),
        Message("x1", Role.assistant, "a1"),
        Message("q2"),
        Message("x2", Role.assistant, "a2"),
    ]
    checker.invoke_check_runs([PROMPT_IN, PROMPT_IN], [PROMPT_OUT, second_out], {"p": 3})
    assert checker.received == {
        "prompt": [PROMPT_IN, PROMPT_IN],
        "response": ["r2", "x2"],
        "variables": [{"a1": "r1", "a2": "r2"}, {"a1": "x1", "a2": "x2"}],
        "param_values": {"p": 3},
    }
