"""test.json and instance lines described once: pydantic-core schemas that validate them, report what is
wrong as problems naming the field, and generate their JSON Schemas (lvegit schema test|instance).

The schemas take a contributed file as written: no coercion (a string is no number, true is no 1), unknown
keys kept and warned about. test.json is validated field by field, so that one bad field neither hides
another nor makes the LVE's other fields unusable (an error in its description does not stop a replay).

They are written with pydantic-core's schema functions and validated by its validator, not declared as
pydantic models: importing pydantic and building models took half of a cold `lvegit check`. Each part of a
file is a plain class that pydantic-core fills (its fields as attributes, its unknown keys in `model_extra`).
pydantic itself is imported only to write the JSON Schemas (json_schema).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

from pydantic_core import CoreSchema, ErrorDetails, PydanticCustomError, SchemaValidator, ValidationError
from pydantic_core import core_schema as cs

from lvegit.lve import taxonomy
from lvegit.lve.impact import IMPACT_LEVELS
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
_REQUIRED: Final = object()  # a field without a default

# The shapes of values, as pydantic-core takes them.
TEXT: Final = cs.str_schema(pattern=TEXT_PATTERN)
PARAMETER_NAME: Final = cs.str_schema(pattern=PARAMETER_PATTERN)
TOOL_NAME: Final = cs.str_schema(pattern=TOOL_NAME_PATTERN)
STRING: Final = cs.str_schema()
OBJECT: Final = cs.dict_schema(cs.str_schema(), cs.any_schema())


def _description(text: str | None) -> dict[str, Any] | None:
    """The metadata that gives a schema or a field the description its JSON Schema shows."""
    return {"pydantic_js_updates": {"description": text}} if text else None


def _described(schema: CoreSchema, description: str) -> CoreSchema:
    """`schema` with the description its JSON Schema shows."""
    return {**schema, "metadata": _description(description)}


def field(
    schema: CoreSchema,
    default: Any = _REQUIRED,
    *,
    factory: Callable[[], Any] | None = None,
    description: str | None = None,
    validate_default: bool = False,
) -> cs.ModelField:
    """A field of a part: its value's schema, its default (none: required) or the factory that makes it."""
    if factory is not None:
        schema = cs.with_default_schema(schema, default_factory=factory)
    elif default is not _REQUIRED:
        schema = cs.with_default_schema(schema, default=default, validate_default=validate_default or None)
    return cs.model_field(schema, metadata=_description(description))


def optional(schema: CoreSchema, description: str | None = None) -> cs.ModelField:
    """A field that may be left out or null (None)."""
    return field(cs.nullable_schema(schema), None, description=description)


def listed(items: CoreSchema, min_length: int | None = None) -> CoreSchema:
    return cs.list_schema(items, min_length=min_length)


def exactly_one(forms: tuple[str, ...]) -> dict[str, Any]:
    """JSON Schema: exactly one of `forms` is given and not null (a null one does not count)."""
    return {
        "oneOf": [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in forms]
    }


def given(part: Contributed, forms: tuple[str, ...]) -> list[str]:
    return [name for name in forms if getattr(part, name, None) is not None]


class Contributed:
    """A part of a contributed file, validated: its fields as attributes, its unknown keys kept in
    `model_extra` (pydantic-core fills the slots); `warn_unknown` says whether lvegit warns about them
    (a checker's arguments and an instance's extra keys are no typos). A subclass annotates its fields for
    the type checker; `part` gives it their schemas."""

    __slots__ = ("__dict__", "__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__")
    __pydantic_extra__: dict[str, Any] | None
    __pydantic_fields_set__: set[str]
    warn_unknown: ClassVar[bool] = True
    # What its JSON Schema says of it (read by pydantic's generator): title, extra keys, json_schema_extra.
    model_config: ClassVar[dict[str, Any]] = {}
    model_fields: ClassVar[dict[str, cs.ModelField]] = {}
    schema: ClassVar[CoreSchema]
    ref: ClassVar[str]

    @property
    def model_extra(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})

    def as_dict(self) -> dict[str, Any]:
        """Its fields and its unknown keys (as pydantic's model_dump, one level)."""
        return {**self.__dict__, **self.model_extra}

    @classmethod
    def required(cls) -> list[str]:
        return [name for name, spec in cls.model_fields.items() if spec["schema"]["type"] != "default"]

    @classmethod
    def validate(cls, value: Any) -> Any:
        """`value` validated whole (a ValidationError says what is wrong)."""
        return validator(cls).validate_python(value)


