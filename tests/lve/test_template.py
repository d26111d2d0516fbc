from __future__ import annotations

import pytest

from lvegit.lve.template import MAX_FILLED_BYTES, FilledTooLarge, TemplateError, fill, placeholders


def test_fill_uses_format_map_semantics() -> None:
    assert fill("Compute {a} + {b}.", {"a": 1, "b": "2"}) == "Compute 1 + 2."
    assert fill("[0-9]{{1,6}} and {x!r} {y:>3}", {"x": "q", "y": 7}) == "[0-9]{1,6} and 'q'   7"


def test_placeholders_in_order_without_duplicates() -> None:
    assert placeholders("{b} {a} {b} {{literal}}") == ["b", "a"]


def test_names_that_are_not_identifiers_work_as_format_map_keys() -> None:
    assert placeholders("call {phone-number} now") == ["phone-number"]
    assert fill("call {phone-number}", {"phone-number": "555"}) == "call 555"


@pytest.mark.parametrize(
    "template", ["{x.__class__}", "{x[0]}", "{0}", "{}", "{x.__init__.__globals__}", "{1,6}", "{a b}", "{3,}"]
)
def test_attribute_index_and_positional_fields_are_refused(template: str) -> None:
    with pytest.raises(TemplateError, match="is not a parameter name"):
        fill(template, {"x": "value"})
    with pytest.raises(TemplateError):
        placeholders(template)


def test_missing_value_and_malformed_templates() -> None:
    with pytest.raises(TemplateError, match="no value for parameter 'b'"):
        fill("{a}{b}", {"a": 1})
    with pytest.raises(TemplateError, match="malformed template"):
        placeholders("unbalanced } brace")
    with pytest.raises(TemplateError, match="nested fields"):
        fill("{a:{b}}", {"a": 1, "b": 2})
    with pytest.raises(TemplateError, match="cannot format"):
        fill("{a:d}", {"a": "text"})


def test_what_a_template_fills_to_is_bounded_in_utf8_bytes() -> None:
    # Under the bound in characters, twice over it in bytes: a bound in characters lets four bytes each in.
    wide = "\u00e9" * (MAX_FILLED_BYTES // 2 + 1)
    with pytest.raises(FilledTooLarge, match=f"the template fills to more than {MAX_FILLED_BYTES:,} bytes"):
        fill("{a}", {"a": wide})
    assert fill("{a}", {"a": wide[:-1]}) == wide[:-1]
