"""JSON Schemas (draft 2020-12) of an LVE's test.json and of one instance line, for editors and other tools.

They are generated from the rules `lvegit validate` applies (the keys, prompt forms, roles, tags and the
required arguments of lvegit's own checkers) and shipped as lvegit/schemas/test.schema.json and
instance.schema.json. A schema says what it can: it never refuses what validate accepts, and leaves the rest
(prompt files, placeholders against parameters, custom checkers, models against folders) to validate.
Unknown keys are allowed, as validate only warns about them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from lvegit.lve.prompt import Role
from lvegit.lve.spec import TAG_VALUES

SCHEMA_DIR: Final = Path(__file__).resolve().parent.parent / "schemas"
KINDS: Final = ("test", "instance")
DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"
TEXT: Final = {"type": "string", "pattern": r"\S"}  # validate refuses empty or blank text
# is_parameter_name: no dot, bracket, brace, comma or space; a letter or _ somewhere.
PARAMETER_NAME: Final = r"^[^.\[\]{},\s]*[A-Za-z_][^.\[\]{},\s]*$"


def _message() -> dict[str, Any]:
    optional_text = {"type": ["string", "null"]}
    return {
        "type": "object",
        "properties": {
            "role": {"enum": [role.value for role in Role], "default": "user"},
            "content": optional_text,
            "variable": optional_text,
            "image_url": optional_text,
        },
        # Only the model's turns (assistant) may leave content out: a null one is a hole to fill.
        "if": {"required": ["role"], "properties": {"role": {"const": "assistant"}}},
        "else": {"required": ["content"], "properties": {"content": {"type": "string"}}},
    }


def _one_prompt_form(forms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Exactly one of `forms` is given (a null one does not count, as in validate)."""
    return {"oneOf": [{"required": [name], "properties": {name: schema}} for name, schema in forms.items()]}


def _checker_rules() -> list[dict[str, Any]]:
    """For each of lvegit's own checkers: the arguments its constructor cannot do without."""
    from lvegit.checkers.registry import BUILTIN_CHECKERS, builtin_signature

    rules = []
    for name in sorted(BUILTIN_CHECKERS):
        required = list(builtin_signature(BUILTIN_CHECKERS[name]).required)
        if required:
            rules.append(
                {
                    "if": {"properties": {"checker_name": {"const": name}}, "required": ["checker_name"]},
                    "then": {"required": required},
                }
            )
    return rules


def _tag_rules() -> list[dict[str, Any]]:
    rules = []
    for name, allowed in TAG_VALUES.items():
        value = {"enum": list(allowed)} if allowed is not None else {"type": "string"}
        rules.append(
            {
                "if": {"properties": {"name": {"const": name}}, "required": ["name"]},
                "then": {"properties": {"value": value}},
            }
        )
    return rules


def test_json_schema() -> dict[str, Any]:
    prompt_file = {"type": "string", "description": "a prompt file, relative to the LVE folder (test.prompt)"}
    messages = {"type": "array", "items": {"$ref": "#/$defs/message"}, "minItems": 1}
    run = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "repetitions": {"type": "integer", "minimum": 1, "default": 1},
            "prompt": {"anyOf": [messages, {"type": "null"}]},
            "prompt_file": {"anyOf": [prompt_file, {"type": "null"}]},
        },
        **_one_prompt_form({"prompt": messages, "prompt_file": prompt_file}),
    }
    runs = {"type": "array", "items": run, "minItems": 1}
    return {
        "$schema": DRAFT,
        "title": "An LVE's test.json",
        "description": "What lvegit validate checks that a schema can say; lvegit validate checks the rest.",
        "type": "object",
        "required": ["description", "model", "checker_args"],
        "properties": {
            "description": TEXT,
            "model": {**TEXT, "description": "the model id, e.g. openai/gpt-4o-mini"},
            "checker_args": {
                "type": "object",
                "required": ["checker_name"],
                "properties": {"checker_name": TEXT},
                "allOf": _checker_rules(),
            },
            "prompt": {"anyOf": [messages, {"type": "null"}]},
            "prompt_file": {"anyOf": [prompt_file, {"type": "null"}]},
            "multi_run_prompt": {"anyOf": [runs, {"type": "null"}]},
            "prompt_parameters": {
                "type": ["array", "null"],
                "items": {"type": "string", "pattern": PARAMETER_NAME},
                "uniqueItems": True,
            },
            "default_model_args": {"type": "object"},
            "tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "value"],
                    "properties": {"name": {"type": "string"}},
                    "allOf": _tag_rules(),
                },
            },
            "author": {"type": ["string", "null"]},
        },
        **_one_prompt_form({"prompt": messages, "prompt_file": prompt_file, "multi_run_prompt": runs}),
        "$defs": {"message": _message()},
    }


def instance_line_schema() -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "title": "One line of an LVE's instances/*.jsonl",
        "type": "object",
        "required": ["response"],
        "properties": {
            "args": {"type": "object", "description": "prompt parameters and model arguments"},
            "response": {
                "type": ["string", "object", "array"],
                "description": "the text; {variable: text} for several variables; a list, one per run",
            },
            "passed": {"type": "boolean", "description": "the checker's verdict (is_safe); missing: true"},
            "author": {"type": ["string", "null"]},
            "run_info": {"type": "object"},
            "prompt_out": {"description": "the whole conversation, as recorded"},
        },
    }


def generated(kind: str) -> dict[str, Any]:
    return test_json_schema() if kind == "test" else instance_line_schema()


def shipped(kind: str) -> str:
    """The schema file as shipped (the text `lvegit schema KIND` prints)."""
    return (SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8")


if __name__ == "__main__":  # python -m lvegit.publish.schema: rewrite the shipped files
    for kind in KINDS:
        (SCHEMA_DIR / f"{kind}.schema.json").write_text(json.dumps(generated(kind), indent=2) + "\n")
