"""Scanners' findings as LVE drafts, and how a draft is written: test.json, README.md and the instances.

A finding is one output a scanner flagged, with the conversation it sent before that output (whatever
produced it: a template filled in, a strategy that rewrote the prompt, the earlier turns of a multi-turn
attack) and the checker that judges it as the scanner did. Findings that share a scanner's group (probe,
plugin or check), model, provider label, conversation shape and checker become one draft: turns that
every finding shares are kept as they were sent, the others become parameters, and earlier assistant
turns stay fixed content, so that the model is asked the last turn only. A draft's folder is written
whole or not at all, and never into an existing LVE: a folder that exists already must hold every finding
of its draft (an earlier import of the same scan), or the import is refused before anything is written.
What the scan did not say (a checker for a detector lvegit has no counterpart of, a judge model) is the
placeholder `lvegit validate` reports."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base.errors import LVEError, UsageError
from lvegit.base.escape import markdown_lines
from lvegit.base.files import FileProblem, ensure_inside, read_bytes, write_inside
from lvegit.lve.instances import Instance, read_instances
from lvegit.lve.problems import PLACEHOLDER, Problems
from lvegit.lve.repo import REPOSITORY_DIR, TEST_FILE, Repository, model_folder
from lvegit.publish.readme import readme_of, write_readme


def segment(text: str) -> str:
    """A folder name from a probe's or a plugin's name: lower case, letters, digits and '_'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60] or "finding"


def model_id(*names: str) -> str:
    """A model id from a scanner's names for it (a generator and a model, a provider's parts): each part
    kept to the characters a model id holds, empty parts and `.`/`..` dropped (a NUL or a slash in a
    scanner's field would otherwise become an odd or nested folder); a missing provider or model is
    `unknown`, so every draft has a model folder of its own."""
    parts = [
        cleaned
        for name in names
        for part in str(name).split("/")
        if (cleaned := re.sub(r"[^A-Za-z0-9._:-]", "", part).strip("."))
        and re.search(r"[A-Za-z0-9]", cleaned)
    ]
    while len(parts) < 2:
        parts.append("unknown")
    return "/".join(parts)


