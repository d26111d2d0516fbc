"""Tags that name an entry of a taxonomy, checked offline against the lists shipped in taxonomies.json
(written by scripts/build_taxonomies.py from MITRE ATLAS's data, avidtools, OWASP's published lists and
MITRE's CWE list, with their editions), and the `--tag SCHEME:VALUE` selectors that pick LVEs by them.

A tag is `{"name": SCHEME, "value": ...}`, its value as lvegit writes it or as its publisher does
(`normalised` turns the second into the first); a selector may also be a publisher's id alone, where
one taxonomy has it (`LLM01:2025`, `ASI01:2026`, `AML.T0051.001`, `CWE-1426`):
- `owasp-llm`: `EDITION:ID`, such as `2025:LLM01`, or OWASP's `LLM01:2025` (an id without its edition is
  ambiguous: an edition may renumber them);
- `owasp-agentic`: `EDITION:ID`, such as `2026:ASI01`, or `ASI01:2026`;
- `atlas`: a MITRE ATLAS id, such as `AML.T0051.001` (a sub-technique is named with its technique's name);
- `avid`: an AVID id, such as `S0403`;
- `cwe`: a CWE id, such as `CWE-1426` (or `1426`).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Final

from lvegit.base.errors import UsageError

DATA: Final = Path(__file__).with_name("taxonomies.json")
EDITIONED: Final = ("owasp-llm", "owasp-agentic")
SCHEMES: Final = (*EDITIONED, "atlas", "avid", "cwe")
CWE: Final = re.compile(r"(?i)(?:CWE-?)?0*([1-9][0-9]{0,5})")
_PUBLISHED: Final = re.compile(r"([A-Za-z]+[0-9]+):([0-9]{4})")  # OWASP's own form: LLM01:2025
_EDITION_FIRST: Final = re.compile(r"([0-9]{4}):([A-Za-z]+[0-9]+)")


def normalised(scheme: str, value: str) -> str:
    """A tag's value as lvegit writes it, from the form its publisher writes: `LLM01:2025` is `2025:LLM01`,
    `aml.t0051.001` is `AML.T0051.001`, `1426` and `cwe-1426` are `CWE-1426`; anything else as it is."""
    text = value.strip()
    if scheme in EDITIONED:
        if found := _PUBLISHED.fullmatch(text):
            return f"{found[2]}:{found[1].upper()}"
        if found := _EDITION_FIRST.fullmatch(text):
            return f"{found[1]}:{found[2].upper()}"
        return text
    if scheme == "cwe":
        return f"CWE-{found[1]}" if (found := CWE.fullmatch(text)) else text
    return text.upper() if scheme in ("atlas", "avid") else text


@cache
def taxonomies() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _only_edition(scheme: str) -> tuple[str, dict[str, str]]:
    [(edition, ids)] = taxonomies()[scheme]["editions"].items()
    return edition, ids


def problem(scheme: str, value: Any) -> str | None:
    """Why a tag of a known scheme names nothing in its taxonomy; None when it names an entry."""
    if not isinstance(value, str):
        return f"{scheme} must be text"
    given, value = value, normalised(scheme, value)
    if scheme == "cwe" and not CWE.fullmatch(value):
        return f"'{given}' is not a CWE id such as CWE-1426"
    taxonomy = taxonomies()[scheme]
    if scheme in EDITIONED:
        editions = taxonomy["editions"]
        first = next(iter(editions))
        edition, _, entry = value.partition(":")
        if not entry:
            return (
                f"'{given}' needs its edition, as in {first}:{value} or {value}:{first} "
                "(an edition may renumber its ids)"
            )
        if edition not in editions:
            return f"{taxonomy['title']} has no edition '{edition}' here (known: {', '.join(editions)})"
        ids = editions[edition]
        if entry not in ids:
            return f"'{entry}' is no id of {taxonomy['title']} {edition} ({min(ids)} to {max(ids)})"
        return None
    edition, ids = _only_edition(scheme)
    return None if value in ids else f"'{value}' is no id of {taxonomy['title']} ({edition})"


def name_of(scheme: str, value: str) -> str | None:
    """The entry's name (`Prompt Injection`), where the taxonomy is shipped and the tag names one; an ATLAS
    sub-technique's with its technique's (`LLM Prompt Injection: Direct`)."""
    if scheme not in taxonomies() or problem(scheme, value) is not None:
        return None
    value = normalised(scheme, value)
    if scheme in EDITIONED:
        edition, _, entry = value.partition(":")
        return str(taxonomies()[scheme]["editions"][edition][entry])
    ids = _only_edition(scheme)[1]
    parent = value.rpartition(".")[0] if scheme == "atlas" and value.count(".") == 2 else None
    if parent in ids:
        return f"{ids[parent]}: {ids[value]}"
    return str(ids[value])


def bare_scheme(text: str) -> str | None:
    """The one scheme whose taxonomy has an entry of this id, as its publisher writes it (`LLM01:2025`,
    `ASI01:2026`, `AML.T0051.001`, `CWE-1426`); None when no scheme has it, or more than one."""
    found = [scheme for scheme in SCHEMES if problem(scheme, text) is None]
    return found[0] if len(found) == 1 else None


def parse_selector(selector: str, given_as: str = "--tag") -> tuple[str, str]:
    """`owasp-llm:2025:LLM01` (or the publisher's id alone, `LLM01:2025`) as (scheme, value); a UsageError
    says what a selector looks like, naming it as the user gave it (`given_as`)."""
    scheme, _, value = selector.partition(":")
    if scheme not in SCHEMES and (bare := bare_scheme(selector)) is not None:
        return bare, normalised(bare, selector)
    if scheme not in SCHEMES or not value:
        raise UsageError(
            f"{given_as} {selector}: give SCHEME:VALUE with a scheme of {', '.join(SCHEMES)}, "
            "as in owasp-llm:2025:LLM01 or atlas:AML.T0051"
        )
    value = normalised(scheme, value)
    if scheme in EDITIONED and ":" not in value:
        raise UsageError(f"{given_as} {selector}: give the edition too, as in {scheme}:EDITION:{value}")
    return scheme, value


def parse_tag(text: str, given_as: str = "--tag") -> dict[str, str]:
    """`owasp-llm:2025:LLM01` as the tag `{"name": "owasp-llm", "value": "2025:LLM01"}`; a UsageError when
    it is no SCHEME:VALUE or names nothing in its taxonomy, naming it as the user gave it (`given_as`: the
    option, or the word of a question)."""
    scheme, value = parse_selector(text.strip(), given_as)
    found = problem(scheme, value)
    if found is not None:
        raise UsageError(f"{given_as} {text.strip()}: {found}")
    return {"name": scheme, "value": value}  # normalised by parse_selector


def selected(tags: list[Any], selectors: list[tuple[str, str]]) -> bool:
    """Whether an LVE's tags match every selector; a value matches itself and what lies below it
    (atlas:AML.T0051 takes AML.T0051.001)."""
    return all(
        any(
            isinstance(tag, dict)
            and tag.get("name") == scheme
            and isinstance(tag.get("value"), str)
            and (tag["value"] == value or tag["value"].startswith(value + "."))
            for tag in tags
        )
        for scheme, value in selectors
    )
