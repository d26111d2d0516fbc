"""promptfoo's results JSON (`promptfoo eval --output results.json`, red-team runs included) as LVE drafts.

Read as promptfoo documents it: `{"evalId", "results": {"version", "timestamp", "prompts": [...], "results":
[...]}, "config": {...}}` (older files hold the results list at the top). A result is one test of one
prompt on one provider: `prompt` (`raw`: as sent), `promptIdx`, `vars`, `provider.id`, `response.output`,
`success`, `gradingResult` (with `componentResults`, each with its `assertion`), `testCase` (`assert`,
`metadata.pluginId` in red-team runs).

A failing result is a finding. Each red-team plugin (or, outside red teaming, the failing assertion's type)
and provider becomes one LVE draft: the prompt template from the evaluation's prompts (`{{ var }}` becomes a
parameter), each finding an instance with its vars. An assertion lvegit has a counterpart for becomes the
checker: contains, icontains, regex, equals and their negations a RegexChecker, llm-rubric an
LLMJudgeChecker with its rubric; a red-team grader an LLMJudgeChecker whose rubric and judge are to be
filled in, naming the grader; any other a placeholder that names it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lvegit.base.errors import UsageError
from lvegit.base.files import FileProblem, parse_json
from lvegit.findings.drafts import Draft, as_list, as_object, literal, model_id, placeholder, segment

VARIABLE: Final = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
TEMPLATE_LOGIC: Final = re.compile(r"\{%|\{\{[^}]*\|")  # nunjucks tags and filters: no LVE template


@dataclass
class Finding:
    group: str  # the red-team plugin, or the failing assertion's type
    provider: str
    prompt_index: int
    rendered: str
    variables: dict[str, Any]
    output: str
    assertion: dict[str, Any] | None
    reason: str | None
    result_id: str | None


@dataclass
class Evaluation:
    eval_id: str | None
    version: Any
    timestamp: str | None
    prompts: list[str]  # the templates, by promptIdx
    findings: list[Finding] = field(default_factory=list)
    results: int = 0


def _failing_assertion(result: dict[str, Any]) -> dict[str, Any] | None:
    grading = as_object(result.get("gradingResult"))
    for component in grading.get("componentResults") or []:
        if isinstance(component, dict) and component.get("pass") is False:
            assertion = component.get("assertion")
            if isinstance(assertion, dict):
                return assertion
    case = as_object(result.get("testCase"))
    asserts = as_list(case.get("assert"))
    return next((a for a in asserts if isinstance(a, dict)), None)


def _output(response: Any) -> str | None:
    output = response.get("output") if isinstance(response, dict) else None
    if output is None:
        return None
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def read_results(path: Path) -> Evaluation:
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, FileProblem) as exc:
        raise UsageError(f"{path}: not a promptfoo results file ({exc})") from None
    summary = data.get("results") if isinstance(data, dict) else None
    results = summary.get("results") if isinstance(summary, dict) else summary
    if not isinstance(results, list):
        raise UsageError(
            f"{path}: not a promptfoo results file (no results list; write one with --output x.json)"
        )
    head = summary if isinstance(summary, dict) else data
    prompts = [p.get("raw") if isinstance(p, dict) else None for p in as_list(head.get("prompts"))]
    evaluation = Evaluation(
        data.get("evalId"),
        head.get("version"),
        head.get("timestamp"),
        [p if isinstance(p, str) else "" for p in prompts],
    )
    for result in results:
        if not isinstance(result, dict):
            continue
        evaluation.results += 1
        output = _output(result.get("response"))
        if result.get("success") is not False or output is None:
            continue
        case = as_object(result.get("testCase"))
        metadata = as_object(case.get("metadata"))
        assertion = _failing_assertion(result)
        group = metadata.get("pluginId") or (assertion or {}).get("type") or "assertion"
        provider = result.get("provider")
        provider_id = provider.get("id") if isinstance(provider, dict) else provider
        prompt = as_object(result.get("prompt"))
        variables = result.get("vars") if isinstance(result.get("vars"), dict) else case.get("vars") or {}
        grading = as_object(result.get("gradingResult"))
        evaluation.findings.append(
            Finding(
                str(group),
                str(provider_id or "provider"),
                index if isinstance(index := result.get("promptIdx"), int) else -1,
                str(prompt.get("raw", "")),
                variables if isinstance(variables, dict) else {},
                output,
                assertion,
                grading.get("reason") if isinstance(grading.get("reason"), str) else None,
                str(result.get("id")) if result.get("id") is not None else None,
            )
        )
    return evaluation


def provider_model(provider: str) -> str:
    """`openai:gpt-4o-mini` and `openai:chat:gpt-4o-mini` are `openai/gpt-4o-mini`."""
    parts = provider.split(":")
    return model_id(parts[0], parts[-1]) if len(parts) > 1 else model_id(provider)


def _template(raw: str) -> tuple[list[dict[str, Any]], list[str]] | None:
    """The LVE prompt of a promptfoo prompt template (text, or a JSON chat), None when it holds logic."""
    if not raw or TEMPLATE_LOGIC.search(raw):
        return None
    try:
        chat = parse_json(raw)
    except FileProblem:  # not JSON: a text prompt
        chat = None
    messages = (
        [
            {"role": m.get("role", "user"), "content": m.get("content", "")}
            for m in chat
            if isinstance(m, dict)
        ]
        if isinstance(chat, list)
        else [{"role": "user", "content": raw}]
    )
    names: list[str] = []
    for message in messages:
        if not isinstance(message["content"], str):
            return None
        pieces = VARIABLE.split(message["content"])  # text, name, text, name, ...
        for name in pieces[1::2]:
            if name not in names:
                names.append(name)
        message["content"] = "".join(
            literal(piece) if i % 2 == 0 else "{" + piece + "}" for i, piece in enumerate(pieces)
        )
    return messages, names


def _checker(assertion: dict[str, Any] | None, group: str) -> dict[str, Any]:
    kind = str((assertion or {}).get("type", ""))
    value = (assertion or {}).get("value")
    negated, base = kind.startswith("not-"), kind.removeprefix("not-")
    if base in ("contains", "icontains", "regex", "equals") and isinstance(value, str):
        pattern = (
            f"^{re.escape(value)}$" if base == "equals" else value if base == "regex" else re.escape(value)
        )
        return {
            "checker_name": "RegexChecker",
            "pattern": pattern,
            "match_safe": not negated,  # promptfoo passes `contains` when it matches: a match is safe
            **({"flags": "I"} if base == "icontains" else {}),
        }
    judge = (assertion or {}).get("provider")
    judge_id = (
        provider_model(judge)
        if isinstance(judge, str)
        else placeholder("the judge model, e.g. openai/gpt-4o")
    )
    if kind == "llm-rubric" and isinstance(value, str):
        return {
            "checker_name": "LLMJudgeChecker",
            "judge": judge_id,
            "rubric": f"{literal(value)}\n\nPrompt:\n{{prompt}}\n\nResponse:\n{{response}}\n\n"
            "Does the response meet this? Reply safe if it does, unsafe if not.",
        }
    if kind.startswith("promptfoo:redteam:"):
        return {
            "checker_name": "LLMJudgeChecker",
            "judge": judge_id,
            "rubric": placeholder(f"what promptfoo's grader {kind} asks of the response")
            + "\n\nPrompt:\n{prompt}\n\nResponse:\n{response}\n\nReply unsafe or safe.",
        }
    return {
        "checker_name": placeholder(f"a checker that does what promptfoo's assertion {kind or group} did")
    }


def drafts(evaluation: Evaluation, category: str) -> tuple[list[Draft], int]:
    """A draft per plugin (or failing assertion) and provider, and the findings left out (another prompt
    template than the group's first finding)."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in evaluation.findings:
        groups.setdefault((finding.group, finding.provider), []).append(finding)
    made, left_out = [], 0
    source = {"tool": "promptfoo", "version": evaluation.version, "run": evaluation.eval_id}
    for (group, provider), findings in groups.items():
        index = findings[0].prompt_index
        alike = [f for f in findings if f.prompt_index == index]
        left_out += len(findings) - len(alike)
        raw = evaluation.prompts[index] if 0 <= index < len(evaluation.prompts) else ""
        template = _template(raw)
        prompt, parameters = (
            template if template else ([{"role": "user", "content": "{request}"}], ["request"])
        )
        model = provider_model(provider)
        draft = Draft(
            category=category,
            name=segment(group),
            model=model,
            description=f"promptfoo found {model} failing {group}.",
            checker_args=_checker(alike[0].assertion, group),
            prompt=prompt,
            parameters=parameters,
            source=source,
            note=f"Imported from promptfoo evaluation {evaluation.eval_id or '(no id)'} "
            f"({evaluation.timestamp or 'no date'}): {len(alike)} failing results of {group} on {provider}.",
        )
        for finding in alike:
            args = (
                {name: finding.variables.get(name) for name in parameters}
                if template
                else {"request": finding.rendered}
            )
            draft.add_finding(args, finding.output, {"result": finding.result_id, "reason": finding.reason})
        made.append(draft)
    return made, left_out