def part(
    cls: type[Contributed],
    fields: dict[str, cs.ModelField],
    after: Callable[[Any], Any] | None = None,
    title: str | None = None,
    json_schema_extra: dict[str, Any] | None = None,
    definitions: list[CoreSchema] | None = None,
) -> type[Contributed]:
    """Make `cls` the part with these fields (in this order), checked whole by `after` where given;
    `definitions`: the parts its fields name by reference."""
    cls.model_fields = fields
    cls.ref = f"{cls.__module__}.{cls.__qualname__}"
    cls.model_config = {"title": title or cls.__name__, "extra": "allow", "strict": True}
    if json_schema_extra is not None:
        cls.model_config["json_schema_extra"] = json_schema_extra
    schema: CoreSchema = cs.model_schema(
        cls,
        cs.model_fields_schema(fields, model_name=cls.__name__),
        config=cs.CoreConfig(title=title or cls.__name__, strict=True, extra_fields_behavior="allow"),
        ref=cls.ref,
    )
    if after is not None:
        schema = cs.no_info_after_validator_function(after, schema)
    cls.schema = cs.definitions_schema(schema, definitions) if definitions else schema
    return cls


class Shape:
    """A validated value that is no part of its own (a list of parts): its schema."""

    def __init__(self, schema: CoreSchema) -> None:
        self.schema = schema


_VALIDATORS: dict[type[Contributed] | Shape, SchemaValidator] = {}


def validator(kind: type[Contributed] | Shape) -> SchemaValidator:
    """The validator of a part or shape, built on first use."""
    made = _VALIDATORS.get(kind)
    if made is None:
        made = _VALIDATORS[kind] = SchemaValidator(kind.schema)
    return made


def _custom(kind: str, message: str, context: dict[str, Any] | None = None) -> PydanticCustomError:
    return PydanticCustomError(kind, message, context)


class FunctionCallSpec(Contributed):
    __slots__ = ()
    name: str
    arguments: str


part(
    FunctionCallSpec,
    {
        "name": field(STRING),
        "arguments": field(STRING, description="the arguments as the model wrote them (JSON text)"),
    },
)


class ToolCallSpec(Contributed):
    """A tool call an assistant message of a prompt made, in the chat-completions format."""

    __slots__ = ()
    id: str
    type: str
    function: FunctionCallSpec


part(
    ToolCallSpec,
    {
        "id": field(TEXT),
        "type": field(cs.literal_schema(["function"]), "function"),
        "function": field(FunctionCallSpec.schema),
    },
)


class MessageSpec(Contributed):
    """One message of a prompt. Only the model's turns (assistant) may leave content out: a null one is a
    hole for the model to fill. An assistant message may carry tool calls; a tool message (role `tool`)
    answers one of them (`tool_call_id`)."""

    __slots__ = ()
    role: Role
    content: str | None
    variable: str | None
    image_url: str | None
    tool_calls: list[ToolCallSpec] | None
    tool_call_id: str | None
    name: str | None

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


def _tool_fields(message: MessageSpec) -> MessageSpec:
    if message.tool_calls is not None and message.role != Role.assistant:
        raise _custom("tool_calls_role", "only an assistant message may carry tool_calls")
    if message.name is not None and message.role != Role.tool:
        raise _custom("tool_name", "only a tool message names a tool (name)")
    if (message.role == Role.tool) != (message.tool_call_id is not None):
        raise _custom(
            "tool_call_id",
            "a tool message, and only a tool message, names the call it answers (tool_call_id)",
        )
    return message


def _content_unless_assistant(content: str | None, info: cs.ValidationInfo) -> str | None:
    role = info.data.get("role")
    if content is None and role is not None and role != Role.assistant:
        raise _custom("needs_content", "a {role} message needs content", {"role": str(role)})
    return content


ROLE: Final = cs.enum_schema(Role, list(Role), sub_type="str", strict=False, ref="lvegit.lve.prompt.Role")
part(
    MessageSpec,
    {
        "role": field(ROLE, Role.user),
        "content": field(
            cs.with_info_after_validator_function(_content_unless_assistant, cs.nullable_schema(STRING)),
            None,
            validate_default=True,
        ),
        "variable": optional(STRING),
        "image_url": optional(STRING),
        "tool_calls": optional(listed(ToolCallSpec.schema, 1)),
        "tool_call_id": optional(STRING),
        "name": optional(STRING, "a tool message's tool, sent as written"),
    },
    after=_tool_fields,
    json_schema_extra={
        "if": {"required": ["role"], "properties": {"role": {"const": "assistant"}}},
        "else": {"required": ["content"], "properties": {"content": {"type": "string"}}},
    },
)
Messages: Final = Shape(listed(MessageSpec.schema, 1))
RUN_FORMS: Final = ("prompt", "prompt_file")
PROMPT_FILE: Final = "a prompt file, relative to the LVE folder (test.prompt)"


