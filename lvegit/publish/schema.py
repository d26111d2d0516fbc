"""JSON Schemas (draft 2020-12) of an LVE's test.json and of one instance line, for editors and other tools.

They are generated from the models that `lvegit validate` validates with (lve/schema.py), with the required
arguments of lvegit's own checkers added, and shipped as lvegit/schemas/test.schema.json and
instance.schema.json. A schema says what it can: it never refuses what validate accepts, and leaves the rest
(prompt files, placeholders against parameters, custom checkers, models against folders) to validate.
Unknown keys are allowed, as validate only warns about them.
"""

from __future__ import annotations

import json
from typing import Any, Final

from lvegit.base.records import SCHEMA_DIR
from lvegit.lve.schema import InstanceLine, TestFile, json_schema

KINDS: Final = ("test", "instance", "withheld")


def _checker_rules() -> list[dict[str, Any]]:
    """For each of lvegit's own checkers: the arguments its constructor cannot do without."""
    from lvegit.checkers.registry import BUILTIN_NAMES, builtin_signature

    rules = []
    for name in sorted(BUILTIN_NAMES):
        required = list(builtin_signature(name).required)
        if required:
            rules.append(
                {
                    "if": {"properties": {"checker_name": {"const": name}}, "required": ["checker_name"]},
                    "then": {"required": required},
                }
            )
    return rules


def test_json_schema() -> dict[str, Any]:
    schema = json_schema(TestFile)
    schema["$defs"]["CheckerArgs"]["allOf"] = _checker_rules()
    return schema


def generated(kind: str) -> dict[str, Any]:
    if kind == "withheld":
        from lvegit.disclosure.abstract import WithheldFile

        return json_schema(WithheldFile)
    return test_json_schema() if kind == "test" else json_schema(InstanceLine)


def shipped(kind: str) -> str:
    """The schema file as shipped (the text `lvegit schema KIND` prints)."""
    return (SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8")


if __name__ == "__main__":  # python -m lvegit.publish.schema: rewrite the shipped files
    for kind in KINDS:
        (SCHEMA_DIR / f"{kind}.schema.json").write_text(json.dumps(generated(kind), indent=2) + "\n")
