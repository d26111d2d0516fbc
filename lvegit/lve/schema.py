"""test.json and instance lines described once: pydantic models that validate them, report what is wrong as
problems naming the field, and generate their JSON Schemas (lvegit schema test|instance).

The models take a contributed file as written: no coercion (a string is no number, true is no 1), unknown keys
kept and warned about. test.json is validated field by field, so that one bad field neither hides another
nor makes the LVE's other fields unusable (an error in its description does not stop a replay).

pydantic takes about 0.15 s to import and build these models: the modules that read files import this one in
the functions that validate, so that a command which reads no LVE (a warm check) does not pay for it.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.config import JsonValue
from pydantic_core import ErrorDetails, PydanticCustomError

from lvegit.lve import taxonomy
from lvegit.lve.impact import ImpactLevel
from lvegit.lve.problems import PLACEHOLDER, Problems, join_path, json_type, suggestion
from lvegit.lve.prompt import Message, Role, ToolCall
from lvegit.lve.tools import DEFAULT_TOOL_STEPS, MAX_TOOL_STEPS, ReturnCase, Tool

DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"
TEXT_PATTERN: Final = r"\S"
# A key str.format_map looks up as it is (template.is_parameter_name): no dot, bracket, brace, comma or
# space, and a letter or _ somewhere, so regex quantifiers such as {1,6} are never taken for one.
PARAMETER_PATTERN: Final = r"^[^.\[\]{},\s]*[A-Za-z_][^.\[\]{},\s]*$"
# What the chat-completions API takes for a function's name.
TOOL_NAME_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
PATTERN_MESSAGES: Final = {
    TEXT_PATTERN: "must be a non-empty string",
    PARAMETER_PATTERN: "must be a parameter name (such as 'person' or 'phone-number')",
    TOOL_NAME_PATTERN: "must be a tool name: 1 to 64 letters, digits, '_' or '-'",
}
TAG_VALUES: Final[dict[str, tuple[str, ...] | None]] = {
    "severity": ("low", "medium", "high"),
    "jailbreak": ("yes", "no"),
    "paper": None,  # free text
    "source": None,  # free text: the scan an imported LVE came from (lvegit import)
    # a taxonomy's entry, checked against the shipped lists (lvegit.lve.taxonomy)
    **dict.fromkeys(taxonomy.SCHEMES),
}
EXPECTED: Final = {
    "string_type": "a string",
    "string_unicode": "a string",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
}

Text = Annotated[str, StringConstraints(pattern=TEXT_PATTERN)]
ParameterName = Annotated[str, StringConstraints(pattern=PARAMETER_PATTERN)]
PromptFile = Annotated[str, Field(description="a prompt file, relative to the LVE folder (test.prompt)")]


def exactly_one(forms: tuple[str, ...]) -> dict[str, Any]:
    """JSON Schema: exactly one of `forms` is given and not null (a null one does not count)."""
    return {
        "oneOf": [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in forms]
    }


def given(model: BaseModel, forms: tuple[str, ...]) -> list[str]:
    return [name for name in forms if getattr(model, name, None) is not None]


class Contributed(BaseModel):
    """A part of a contributed file. Its unknown keys are kept; `warn_unknown` says whether lvegit warns
    about them (a checker's arguments and an instance's extra keys are no typos)."""

    model_config = ConfigDict(strict=True, extra="allow")
    warn_unknown: ClassVar[bool] = True


ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)]


class FunctionCallSpec(Contributed):
    name: str
    arguments: Annotated[str, Field(description="the arguments as the model wrote them (JSON text)")]


class ToolCallSpec(Contributed):
    """A tool call an assistant message of a prompt made, in the chat-completions format."""

    id: Text
    type: Literal["function"] = "function"
    function: FunctionCallSpec


class MessageSpec(Contributed):
    """One message of a prompt. Only the model's turns (assistant) may leave content out: a null one is a
    hole for the model to fill. An assistant message may carry tool calls; a tool message (role `tool`)
    answers one of them (`tool_call_id`)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"required": ["role"], "properties": {"role": {"const": "assistant"}}},
            "else": {"required": ["content"], "properties": {"content": {"type": "string"}}},
        }
    )

    role: Annotated[Role, Field(strict=False)] = Role.user
    content: str | None = Field(default=None, validate_default=True)
    variable: str | None = None
    image_url: str | None = None
    tool_calls: Annotated[list[ToolCallSpec], Field(min_length=1)] | None = None
    tool_call_id: str | None = None
    name: Annotated[str | None, Field(description="a tool message's tool, sent as written")] = None

    def as_message(self, line: int | None = None) -> Message:
        calls = tuple(ToolCall(c.id, c.function.name, c.function.arguments) for c in self.tool_calls or ())
        return Message(
            self.content,
            self.role,
            self.variable,
            self.image_url,
            line,
            calls,
            self.tool_call_id,
            tool_name=self.name,
        )

    @model_validator(mode="after")
    def _tool_fields(self) -> MessageSpec:
        if self.tool_calls is not None and self.role != Role.assistant:
            raise PydanticCustomError("tool_calls_role", "only an assistant message may carry tool_calls")
        if self.name is not None and self.role != Role.tool:
            raise PydanticCustomError("tool_name", "only a tool message names a tool (name)")
        if (self.role == Role.tool) != (self.tool_call_id is not None):
            raise PydanticCustomError(
                "tool_call_id",
                "a tool message, and only a tool message, names the call it answers (tool_call_id)",
            )
        return self

    @field_validator("content")
    @classmethod
    def _content_unless_assistant(cls, content: str | None, info: ValidationInfo) -> str | None:
        role = info.data.get("role")
        if content is None and role is not None and role != Role.assistant:
            raise PydanticCustomError("needs_content", "a {role} message needs content", {"role": str(role)})
        return content