# What one run of a multi-run prompt may be repeated: each repetition is an attempt, and a run sequence of
# 10^9 entries was built before anything was judged.
MAX_REPETITIONS: Final = 1_000


class RunSpec(Contributed):
    """One entry of multi_run_prompt: a prompt run `repetitions` times."""

    __slots__ = ()
    name: str | None
    repetitions: int
    prompt: list[MessageSpec] | None
    prompt_file: str | None


def _one_prompt(run: RunSpec) -> RunSpec:
    if len(given(run, RUN_FORMS)) != 1:
        raise _custom("prompt_forms", "needs exactly one of prompt or prompt_file")
    return run


part(
    RunSpec,
    {
        "name": optional(STRING),
        "repetitions": field(cs.int_schema(ge=1, le=MAX_REPETITIONS), 1),
        "prompt": optional(Messages.schema),
        "prompt_file": optional(_described(STRING, PROMPT_FILE)),
    },
    after=_one_prompt,
    json_schema_extra=exactly_one(RUN_FORMS),
)


class CheckerArgs(Contributed):
    """The checker's name and its arguments (every other key)."""

    __slots__ = ()
    warn_unknown = False
    checker_name: str

    @property
    def arguments(self) -> dict[str, Any]:
        return self.model_extra


part(CheckerArgs, {"checker_name": field(TEXT)})


def _tag_rules() -> list[Any]:
    return [
        {
            "if": {"properties": {"name": {"const": name}}, "required": ["name"]},
            "then": {"properties": {"value": {"enum": list(allowed)} if allowed else {"type": "string"}}},
        }
        for name, allowed in TAG_VALUES.items()
    ]


class Tag(Contributed):
    __slots__ = ()


def _known_values(value: Any, info: cs.ValidationInfo) -> Any:
    name = info.data.get("name")
    allowed = TAG_VALUES.get(name, ()) if isinstance(name, str) else ()
    if allowed is None and not isinstance(value, str):
        raise _custom("tag_text", "{name} must be text", {"name": name})
    wrong = taxonomy.problem(name, value) if name in taxonomy.SCHEMES else None
    if wrong is not None:
        raise _custom("tag_taxonomy", "{message}", {"message": wrong})
    if name in taxonomy.SCHEMES:
        return taxonomy.normalised(name, value)  # as lvegit writes it: LLM01:2025 is 2025:LLM01
    if allowed and value not in allowed:
        raise _custom(
            "tag_value",
            "{name} must be one of {allowed}, not {value}",
            {"name": name, "allowed": ", ".join(allowed), "value": repr(value)},
        )
    return value


part(
    Tag,
    {
        "name": field(STRING),
        "value": field(cs.with_info_after_validator_function(_known_values, cs.any_schema())),
    },
    json_schema_extra={"allOf": _tag_rules()},
)


def _listed_once(names: list[str]) -> list[str]:
    for index, name in enumerate(names):
        if name in names[:index]:
            raise _custom("listed_twice", "'{name}' is listed twice", {"name": name})
    return names


PARAMETER_NAMES: Final = {
    **cs.no_info_after_validator_function(_listed_once, listed(PARAMETER_NAME)),
    "metadata": {"pydantic_js_updates": {"uniqueItems": True}},
}
PROMPT_FORMS: Final = ("prompt", "prompt_file", "multi_run_prompt")


class ReturnCaseSpec(Contributed):
    """One case of a tool's returns: chosen for a call whose arguments match `when`."""

    __slots__ = ()
    when: dict[str, str] | None
    returns: str


part(
    ReturnCaseSpec,
    {
        "when": optional(
            cs.dict_schema(STRING, STRING),
            "argument names and the patterns (regular expressions) their values must contain; "
            "left out: any call (the default, last)",
        ),
        "returns": field(STRING, description="what such a call returns, filled like a tool's returns"),
    },
)


class ToolSpec(Contributed):
    """A tool the model is offered. It does nothing: a call is answered with `returns`."""

    __slots__ = ()
    name: str
    description: str
    parameters: dict[str, Any]
    returns: str | list[ReturnCaseSpec] | None

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


def _object_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    if parameters.get("type") != "object":
        raise _custom("tool_parameters", 'must be a JSON Schema with "type": "object"')
    if not isinstance(parameters.get("properties", {}), dict):
        raise _custom("tool_parameters", "properties must be an object")
    return parameters


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