def json_value(value: Any) -> Any:
    """`value` as standard JSON holds it: a score of infinity or NaN (which json.dumps would write as
    Infinity or NaN, no JSON reader's) as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: json_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_value(item) for item in value]
    return value


def literal(text: str) -> str:
    """Text as a prompt template holds it literally (its braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def as_object(value: Any) -> dict[str, Any]:
    """A scanner's field as an object (anything else counts as an empty one)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def placeholder(what: str) -> str:
    return f"{PLACEHOLDER}: {what}"


def regex_checker(pattern: str, match_safe: bool, ignore_case: bool) -> dict[str, Any]:
    """checker_args that judge by a scanner's strings or pattern."""
    return {
        "checker_name": "RegexChecker",
        "pattern": literal(pattern),  # checker arguments are templates: a brace is data here
        "match_safe": match_safe,
        **({"flags": "I"} if ignore_case else {}),
    }


def judge_checker(judge: str | None, asks: str, question: str) -> dict[str, Any]:
    """checker_args that ask `judge` (a placeholder where the scan names none) what `asks` says, shown
    the prompt and the response, `question` last."""
    return {
        "checker_name": "LLMJudgeChecker",
        "judge": judge or placeholder("the judge model, e.g. openai/gpt-4o"),
        "rubric": f"{asks}\n\nPrompt:\n{{prompt}}\n\nResponse:\n{{response}}\n\n{question}",
    }


def unknown_checker(what: str) -> dict[str, Any]:
    """checker_args whose checker is a placeholder naming what the scanner judged with."""
    return {"checker_name": placeholder(f"a checker that does what {what} did")}


@dataclass(frozen=True)
class Finding:
    """One output a scanner flagged: the turns it sent before it, as (role, text), and how to judge it."""

    group: str  # the probe, plugin or check: the draft's name
    model: str
    turns: tuple[tuple[str, str], ...]
    output: str | dict[str, Any]  # the text, or the model's turn when it called tools (`{"steps": [...]}`)
    checker: dict[str, Any]  # checker_args that judge it as the scanner did
    scanner_id: str  # the scanner's own id of this output (its instance's idempotency key)
    info: dict[str, Any] = field(default_factory=dict)  # more of where it came from, for run_info
    variant: str = ""  # what else tells drafts of one group and model apart: the provider's label
    aim: str | None = None  # what the attack tried, where the scanner says
    tools: tuple[dict[str, Any], ...] = ()  # the functions the target was offered, as the scan's config says


@dataclass(frozen=True)
class LeftOut:
    """An output of the scan that is no instance, and why (a provider error, an empty output, ...)."""

    what: str
    reason: str


@dataclass
class Scan:
    """A scanner's file as read: the scanner, its version, its run and when that started, the findings,
    the outputs left out and how many of the scan's attempts (or results) were read."""

    tool: str
    version: str | None = None
    run: str | None = None
    started: str | None = None
    findings: list[Finding] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    read: int = 0

    def source(self, **more: str | None) -> dict[str, Any]:
        """Where the drafts came from (each instance's run_info and a tag): what the scan says of it."""
        said = {"tool": self.tool, "version": self.version, "run": self.run, **more}
        return {key: value for key, value in said.items() if value}

    def imported(self, run_kind: str, what: str) -> str:
        """The README's account of where a draft came from."""
        run, when = self.run or "(no id)", self.started or "no date"
        return f"Imported from {self.tool} {self.version or ''} {run_kind} {run} ({when}): {what}."


@dataclass
class Draft:
    category: str
    name: str
    model: str
    description: str
    checker_args: dict[str, Any]
    prompt: list[dict[str, Any]]
    parameters: list[str]
    source: dict[str, Any]  # tool, version, run: in each instance's run_info and a tag
    note: str  # what the README says of where it came from
    instances: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)  # offered to the model: test.json's tools
    # test.json's fields that say how the model is run (tools, environment, steps), where the scanner's
    # offered tools do not say it (no calls answered)
    settings: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # more of the LVE's files, by path in its folder

    def add_finding(self, args: dict[str, Any], response: Any, run_info: dict[str, Any]) -> None:
        """A failing output of the scan, as an instance: unsafe, with where in the scan it came from."""
        self.instances.append({"args": args, "response": response, "passed": False, "run_info": run_info})

    @property
    def rel(self) -> str:
        return f"{REPOSITORY_DIR}/{self.category}/{self.name}/{model_folder(self.model)}"


def _shape(finding: Finding) -> tuple[Any, ...]:
    """What must be alike for findings to share a draft, beside their group, model and label."""
    roles = tuple(role for role, _text in finding.turns)
    fixed = tuple(text for role, text in finding.turns if role == "assistant")
    judged = json.dumps(finding.checker, sort_keys=True)
    return roles, fixed, judged, json.dumps(finding.tools, sort_keys=True)


def _template(findings: list[Finding]) -> tuple[list[dict[str, Any]], list[str], dict[int, str]]:
    """The prompt of findings of one shape: a user or system turn all of them sent alike stays as sent, the
    others become parameters (`request` for the last user turn, `turn_N` for another); an assistant turn
    stays fixed content (a draft holds one conversation's), named so that several of them validate."""
    roles = [role for role, _text in findings[0].turns]
    last_user = max((i for i, role in enumerate(roles) if role == "user"), default=len(roles) - 1)
    messages: list[dict[str, Any]] = []
    names: dict[int, str] = {}
    for i, role in enumerate(roles):
        texts = {f.turns[i][1] for f in findings}
        if role == "assistant":
            messages.append({"role": role, "content": texts.pop(), "variable": f"turn_{i + 1}"})
        elif len(texts) == 1 and i != last_user:
            messages.append({"role": role, "content": literal(texts.pop())})
        else:
            names[i] = "request" if i == last_user else f"turn_{i + 1}"
            messages.append({"role": role, "content": "{" + names[i] + "}"})
    return messages, list(names.values()), names


