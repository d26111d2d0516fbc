"""The checker interface: what `is_safe` receives is decided by three constructor flags."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from lvegit.base.errors import CheckerError
from lvegit.lve.prompt import Message, Role, model_tool_calls, variables_of


def last_response(conversation: list[Message]) -> str | None:
    """The content of the last assistant turn."""
    for message in reversed(conversation):
        if message.role == Role.assistant:
            return message.content
    return None


@dataclass(frozen=True)
class CheckerNeeds:
    """What a checker asks of the code that judges with it. Each checker class declares it (`needs`); generic
    code reads it by checker name through lvegit.checkers.registry.needs_of and names no checker class, so
    that a new kind of checker is one declaration, not an edit of every caller. The defaults are a custom
    checker's: contributed code, whatever its class says of itself.

    - runs: "sandbox", contributed code in its confined worker; "in_process", lvegit's own code that loads
      a model `stack`; "inline", lvegit's own code quick enough to judge on the caller's thread (and to be
      built when an LVE is validated, which checks its lambdas and patterns then);
    - stack: the libraries an in-process checker loads (replay loads each stack in a process of its own);
    - lambda_batches: its verdicts are lambdas, asked of the lambda worker in batches;
    - judge_argument: the argument naming the judge model it asks (a ModelJudge, asked in this process
      through the routing, never in a sandbox): a recorded verdict is that judge's recorded judgement,
      read again in replay, and in a pull request the contributor's claim, asked again where it can be;
    - tools: it judges the tool calls of an LVE, which must declare its tools;
    - environment: its verdict is the security check of the LVE's environment (environment/checks.py, in the
      environment's sandboxed worker), which the LVE must declare; the checker itself judges nothing.
    """

    runs: Literal["inline", "in_process", "sandbox"] = "sandbox"
    stack: str | None = None
    lambda_batches: bool = False
    judge_argument: str | None = None
    tools: bool = False
    environment: bool = False

    @property
    def cached(self) -> bool:
        """Whether its verdicts go in the verdict cache: an inline checker judges an instance faster than
        its cache entry is keyed and read."""
        return self.runs != "inline"

    @property
    def budgeted_here(self) -> bool:
        """Whether its verdicts count against the LVE's checking budget in this process: an inline checker
        is lvegit's code at work on the LVE's lambdas, patterns and texts (contributed work); custom code is
        timed in its sandbox, and a model's time is no contributed work."""
        return self.runs == "inline"

    def judge_model(self, checker_args: dict[str, Any]) -> str | None:
        """The judge model these arguments name (None: no judge, or none named yet)."""
        judge = checker_args.get(self.judge_argument) if self.judge_argument is not None else None
        return judge if isinstance(judge, str) else None


INLINE: CheckerNeeds = CheckerNeeds(runs="inline")


_SIGNATURES: dict[type, tuple[bool, bool]] = {}


def _is_safe_signature(cls: Any) -> tuple[bool, bool]:
    """(first parameter is `prompt_out`, accepts `response`) of a checker class's is_safe, read once."""
    if cls not in _SIGNATURES:
        parameters = inspect.signature(cls.is_safe).parameters
        names = [name for name in parameters if name != "self"]
        takes_any = any(p.kind == p.VAR_KEYWORD for p in parameters.values())
        _SIGNATURES[cls] = (bool(names) and names[0] == "prompt_out", "response" in parameters or takes_any)
    return _SIGNATURES[cls]