part(
    ToolSpec,
    {
        "name": field(TOOL_NAME),
        "description": field(STRING, ""),
        "parameters": field(
            cs.no_info_after_validator_function(_object_schema, OBJECT),
            factory=_empty_object_schema,
            description="JSON Schema of the arguments: an object schema",
        ),
        "returns": optional(
            cs.union_schema([STRING, listed(ReturnCaseSpec.schema)]),
            "what a call returns: text, with {name} filled from the call's arguments and the LVE's prompt "
            "parameters, or a list of cases chosen by the call's arguments, the first that matches "
            "(required unless max_tool_steps is 0)",
        ),
    },
)


def _tools_named_once(tools: list[ToolSpec]) -> list[ToolSpec]:
    _listed_once([tool.name for tool in tools])
    return tools


class EnvironmentSpec(Contributed):
    """The environment the LVE's agent acts in: its state (environment/state.json) and the code of its tools
    and checks (environment/*.py), run in the sandbox. Tools without `returns` are its functions."""

    __slots__ = ()
    injections: dict[str, str]


part(
    EnvironmentSpec,
    {
        "injections": field(
            cs.dict_schema(PARAMETER_NAME, STRING),
            factory=dict,
            description="injection vectors: {name: default text}; `{name}` in state.json's strings is "
            "filled with an instance's value of that name, else the default",
        )
    },
)


class TestFile(Contributed):
    """An LVE's test.json."""

    __test__ = False  # not a test class, whatever its name
    __slots__ = ()


part(
    TestFile,
    {
        "description": field(TEXT),
        "model": field(TEXT, description="the model id, e.g. openai/gpt-4o-mini"),
        "checker_args": field(CheckerArgs.schema),
        "prompt": optional(Messages.schema),
        "prompt_file": optional(_described(STRING, PROMPT_FILE)),
        "multi_run_prompt": optional(listed(RunSpec.schema, 1)),
        "prompt_parameters": optional(PARAMETER_NAMES),
        "default_model_args": field(OBJECT, factory=dict, description="temperature, top_p, max_tokens, ..."),
        "tags": field(listed(Tag.schema), factory=list),
        "author": optional(STRING),
        "impact": optional(
            _described(
                cs.literal_schema(list(IMPACT_LEVELS)),
                "how much harm the LVE does when it reproduces: the weight of its severity (default: its "
                "severity tag, else medium)",
            )
        ),
        "tools": optional(
            _described(
                cs.no_info_after_validator_function(_tools_named_once, listed(ToolSpec.schema)),
                "tools the model is offered; their calls are answered with what they return",
            )
        ),
        "max_tool_steps": optional(
            _described(
                cs.int_schema(ge=0, le=MAX_TOOL_STEPS),
                f"how often one turn's tool calls are answered (default {DEFAULT_TOOL_STEPS}; "
                "0: calls are recorded, never answered)",
            )
        ),
        "environment": optional(
            # a reference, so that the description is the field's, not the part's
            cs.definition_reference_schema(
                EnvironmentSpec.ref,
                metadata=_description(
                    "the agent's environment: state and tools as code in environment/ (sandboxed)"
                ),
            )
        ),
    },
    title="An LVE's test.json",
    definitions=[EnvironmentSpec.schema],
    json_schema_extra={
        "description": "What lvegit validate checks that a schema can say; lvegit validate checks the rest "
        "(prompt files, parameters against the prompt, custom checkers, the folder's name).",
        **exactly_one(PROMPT_FORMS),
    },
)


def _text_object_or_list(value: Any) -> Any:
    if not isinstance(value, str | dict | list):
        raise _custom(
            "response_type", "must be a string, object or list, not {kind}", {"kind": json_type(value)}
        )
    return value


class JudgementLine(Contributed):
    """What an LLM judge said about the instance (LLMJudgeChecker): replay reads its answers again."""

    __slots__ = ()
    warn_unknown = False


part(
    JudgementLine,
    {
        "judge": field(STRING),
        "rubric_sha256": field(STRING),
        "answers": field(listed(STRING)),
        "verdicts": field(listed(cs.bool_schema())),
        "categories": field(listed(STRING), factory=list),
        "verdict": field(cs.bool_schema()),
    },
)


class EnvironmentRecord(Contributed):
    """An environment LVE's state as an instance records it (JSON, as the environment dumped it)."""

    __slots__ = ()


part(
    EnvironmentRecord,
    {
        "before": field(OBJECT, description="the state before the first tool call"),
        "after": field(OBJECT, description="the state after the last tool call"),
    },
)
RESPONSE_SCHEMA: Final = {
    "type": ["string", "object", "array"],
    "description": "the text; {variable: text} for several variables; a list, one per run; in an LVE with "
    "tools, a turn that used them: {steps: [{content, tool_calls: [{id, name, arguments, result}]}]}",
}


