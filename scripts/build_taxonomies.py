"""Write lvegit/lve/taxonomies.json: the ids (and names) of the taxonomies an LVE's tags may name, by edition.

- MITRE ATLAS: tactics, techniques, sub-techniques and mitigations from ATLAS.yaml (mitre-atlas/atlas-data,
  Apache-2.0), given as the first argument (a copy ships with the tests: tests/reference/);
- AVID: the SEP taxonomy as avidtools (the maintained library lvegit's AVID export uses) defines it;
- OWASP Top 10 for LLM Applications 2025 and OWASP Top 10 for Agentic Applications 2026: the ten ids and
  names each publishes (genai.owasp.org). A new edition is added here, with its source, then this is run;
- CWE: the weaknesses and categories of MITRE's CWE list (cwec_vX.Y.xml from cwe.mitre.org/data/downloads,
  or the copy npm's cwe-sdk ships), given as the second argument, and the entries of later versions listed
  in CWE_LATER. MITRE's terms of use let the list be copied on condition that its copyright designation and
  licence go with it: they are written beside it (CWE_NOTICE).

    python scripts/build_taxonomies.py tests/reference/ATLAS.yaml cwec_v4.15.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import yaml
from avidtools.datamodels.enums import SepEnum

OUT = Path(__file__).resolve().parent.parent / "lvegit" / "lve" / "taxonomies.json"

OWASP_LLM_2025 = {
    "LLM01": "Prompt Injection",
    "LLM02": "Sensitive Information Disclosure",
    "LLM03": "Supply Chain",
    "LLM04": "Data and Model Poisoning",
    "LLM05": "Improper Output Handling",
    "LLM06": "Excessive Agency",
    "LLM07": "System Prompt Leakage",
    "LLM08": "Vector and Embedding Weaknesses",
    "LLM09": "Misinformation",
    "LLM10": "Unbounded Consumption",
}
OWASP_AGENTIC_2026 = {
    "ASI01": "Agent Goal Hijack",
    "ASI02": "Tool Misuse and Exploitation",
    "ASI03": "Identity and Privilege Abuse",
    "ASI04": "Agentic Supply Chain Vulnerabilities",
    "ASI05": "Unexpected Code Execution",
    "ASI06": "Memory and Context Poisoning",
    "ASI07": "Insecure Inter-Agent Communication",
    "ASI08": "Cascading Failures",
    "ASI09": "Human-Agent Trust Exploitation",
    "ASI10": "Rogue Agents",
}


# Entries added after the version of the list given, as CWE publishes them (cwe.mitre.org).
CWE_LATER = {"4.16": {"CWE-1427": "Improper Neutralization of Input Used for LLM Prompting"}}
CWE_NOTICE = (
    "Copyright (c) 2006-2024, The MITRE Corporation. CWE, CWSS, CWRAF, and the CWE logo are trademarks of "
    "The MITRE Corporation. CWE Usage: MITRE hereby grants you a non-exclusive, royalty-free license to use "
    "CWE for research, development, and commercial purposes. Any copy you make for such purposes is "
    "authorized on the condition that you reproduce MITRE's copyright designation and this license in any "
    "such copy. "
    'ALL DOCUMENTS AND THE INFORMATION CONTAINED IN THE CWE ARE PROVIDED ON AN "AS IS" BASIS '
    "(https://cwe.mitre.org/about/termsofuse.html)."
)


def cwe(path: Path) -> tuple[str, dict[str, str]]:
    """The version of a CWE list and its weaknesses and categories, with those of CWE_LATER."""
    root = ElementTree.parse(path).getroot()
    namespace = root.tag.partition("}")[0] + "}"
    ids = {
        f"CWE-{entry.get('ID')}": str(entry.get("Name"))
        for kind in ("Weaknesses", "Categories")
        for entry in root.find(namespace + kind) or []
    }
    for later in CWE_LATER.values():
        ids.update(later)
    version = "+".join([str(root.get("Version")), *CWE_LATER])
    return version, dict(sorted(ids.items(), key=lambda item: int(item[0].removeprefix("CWE-"))))


def atlas(path: Path) -> tuple[str, dict[str, str]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    ids = {}
    for matrix in data["matrices"]:
        for kind in ("tactics", "techniques", "mitigations"):
            for entry in matrix.get(kind, []):
                ids[str(entry["id"])] = str(entry["name"])
    return str(data["version"]), dict(sorted(ids.items()))


def avid() -> dict[str, str]:
    ids = {}
    for member in SepEnum:
        code, _, name = str(member.value).partition(": ")
        ids[code] = name
    return dict(sorted(ids.items()))


def main() -> None:
    atlas_version, atlas_ids = atlas(Path(sys.argv[1]))
    cwe_version, cwe_ids = cwe(Path(sys.argv[2]))
    taxonomies = {
        "owasp-llm": {
            "title": "OWASP Top 10 for LLM Applications",
            "editions": {"2025": OWASP_LLM_2025},
            "source": "https://genai.owasp.org/llm-top-10/",
        },
        "owasp-agentic": {
            "title": "OWASP Top 10 for Agentic Applications",
            "editions": {"2026": OWASP_AGENTIC_2026},
            "source": "https://genai.owasp.org/resource/owasp-top-10-for-agentic-applications-for-2026/",
        },
        "atlas": {
            "title": "MITRE ATLAS",
            "editions": {atlas_version: atlas_ids},
            "source": "mitre-atlas/atlas-data",
        },
        "avid": {
            "title": "AVID taxonomy (SEP view)",
            "editions": {"avidtools": avid()},
            "source": "avidtools",
        },
        "cwe": {
            "title": "CWE",
            "editions": {cwe_version: cwe_ids},
            "source": "https://cwe.mitre.org/data/downloads.html",
            "notice": CWE_NOTICE,
        },
    }
    OUT.write_text(json.dumps(taxonomies, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"wrote {OUT}: "
        + ", ".join(f"{k} ({sum(len(e) for e in v['editions'].values())})" for k, v in taxonomies.items())
    )


if __name__ == "__main__":
    main()