class BaseChecker:
    """Judges one conversation. Subclasses implement `is_safe` and may override `postprocess_response`.

    - prompt_contains_responses: `prompt` is the conversation with the model's responses filled in
      (otherwise the prompt as sent, with empty assistant holes);
    - get_variables: `is_safe` also receives `variables`, every assistant turn by variable name;
    - get_response: `is_safe` receives `response`, the last response;
    - get_tool_calls: `is_safe` also receives `tool_calls`, the tools the model called (in an LVE that
      declares tools), in order: each `{"id", "name", "arguments", "parsed", "result"}` with the
      arguments as the model wrote them, `parsed` the arguments as an object (None where they are no JSON
      object) and `result` what the tool answered (None for a call past the step limit).
    `param_values` (the instance's prompt parameters) is always passed.
    """

    # Class-level defaults too, for checkers written without calling super().__init__().
    prompt_contains_responses = False
    get_variables = False
    get_response = True
    get_tool_calls = False
    # Arguments that are templates the checker fills itself (from the LVE's parameters and these fields),
    # never filled from an instance's args beforehand.
    template_args: ClassVar[tuple[str, ...]] = ()
    template_fields: ClassVar[tuple[str, ...]] = ()
    # Arguments an instance's args fill before the checker is built: `text_args` as text, `pattern_args`
    # (regular expressions) escaped, so a parameter matches literally. Every other argument of lvegit's own
    # checkers (lambda source above all) is taken as written: an instance line is data and never becomes
    # code. A custom checker's string arguments are all text, as lve-tools fills them.
    text_args: ClassVar[tuple[str, ...]] = ()
    pattern_args: ClassVar[tuple[str, ...]] = ()
    # What `lvegit new --checker` writes for its arguments beside a placeholder for each required one.
    scaffold_args: ClassVar[dict[str, Any]] = {}
    # Whether `lvegit new` asks one question per prompt parameter, each answer a variable (answer1, ...).
    scaffold_turns: ClassVar[bool] = False
    needs: ClassVar[CheckerNeeds] = CheckerNeeds()

    def __init__(
        self,
        prompt_contains_responses: bool = False,
        get_variables: bool = False,
        get_response: bool = True,
        get_tool_calls: bool = False,
    ) -> None:
        self.prompt_contains_responses = prompt_contains_responses
        self.get_variables = get_variables
        self.get_response = get_response
        self.get_tool_calls = get_tool_calls

    def is_safe(self, prompt: Any, response: Any, param_values: dict[str, Any] | None = None) -> bool:
        raise NotImplementedError(f"{type(self).__name__} does not implement is_safe")

    def postprocess_response(self, response: Any) -> Any:
        """Rewrite what is stored (a response string or a variables dict), e.g. to redact private data."""
        return response

    # What a model-based checker judges with, named in replay mismatches (another model may have recorded).
    judged_with: str | None = None
    # Constructor arguments that are lambda strings called with every prompt parameter as a keyword
    # argument, after this many leading positional arguments (the response): validation reads them.
    parameter_lambdas: ClassVar[dict[str, int]] = {}

    def prepare(self, responses: list[Any]) -> None:
        """Called once with every response a replay is about to judge; model-based checkers classify them in
        batches here. The default does nothing."""

    def replay_skip_reason(self, response: Any) -> str | None:
        """Why a stored response cannot be re-judged offline (e.g. it was redacted); None when it can."""
        return None

    # Older lve-tools API: is_safe(self, prompt_out, param_values) reads the response itself.
    def extract_response_from_prompt(self, prompt_out: list[Message], full: bool = False) -> str | None:
        """The last response, or with `full` every assistant turn joined by newlines."""
        if full:
            return "\n".join(m.content or "" for m in prompt_out if m.role == Role.assistant)
        return last_response(prompt_out)

    def _uses_older_api(self) -> bool:
        """Older checkers take (prompt_out, param_values) or (prompt, param_values) and read the response
        from the conversation themselves; passing `response=` to them would fail."""
        first_is_prompt_out, accepts_response = _is_safe_signature(type(self))
        return first_is_prompt_out or (self.get_response and not accepts_response)

    def _arguments(self, prompt_in: list[Message], prompt_out: list[Message]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"prompt": prompt_out if self.prompt_contains_responses else prompt_in}
        if self.get_response:
            kwargs["response"] = last_response(prompt_out)
        if self.get_variables:
            kwargs["variables"] = variables_of(prompt_out)
        if self.get_tool_calls:
            kwargs["tool_calls"] = model_tool_calls(prompt_out)
        return kwargs

    def invoke_check(
        self, prompt_in: list[Message], prompt_out: list[Message], param_values: dict[str, Any]
    ) -> bool:
        if self._uses_older_api():
            return verdict(self, self.is_safe(prompt_out, param_values))
        return verdict(
            self, self.is_safe(**self._arguments(prompt_in, prompt_out), param_values=param_values)
        )


class MultiRunBaseChecker(BaseChecker):
    """Judges all runs of a multi-run LVE at once: prompt, response and variables arrive as lists."""

    def is_safe(self, prompt: Any, response: Any, param_values: dict[str, Any] | None = None) -> bool:
        raise NotImplementedError(f"{type(self).__name__} does not implement is_safe")

    def invoke_check_runs(
        self, prompts_in: list[list[Message]], prompts_out: list[list[Message]], param_values: dict[str, Any]
    ) -> bool:
        if self._uses_older_api():
            return verdict(self, self.is_safe(prompts_out, param_values))
        per_run = [self._arguments(p_in, p_out) for p_in, p_out in zip(prompts_in, prompts_out, strict=True)]
        kwargs = {key: [run[key] for run in per_run] for key in (per_run[0] if per_run else {"prompt": []})}
        return verdict(self, self.is_safe(**kwargs, param_values=param_values))


def verdict(checker: BaseChecker, result: Any) -> bool:
    """is_safe must answer true or false (numpy booleans and 0/1 included)."""
    if isinstance(result, bool):
        return result
    if result is not None and not isinstance(result, str) and result in (True, False):
        return bool(result)
    raise CheckerError(f"{type(checker).__name__}.is_safe returned {result!r}, expected True or False")