Messages = Annotated[list[MessageSpec], Field(min_length=1)]
RUN_FORMS: Final = ("prompt", "prompt_file")


class RunSpec(Contributed):
    """One entry of multi_run_prompt: a prompt run `repetitions` times."""

    model_config = ConfigDict(json_schema_extra=exactly_one(RUN_FORMS))

    name: str | None = None
    repetitions: int = Field(default=1, ge=1)
    prompt: Messages | None = None
    prompt_file: PromptFile | None = None

    @model_validator(mode="after")
    def _one_prompt(self) -> RunSpec:
        if len(given(self, RUN_FORMS)) != 1:
            raise PydanticCustomError("prompt_forms", "needs exactly one of prompt or prompt_file")
        return self


class CheckerArgs(Contributed):
    """The checker's name and its arguments (every other key)."""

    warn_unknown = False

    checker_name: Text

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _tag_rules() -> list[JsonValue]:
    return [
        {
            "if": {"properties": {"name": {"const": name}}, "required": ["name"]},
            "then": {"properties": {"value": {"enum": list(allowed)} if allowed else {"type": "string"}}},
        }
        for name, allowed in TAG_VALUES.items()
    ]


class Tag(Contributed):
    model_config = ConfigDict(json_schema_extra={"allOf": _tag_rules()})

    name: str
    value: Any

    @field_validator("value")
    @classmethod
    def _known_values(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.data.get("name")
        allowed = TAG_VALUES.get(name, ()) if isinstance(name, str) else ()
        if allowed is None and not isinstance(value, str):
            raise PydanticCustomError("tag_text", "{name} must be text", {"name": name})
        wrong = taxonomy.problem(name, value) if name in taxonomy.SCHEMES else None
        if wrong is not None:
            raise PydanticCustomError("tag_taxonomy", "{message}", {"message": wrong})
        if name in taxonomy.SCHEMES:
            return taxonomy.normalised(name, value)  # as lvegit writes it: LLM01:2025 is 2025:LLM01
        if allowed and value not in allowed:
            raise PydanticCustomError(
                "tag_value",
                "{name} must be one of {allowed}, not {value}",
                {"name": name, "allowed": ", ".join(allowed), "value": repr(value)},
            )
        return value


def _listed_once(names: list[str]) -> list[str]:
    for index, name in enumerate(names):
        if name in names[:index]:
            raise PydanticCustomError("listed_twice", "'{name}' is listed twice", {"name": name})
    return names


ParameterNames = Annotated[
    list[ParameterName], AfterValidator(_listed_once), Field(json_schema_extra={"uniqueItems": True})
]
PROMPT_FORMS: Final = ("prompt", "prompt_file", "multi_run_prompt")


class ReturnCaseSpec(Contributed):
    """One case of a tool's returns: chosen for a call whose arguments match `when`."""

    when: Annotated[
        dict[str, str] | None,
        Field(
            description="argument names and the patterns (regular expressions) their values must contain; "
            "left out: any call (the default, last)"
        ),
    ] = None
    returns: Annotated[str, Field(description="what such a call returns, filled like a tool's returns")]


class ToolSpec(Contributed):
    """A tool the model is offered. It does nothing: a call is answered with `returns`."""

    name: ToolName
    description: str = ""
    parameters: Annotated[
        dict[str, Any], Field(description="JSON Schema of the arguments: an object schema")
    ] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    returns: Annotated[
        str | list[ReturnCaseSpec] | None,
        Field(
            description="what a call returns: text, with {name} filled from the call's arguments and the "
            "LVE's prompt parameters, or a list of cases chosen by the call's arguments, the first that "
            "matches (required unless max_tool_steps is 0)"
        ),
    ] = None

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        if parameters.get("type") != "object":
            raise PydanticCustomError("tool_parameters", 'must be a JSON Schema with "type": "object"')
        if not isinstance(parameters.get("properties", {}), dict):
            raise PydanticCustomError("tool_parameters", "properties must be an object")
        return parameters

    def as_tool(self) -> Tool:
        returns = self.returns
        if isinstance(returns, list):
            return Tool(
                self.name,
                self.description,
                self.parameters,
                tuple(ReturnCase(case.returns, case.when) for case in returns),
            )
        return Tool(self.name, self.description, self.parameters, returns)


def _tools_named_once(tools: list[ToolSpec]) -> list[ToolSpec]:
    _listed_once([tool.name for tool in tools])
    return tools


class EnvironmentSpec(Contributed):
    """The environment the LVE's agent acts in: its state (environment/state.json) and the code of its tools
    and checks (environment/*.py), run in the sandbox. Tools without `returns` are its functions."""

    injections: Annotated[
        dict[ParameterName, str],
        Field(
            description="injection vectors: {name: default text}; `{name}` in state.json's strings is "
            "filled with an instance's value of that name, else the default"
        ),
    ] = Field(default_factory=dict)


class TestFile(Contributed):
    """An LVE's test.json."""

    __test__ = False  # not a test class, whatever its name
    model_config = ConfigDict(
        title="An LVE's test.json",
        json_schema_extra={
            "description": "What lvegit validate checks that a schema can say; lvegit validate checks the "
            "rest (prompt files, parameters against the prompt, custom checkers, the folder's name).",
            **exactly_one(PROMPT_FORMS),
        },
    )

    description: Text
    model: Annotated[Text, Field(description="the model id, e.g. openai/gpt-4o-mini")]
    checker_args: CheckerArgs
    prompt: Messages | None = None
    prompt_file: PromptFile | None = None
    multi_run_prompt: Annotated[list[RunSpec], Field(min_length=1)] | None = None
    prompt_parameters: ParameterNames | None = None
    default_model_args: Annotated[
        dict[str, Any], Field(description="temperature, top_p, max_tokens, ...")
    ] = Field(default_factory=dict)
    tags: list[Tag] = Field(default_factory=list)
    author: str | None = None
    impact: (
        Annotated[
            ImpactLevel,
            Field(
                description="how much harm the LVE does when it reproduces: the weight of its severity "
                "(default: its severity tag, else medium)"
            ),
        ]
        | None
    ) = None
    tools: (
        Annotated[
            list[ToolSpec],
            AfterValidator(_tools_named_once),
            Field(description="tools the model is offered; their calls are answered with what they return"),
        ]
        | None
    ) = None
    max_tool_steps: (
        Annotated[
            int,
            Field(
                ge=0,
                le=MAX_TOOL_STEPS,
                description=f"how often one turn's tool calls are answered (default {DEFAULT_TOOL_STEPS}; "
                "0: calls are recorded, never answered)",
            ),
        ]
        | None
    ) = None
    environment: (
        Annotated[
            EnvironmentSpec,
            Field(description="the agent's environment: state and tools as code in environment/ (sandboxed)"),
        ]
        | None
    ) = None


def _text_object_or_list(value: Any) -> Any:
    if not isinstance(value, str | dict | list):
        raise PydanticCustomError(
            "response_type", "must be a string, object or list, not {kind}", {"kind": json_type(value)}
        )
    return value


class JudgementLine(Contributed):
    """What an LLM judge said about the instance (LLMJudgeChecker): replay reads its answers again."""

    warn_unknown = False

    judge: str
    rubric_sha256: str
    answers: list[str]
    verdicts: list[bool]
    categories: list[str] = Field(default_factory=list)
    verdict: bool


class EnvironmentRecord(Contributed):
    """An environment LVE's state as an instance records it (JSON, as the environment dumped it)."""

    before: Annotated[dict[str, Any], Field(description="the state before the first tool call")]
    after: Annotated[dict[str, Any], Field(description="the state after the last tool call")]


class InstanceLine(Contributed):
    """One line of an LVE's instances/*.jsonl. Keys lvegit does not know are kept as they are."""

    warn_unknown = False
    model_config = ConfigDict(title="One line of an LVE's instances/*.jsonl")

    args: Annotated[dict[str, Any], Field(description="prompt parameters and model arguments")] = Field(
        default_factory=dict
    )
    response: Annotated[
        Any,
        AfterValidator(_text_object_or_list),
        WithJsonSchema(
            {
                "type": ["string", "object", "array"],
                "description": "the text; {variable: text} for several variables; a list, one per run; "
                "in an LVE with tools, a turn that used them: {steps: [{content, tool_calls: [{id, name, "
                "arguments, result}]}]}",
            }
        ),
    ]
    passed: Annotated[
        bool | None,
        Field(description="the checker's verdict (is_safe); null: invalid (cannot be judged); missing: true"),
    ] = True
    environment: Annotated[
        EnvironmentRecord | None,
        Field(description="an environment LVE's state before the first tool call and after the last"),
    ] = None
    utility: Annotated[
        bool | None,
        Field(description="an environment LVE's utility check: the user's task done; null: invalid"),
    ] = None
    author: str | None = None
    judgement: JudgementLine | None = None
    run_info: dict[str, Any] | None = None
    prompt_out: Annotated[Any, Field(description="the whole conversation, as recorded")] = None


def describe(error: ErrorDetails) -> str:
    """A validation error in lvegit's words."""
    kind, value, context = error["type"], error["input"], error.get("ctx", {})
    if kind == "missing":
        return "required field is missing"
    if kind in EXPECTED:
        return f"must be {EXPECTED[kind]}, not {json_type(value)}"
    if kind == "string_pattern_mismatch":
        return PATTERN_MESSAGES[context["pattern"]]
    if kind == "too_short":
        return "must not be empty"
    if kind == "greater_than_equal":
        return f"must be at least {context['ge']}"
    if kind == "less_than_equal":
        return f"must be at most {context['le']}"
    if kind == "literal_error":
        return f"must be {context['expected']}, not {value!r}"
    if kind == "enum":
        return f"must be one of {context['expected']}, not {value!r}"
    return error["msg"]  # lvegit's own (PydanticCustomError) and any other


def _report(exc: ValidationError, path: str, problems: Problems, line: int | None) -> None:
    for error in exc.errors(include_url=False):
        where = path
        for key in error["loc"]:
            where = join_path(where, key)
        problems.error(where, describe(error), line)


def _unknown_key(key: str, model: type[BaseModel], path: str, problems: Problems, line: int | None) -> None:
    """A warning for a key `model` does not know, naming the field it may be a typo of."""
    hint = suggestion(key, list(model.model_fields))
    problems.warning(join_path(path, key), f"unknown key '{key}'{hint}", line)


_NESTED = (list, Contributed)  # values that may hold unknown keys


def _warn_unknown(value: Any, path: str, problems: Problems, line: int | None) -> None:
    """Warn about the unknown keys of a validated value, a typo named with the key it may stand for."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, _NESTED):  # a path is joined only where keys may be: once per instance line
                _warn_unknown(item, join_path(path, index), problems, line)
    elif isinstance(value, Contributed):
        if value.warn_unknown:
            for key in value.model_extra or {}:
                _unknown_key(key, type(value), path, problems, line)
        for name in type(value).model_fields:
            field = getattr(value, name)
            if isinstance(field, _NESTED):
                _warn_unknown(field, join_path(path, name), problems, line)


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def validated(kind: Any, value: Any, path: str, problems: Problems, line: int | None = None) -> Any | None:
    """`value` validated as `kind` (a model or an annotated type): the result, or None with its problems
    reported at `path` (and `line`, for files of several values)."""
    try:
        result = _adapter(kind).validate_python(value)
    except ValidationError as exc:
        _report(exc, path, problems, line)
        return None
    _warn_unknown(result, path, problems, line)
    return result


def read_test_file(data: dict[str, Any], problems: Problems) -> dict[str, Any]:
    """The fields of a test.json object that are valid, each validated on its own; the problems of the
    others, of unknown keys, placeholders and prompt forms reported."""
    fields = TestFile.model_fields
    for key in data:  # validated field by field, TestFile collects no extras: its unknown keys are found here
        if key not in fields:
            _unknown_key(key, TestFile, "", problems, None)
    _placeholder_problems(data, "", problems)
    values: dict[str, Any] = {}
    # the defaults made by a factory given here: pydantic inspects a factory's signature on every use
    test_file = TestFile.model_construct(default_model_args={}, tags=[])
    for name, info in fields.items():
        if name not in data:
            if info.is_required():
                problems.error(name, "required field is missing")
            continue
        try:
            # The model's own validation of this one field (as when a field of a model is assigned).
            TestFile.__pydantic_validator__.validate_assignment(test_file, name, data[name])
        except ValidationError as exc:
            _report(exc, "", problems, None)
            continue
        values[name] = getattr(test_file, name)
        _warn_unknown(values[name], name, problems, None)
    tags = data.get("tags")
    for index, tag in enumerate(tags if isinstance(tags, list) else []):
        if isinstance(tag, dict) and isinstance(tag.get("name"), str) and tag["name"] not in TAG_VALUES:
            problems.warning(f"tags[{index}].name", f"unknown tag '{tag['name']}'")
    forms = [name for name in PROMPT_FORMS if data.get(name) is not None]
    if len(forms) != 1:
        found = ", ".join(forms) if forms else "none"
        problems.error("", f"needs exactly one of prompt, prompt_file or multi_run_prompt (found: {found})")
    return values


def _placeholder_problems(value: Any, path: str, problems: Problems) -> None:
    if isinstance(value, str) and PLACEHOLDER in value:
        # what follows the placeholder says what belongs there (lvegit import names the scanner's detector)
        hint = value.split(PLACEHOLDER, 1)[1].strip(" :\n")
        said = f" with {hint}" if hint and "\n" not in hint and len(hint) <= 200 else ""
        problems.error(path, f"still holds the placeholder {PLACEHOLDER!r}: fill it in{said}")
    elif isinstance(value, dict):
        for key, child in value.items():
            _placeholder_problems(child, join_path(path, key), problems)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _placeholder_problems(child, join_path(path, index), problems)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON Schema (draft 2020-12), as `lvegit schema` prints it."""
    return {"$schema": DRAFT, **model.model_json_schema()}


def parse_message(value: Any, path: str, problems: Problems, line: int | None = None) -> Message | None:
    """One message object; problems are reported at `path` (and `line`, for prompt files)."""
    spec = validated(MessageSpec, value, path, problems, line)
    return spec.as_message(line) if spec is not None else None


def parse_messages(value: Any, path: str, problems: Problems) -> list[Message]:
    """A list of messages (the valid ones are used only when all are)."""
    specs = validated(Messages, value, path, problems)
    return [spec.as_message() for spec in specs or []]