class InstanceLine(Contributed):
    """One line of an LVE's instances/*.jsonl. Keys lvegit does not know are kept as they are."""

    __slots__ = ()
    warn_unknown = False


part(
    InstanceLine,
    {
        "args": field(OBJECT, factory=dict, description="prompt parameters and model arguments"),
        "response": field(
            {
                **cs.no_info_after_validator_function(_text_object_or_list, cs.any_schema()),
                "metadata": {"pydantic_js_annotation_functions": [lambda _schema, _handler: RESPONSE_SCHEMA]},
            }
        ),
        "passed": field(
            cs.nullable_schema(cs.bool_schema()),
            True,
            description="the checker's verdict (is_safe); null: invalid (cannot be judged); missing: true",
        ),
        "environment": optional(
            EnvironmentRecord.schema,
            "an environment LVE's state before the first tool call and after the last",
        ),
        "utility": optional(
            cs.bool_schema(), "an environment LVE's utility check: the user's task done; null: invalid"
        ),
        "author": optional(STRING),
        "judgement": optional(JudgementLine.schema),
        "run_info": optional(OBJECT),
        "prompt_out": field(cs.any_schema(), None, description="the whole conversation, as recorded"),
    },
    title="One line of an LVE's instances/*.jsonl",
)


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


def _unknown_key(key: str, kind: type[Contributed], path: str, problems: Problems, line: int | None) -> None:
    """A warning for a key `kind` does not know, naming the field it may be a typo of."""
    hint = suggestion(key, list(kind.model_fields))
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
            for key in value.__pydantic_extra__ or {}:
                _unknown_key(key, type(value), path, problems, line)
        for name, field_value in value.__dict__.items():
            if isinstance(field_value, _NESTED):
                _warn_unknown(field_value, join_path(path, name), problems, line)


def validated(
    kind: type[Contributed] | Shape, value: Any, path: str, problems: Problems, line: int | None = None
) -> Any | None:
    """`value` validated as `kind` (a part or a shape): the result, or None with its problems reported at
    `path` (and `line`, for files of several values)."""
    try:
        result = validator(kind).validate_python(value)
    except ValidationError as exc:
        _report(exc, path, problems, line)
        return None
    _warn_unknown(result, path, problems, line)
    return result


def field_by_field(kind: type[Contributed], data: dict[str, Any], problems: Problems) -> dict[str, Any]:
    """The fields of a file's object that are valid as `kind`'s, each validated on its own (one bad field
    hides no other); the problems of the others and of unknown keys reported."""
    fields = kind.model_fields
    for key in data:  # validated field by field, the part collects no extras: its unknown keys are found here
        if key not in fields:
            _unknown_key(key, kind, "", problems, None)
    values: dict[str, Any] = {}
    holder = kind.__new__(kind)
    holder.__pydantic_extra__, holder.__pydantic_fields_set__ = None, set()
    required = kind.required()
    for name in fields:
        if name not in data:
            if name in required:
                problems.error(name, "required field is missing")
            continue
        try:
            # The part's own validation of this one field (as when a field of a model is assigned).
            validator(kind).validate_assignment(holder, name, data[name])
        except ValidationError as exc:
            _report(exc, "", problems, None)
            continue
        values[name] = holder.__dict__[name]
        _warn_unknown(values[name], name, problems, None)
    return values


def read_test_file(data: dict[str, Any], problems: Problems) -> dict[str, Any]:
    """The fields of a test.json object that are valid, each validated on its own; the problems of the
    others, of unknown keys, placeholders and prompt forms reported."""
    _placeholder_problems(data, "", problems)
    values = field_by_field(TestFile, data, problems)
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


def json_schema(kind: type[Contributed]) -> dict[str, Any]:
    """A part's JSON Schema (draft 2020-12), as `lvegit schema` prints it (written by pydantic's generator,
    imported here only)."""
    from pydantic.json_schema import GenerateJsonSchema

    return {"$schema": DRAFT, **GenerateJsonSchema(by_alias=True).generate(kind.schema)}


def parse_message(value: Any, path: str, problems: Problems, line: int | None = None) -> Message | None:
    """One message object; problems are reported at `path` (and `line`, for prompt files)."""
    spec = validated(MessageSpec, value, path, problems, line)
    return spec.as_message(line) if spec is not None else None


def parse_messages(value: Any, path: str, problems: Problems) -> list[Message]:
    """A list of messages (the valid ones are used only when all are)."""
    specs = validated(Messages, value, path, problems)
    return [spec.as_message() for spec in specs or []]