Describe = Callable[
    [str, str, list[Finding]], tuple[str, str]
]  # (group, model, findings) -> description, note


def build_drafts(
    findings: list[Finding], category: str, source: dict[str, Any], describe: Describe
) -> list[Draft]:
    """A draft per group, model, label, conversation shape and checker. The name is the group's (and the
    label's); where one group and model hold several shapes or checkers, each gets a suffix from a hash of
    its shape, the same in every import of the same findings."""
    keyed: dict[tuple[Any, ...], list[Finding]] = {}
    for finding in findings:
        keyed.setdefault((finding.group, finding.model, finding.variant, _shape(finding)), []).append(finding)
    per_name: dict[tuple[str, str, str], int] = {}
    for group, model, variant, _shape_key in keyed:
        per_name[(group, model, variant)] = per_name.get((group, model, variant), 0) + 1
    made = []
    for (group, model, variant, shape), alike in keyed.items():
        name = segment(f"{group}_{variant}" if variant else group)[:48]
        if per_name[(group, model, variant)] > 1:
            name += "_" + hashlib.sha256(repr(shape).encode()).hexdigest()[:6]
        prompt, parameters, names = _template(alike)
        description, note = describe(group, model, alike)
        draft = Draft(category, name, model, description, alike[0].checker, prompt, parameters, source, note)
        draft.tools = [tool for tool in alike[0].tools if _function(tool)]
        for finding in alike:
            args = {names[i]: finding.turns[i][1] for i in names}
            key = f"{source.get('tool')}:{finding.scanner_id}"
            draft.add_finding(args, finding.output, {**finding.info, "idempotency_key": key})
        made.append(draft)
    return made


@dataclass
class Written:
    """What writing drafts did: the LVEs written, and those that exist and held every finding already."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def write_drafts(repo: Repository, drafts: list[Draft], author: str | None) -> Written:
    """Write each draft whose folder does not exist yet, whole or not at all. import never writes into an
    existing LVE (it may be a maintained one that merely shares the path): a folder that holds every finding
    of its draft already is left as it is, and one that lacks any refuses the whole import, naming it,
    before anything is written."""
    existing = [draft for draft in drafts if os.path.lexists(repo.root / draft.rel)]
    taken = [draft.rel for draft in existing if not _imported_already(repo, draft, author)]
    if taken:
        raise UsageError(
            f"{', '.join(taken)} exist{'s' if len(taken) == 1 else ''} already: import never writes into an "
            "existing LVE; import into a new --category and move what you want by hand"
        )
    done = Written(unchanged=[draft.rel for draft in existing])
    for draft in drafts:
        if draft in existing:
            continue
        lve_dir = repo.root / draft.rel
        created = [folder for folder in (lve_dir, *lve_dir.parents) if not os.path.lexists(folder)]
        try:
            ensure_inside(repo.lve_root, lve_dir, f"{REPOSITORY_DIR}/")
            _write(repo, draft, author)
        except (FileProblem, LVEError) as exc:
            _remove(created)
            raise UsageError(f"cannot write {draft.rel}: {exc}") from None
        done.written.append(draft.rel)
    return done


def _instance_lines(draft: Draft, author: str | None) -> list[dict[str, Any]]:
    tool = str(draft.source.get("tool"))
    return [
        json_value(
            {**instance, "author": author or tool, "run_info": {**draft.source, **instance["run_info"]}}
        )
        for instance in draft.instances
    ]


def _imported_already(repo: Repository, draft: Draft, author: str | None) -> bool:
    """Whether the existing LVE at the draft's path is an earlier import of the same source: it holds each of
    the draft's findings (by the scanner's ids) in the instance file an import writes or, for a draft
    without findings (an AgentDojo pair), its test.json and files as the import writes them."""
    lve_dir = repo.root / draft.rel
    path = lve_dir / "instances" / f"{segment(str(draft.source.get('tool')))}.jsonl"
    try:
        ensure_inside(repo.lve_root, lve_dir, f"{REPOSITORY_DIR}/")
    except FileProblem:
        return False
    if not draft.instances:
        written = {TEST_FILE: _test_json(draft, author), **draft.files}
        return all(_holds(lve_dir, relative, content) for relative, content in written.items())
    held = {instance.idempotency_key for instance in read_instances(path, draft.rel, Problems(draft.rel))}
    wanted = {Instance("", 0, line).idempotency_key for line in _instance_lines(draft, None)}
    return wanted <= held  # a bad line of its own is not ours to judge here: validate reports it


def _holds(lve_dir: Path, relative: str, content: str) -> bool:
    """Whether the LVE's file holds exactly `content`, read as every file of an LVE is (one that leads out
    of the LVE through a link, anywhere on its path, holds nothing)."""
    data = content.encode()
    try:
        return read_bytes(lve_dir / relative, len(data), within=lve_dir) == data
    except FileProblem:
        return False


def _remove(created: list[Path]) -> None:
    """Take back the folders a draft that could not be written created (innermost first)."""
    if created:
        shutil.rmtree(created[0], ignore_errors=True)
    for folder in created[1:]:
        try:
            folder.rmdir()
        except OSError:
            return


def _function(tool: dict[str, Any]) -> dict[str, Any] | None:
    """A tool as the chat-completions API takes it (`{"type": "function", "function": {...}}`, or the
    function alone), when it names a function."""
    function = as_object(tool.get("function")) or tool
    return function if isinstance(function.get("name"), str) else None


def _offered(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """test.json's tools for the functions the target was offered. The scanner did not answer its calls, so
    neither does the LVE (max_tool_steps 0): it judges the model's first decision, as the scan did."""
    if not tools:
        return {}
    declared = []
    for tool in tools:
        function = _function(tool) or {}
        parameters = function.get("parameters")
        declared.append(
            {
                "name": function["name"],
                "description": str(function.get("description") or ""),
                **({"parameters": parameters} if isinstance(parameters, dict) else {}),
            }
        )
    return {"tools": declared, "max_tool_steps": 0}


@functools.cache
def _readme() -> Any:
    """templates/draft_readme.md: a draft's README before `lvegit readme` adds its generated section."""
    from lvegit.base.templates import environment

    made = environment("lvegit.findings", autoescape=False, filters={"md_lines": markdown_lines})
    return made.get_template("draft_readme.md")


def _test_json(draft: Draft, author: str | None) -> str:
    tool = str(draft.source.get("tool"))
    test = {
        "description": draft.description,
        "model": draft.model,
        "checker_args": draft.checker_args,
        "prompt": draft.prompt,
        "prompt_parameters": draft.parameters,
        **(draft.settings or _offered(draft.tools)),
        "tags": [
            {"name": "severity", "value": "medium"},
            {"name": "source", "value": " ".join(str(v) for v in draft.source.values() if v)},
        ],
        "author": author or tool,
    }
    return json.dumps(json_value(test), indent=4, ensure_ascii=False, allow_nan=False) + "\n"


def _write(repo: Repository, draft: Draft, author: str | None) -> None:
    lve_dir = repo.root / draft.rel
    files = {TEST_FILE: _test_json(draft, author), "README.md": _readme().render(draft=draft), **draft.files}
    if draft.instances:
        lines = "".join(json.dumps(line, allow_nan=False) + "\n" for line in _instance_lines(draft, author))
        files[f"instances/{segment(str(draft.source.get('tool')))}.jsonl"] = lines
    for relative, content in files.items():
        write_inside(lve_dir, lve_dir / relative, content.encode("utf-8"))
    write_readme(readme_of(repo, lve_dir))
