"""Validation of whole LVEs: test.json, prompts and their parameters, the checker, and every instance."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from lvegit.base.errors import CheckerError
from lvegit.base.files import FileProblem
from lvegit.checkers.registry import (
    BUILTIN_NAMES,
    CheckerFactory,
    Signature,
    builtin_checker,
    builtin_signature,
    filled_by_instances,
    needs_of,
    not_filled_reason,
)
from lvegit.checkers.registry import is_multi_run_checker as builtin_is_multi_run
from lvegit.checkers.safe_lambda import lambda_arguments
from lvegit.judge.results import LVEReport
from lvegit.judge.validate_environment import check_environment, check_environment_record
from lvegit.judge.validate_tools import check_tools
from lvegit.lve.instances import Instance
from lvegit.lve.problems import PLACEHOLDER, Problems, join_path, suggestion
from lvegit.lve.prompt import Message, Role, fill_holes, variable_names, with_trailing_hole
from lvegit.lve.repo import CHECKER_DIR, Repository, is_withheld
from lvegit.lve.routing_file import route_problem
from lvegit.lve.spec import LVE, Loaded, load_lve, locate_lines
from lvegit.lve.template import TemplateError, braces_hint, placeholders


@dataclass(frozen=True)
class _Source:
    """Where a message was written: its file, its JSON path there, and the line when known."""

    file: str
    field: str
    line: int | None


def _prompt_messages(lve: LVE) -> list[tuple[str, list[Message]]]:
    """(key in lve.prompt_files, messages) for the single prompt or every multi-run prompt."""
    if lve.runs is not None:
        return [(run.name, run.messages) for run in lve.runs]
    return [("", lve.prompt or [])]


def _prompt_sources(lve: LVE) -> list[tuple[str, str, list[Message]]]:
    """Each prompt's file, the JSON path of its messages there ("" for a prompt file), and its messages."""
    result = []
    for index, (key, messages) in enumerate(_prompt_messages(lve)):
        if key in lve.prompt_files:
            result.append((lve.prompt_files[key], "", messages))
        else:
            base = f"multi_run_prompt[{index}].prompt" if lve.runs is not None else "prompt"
            result.append((lve.test_file, base, messages))
    return result


def _sources(lve: LVE) -> list[tuple[_Source, Message]]:
    """Every message with where it was written."""
    result = []
    for file, base, messages in _prompt_sources(lve):
        for position, message in enumerate(messages):
            if base:
                result.append((_Source(file, join_path(base, position), None), message))
            else:
                field = f"[{position}]" if len(messages) > 1 else ""
                result.append((_Source(file, field, message.line), message))
    return result


def _line_of(text: str, needle: str, first_line: int | None) -> int | None:
    """The line of `needle` inside a message's text (for plain-text prompt files)."""
    if first_line is None or needle not in text:
        return first_line
    return first_line + text.count("\n", 0, text.index(needle))


def _check_prompts(lve: LVE, problems: Problems, parameters_known: bool) -> set[str]:
    """Placeholders against prompt_parameters (when those are known: an invalid list is one error, not one
    more per placeholder) and the shape of holes; returns the parameter names used."""
    used: set[str] = set()
    declared = set(lve.prompt_parameters)
    for source, message in _sources(lve):
        texts = []
        if message.role != Role.assistant and message.content is not None:
            texts.append(("content", message.content))
        if message.image_url is not None:
            texts.append(("image_url", message.image_url))
        for key, text in texts:
            where = join_path(source.field, key) if source.field else key
            try:
                names = placeholders(text)
            except TemplateError as exc:
                problems.error(where, str(exc), source.line, file=source.file)
                used.update(declared)  # an unreadable template may use any parameter: no second error
                continue
            used.update(names)
            for name in names:
                if parameters_known and name not in declared:
                    line = _line_of(text, "{" + name, source.line)
                    problems.error(
                        where,
                        f"placeholder {{{name}}} is not listed in prompt_parameters{braces_hint(name)}",
                        line,
                        file=source.file,
                    )
    for key, messages in _prompt_messages(lve):
        full = with_trailing_hole(messages)
        assistants = [m for m in full if m.role == Role.assistant and not m.tool_calls]
        names = [n for n in variable_names(full) if n is not None]
        where = f"multi_run_prompt ({key})" if lve.runs is not None else "prompt"
        if len(assistants) > 1 and any(m.variable is None for m in assistants):
            problems.error(
                where,
                "with several assistant messages, each needs a 'variable' name",
                file=lve.prompt_files.get(key, lve.test_file),
            )
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            problems.error(
                where,
                f"variable name(s) used twice: {', '.join(duplicates)}",
                file=lve.prompt_files.get(key, lve.test_file),
            )
    return used


def _checker_signature(lve: LVE, problems: Problems) -> tuple[Signature, bool | None] | None:
    """The checker's constructor signature and whether it is a multi-run checker (None: unknown)."""
    name = lve.checker_name
    cls = builtin_checker(name)
    if cls is not None:
        return builtin_signature(name), builtin_is_multi_run(cls)
    from lvegit.checkers.custom import read_custom_classes  # a custom checker's: where one is named

    try:
        custom = read_custom_classes(lve.dir)
    except FileProblem as exc:
        problems.error("", exc.message, exc.line, file=f"{lve.rel}/{CHECKER_DIR}")
        return None
    if PLACEHOLDER in name:  # still to be chosen: the placeholder's own error says so, once
        return None
    if name not in custom:
        problems.error(
            "checker_args.checker_name",
            f"unknown checker '{name}'{suggestion(name, [*BUILTIN_NAMES, *custom])}: not one of "
            f"{', '.join(sorted(BUILTIN_NAMES))}, and no class of that name in {CHECKER_DIR}/checker*.py",
        )
        return None
    found = custom[name]
    multi = True if "MultiRunBaseChecker" in found.bases else False if "BaseChecker" in found.bases else None
    return Signature(found.required, found.optional, found.takes_any), multi


def _check_checker(lve: LVE, problems: Problems, factory: CheckerFactory) -> set[str]:
    """Checker name and arguments; returns the parameter names the string arguments refer to."""
    used: set[str] = set()
    found = _checker_signature(lve, problems)
    if found is None:
        return used
    signature, multi = found
    _check_argument_names(lve, problems, signature)
    has_placeholders = _check_argument_templates(lve, problems, used)
    if has_placeholders is None:
        return used | set(lve.prompt_parameters)  # as for prompts: no second error
    if multi is not None and multi != lve.is_multi_run:
        needs = "a multi-run checker (MultiRunBaseChecker)" if lve.is_multi_run else "a single-run checker"
        problems.error(
            "checker_args.checker_name",
            f"this LVE's prompt form needs {needs}; {lve.checker_name} is not one",
        )
    checker_errors = [p for p in problems.errors if p.field.startswith("checker_args")]
    if checker_errors or needs_of(lve.checker_name).runs != "inline" or has_placeholders:
        return used
    try:  # inline checkers are quick trusted code: building one checks lambdas, regexes and flags now
        factory.for_args({})
    except CheckerError as exc:
        problems.error("checker_args", str(exc).split(": checker_args: ", 1)[-1])
    return used


def _check_argument_names(lve: LVE, problems: Problems, signature: Signature) -> None:
    """Every argument the checker needs is given, and none it does not take."""
    for name in signature.required:
        if name not in lve.checker_args:
            problems.error("checker_args", f"{lve.checker_name} needs the argument '{name}'")
    for name in lve.checker_args:
        if not signature.takes_any and name not in (*signature.required, *signature.optional):
            problems.error(join_path("checker_args", name), f"{lve.checker_name} takes no argument '{name}'")


def _check_argument_templates(lve: LVE, problems: Problems, used: set[str]) -> bool | None:
    """The placeholders of the string arguments, each where it can be filled; the parameters they refer
    to are added to `used`. Returns whether an argument that the instances fill has any, or None when an
    argument is no template at all (reported: the rest of the checker is not checked)."""
    has_placeholders = False
    cls = builtin_checker(lve.checker_name)
    own_templates, own_fields = (cls.template_args, cls.template_fields) if cls else ((), ())
    for name, value in lve.checker_args.items():
        if not isinstance(value, str):
            continue
        try:
            names = placeholders(value)
        except TemplateError as exc:
            problems.error(join_path("checker_args", name), str(exc))
            return None
        if name in own_templates:  # the checker fills it with the parameters and its own fields
            _check_own_template(lve, problems, name, names, own_fields)
            used.update(n for n in names if n not in own_fields)
        elif names and not filled_by_instances(lve.checker_name, name):
            problems.error(
                join_path("checker_args", name), not_filled_reason(lve.checker_name, name, names[0])
            )
        else:
            used.update(names)
            has_placeholders = has_placeholders or bool(names)
    return has_placeholders


def _check_own_template(
    lve: LVE, problems: Problems, name: str, names: list[str], own_fields: tuple[str, ...]
) -> None:
    """A template the checker fills itself takes only prompt parameters and the checker's own fields."""
    for unknown in (n for n in names if n not in own_fields and n not in lve.prompt_parameters):
        problems.error(
            join_path("checker_args", name),
            f"{{{unknown}}} is neither a prompt parameter nor one of "
            f"{', '.join('{' + f + '}' for f in own_fields)}",
        )


def _check_lambda_parameters(lve: LVE, problems: Problems) -> set[str]:
    """A core checker's lambda receives every prompt parameter as a keyword argument: its arguments use
    parameters, an argument that is no parameter has no value, and a parameter it cannot take breaks
    the call. Returns the parameters the lambdas take."""
    cls = builtin_checker(lve.checker_name)
    if cls is None:
        return set()
    used: set[str] = set()
    declared = lve.prompt_parameters
    for argument, leading in cls.parameter_lambdas.items():
        source = lve.checker_args.get(argument)
        found = lambda_arguments(source) if isinstance(source, str) else None
        if found is None:  # not a lambda: building the checker reports it
            continue
        where = join_path("checker_args", argument)
        if len(found.positional) < leading:
            problems.error(where, "the lambda must take the response as its first argument")
            continue
        receives = found.names[leading:]
        used.update(name for name in receives if name in declared)
        for name in receives:
            if name not in declared and name not in found.with_default:
                listed = ", ".join(declared) if declared else "none"
                problems.error(
                    where,
                    f"lambda argument '{name}' is neither the response nor a prompt parameter "
                    f"(prompt_parameters: {listed})",
                )
        if not found.any_keyword:
            for name in declared:
                if name not in receives:
                    problems.error(
                        where,
                        f"the lambda is called with every prompt parameter but takes no '{name}': "
                        f"add it to its arguments (or end them with **kwargs)",
                    )
    return used


def _check_judge_route(repo: Repository, lve: LVE, problems: Problems) -> None:
    """A checker's judge is a model like any other: the repository must route it."""
    needs = needs_of(lve.checker_name)
    judge = needs.judge_model(lve.checker_args)
    if needs.judge_argument is not None and judge is not None and PLACEHOLDER not in judge:
        reason = route_problem(repo.root, judge)
        if reason is not None:
            problems.error(join_path("checker_args", needs.judge_argument), reason)


def _check_unused_parameters(lve: LVE, used: set[str], problems: Problems) -> None:
    """A declared parameter that nothing visibly uses is a warning, never an error: checkers receive all
    parameters in param_values, and a custom checker may read any of them (so it gets no warning)."""
    if needs_of(lve.checker_name).runs == "sandbox":
        return
    for index, name in enumerate(lve.prompt_parameters):
        if name not in used:
            problems.warning(
                join_path("prompt_parameters", index),
                f"parameter '{name}' is not used by any prompt or checker argument",
            )


def _expected_holes(lve: LVE) -> list[list[Message]]:
    if lve.runs is not None:
        return [run.messages for run in lve.run_sequence()]
    return [lve.prompt or []]


def _check_instance(lve: LVE, instance: Instance, problems: Problems) -> None:
    def error(field: str, message: str) -> None:
        problems.error(field, message, instance.line, file=instance.file)

    for name in lve.prompt_parameters:
        if name not in instance.args:
            error(join_path("args", name), f"missing value for prompt parameter '{name}'")
    check_environment_record(lve, instance, problems)
    prompts = _expected_holes(lve)
    response = instance.response
    if lve.runs is not None:
        if not isinstance(response, list) or len(response) != len(prompts):
            error("response", f"must be a list with one entry per run ({len(prompts)} runs)")
            return
        pairs = list(zip(prompts, response, strict=True))
    else:
        pairs = [(prompts[0], response)]
    for index, (messages, value) in enumerate(pairs):
        try:
            fill_holes(messages, value, tools=bool(lve.tools))
        except ValueError as exc:
            error(f"response[{index}]" if lve.runs is not None else "response", str(exc))


def _check_instances(lve: LVE, problems: Problems) -> None:
    for recorded in lve.recorded():
        found = Problems(recorded.shown, list(recorded.problems.items))  # the shared file's stay as read
        for instance in recorded.instances:
            _check_instance(lve, instance, found)
        problems.items.extend(sorted(found.items, key=lambda p: p.line or 0))


def validate_lve(
    repo: Repository,
    lve_dir: Path,
    strict: bool = False,
    loaded: Loaded | None = None,
    factory: CheckerFactory | None = None,
) -> LVEReport:
    """An LVE's findings. `loaded`: what load_lve returned for it, where the caller has read it already;
    `factory`: the LVE's checker factory, where the caller builds its checker too (it is built once)."""
    if loaded is None and is_withheld(lve_dir):
        from lvegit.judge.withheld import withheld_report

        return withheld_report(repo, lve_dir)
    lve, load_problems, text = loaded or load_lve(repo, lve_dir)
    problems = Problems(load_problems.file, list(load_problems.items))  # the caller's stay as they were
    if lve is not None:
        with contextlib.nullcontext(factory) if factory else CheckerFactory(lve) as building:
            checker_used = (
                _check_checker(lve, problems, building) if lve.checker_name else set(lve.prompt_parameters)
            )
        _check_judge_route(repo, lve, problems)
        parameters_known = not any(p.field.startswith("prompt_parameters") for p in load_problems.errors)
        used = _check_prompts(lve, problems, parameters_known) | checker_used
        used |= check_tools(lve, _prompt_sources(lve), problems)
        used |= check_environment(lve, problems)
        if parameters_known:
            _check_unused_parameters(lve, used | _check_lambda_parameters(lve, problems), problems)
        _check_instances(lve, problems)
    locate_lines(problems, text)
    report = LVEReport(repo.relative(lve_dir))
    for problem in problems.items:
        if problem.severity == "error" or strict:
            report.errors.append(replace(problem, severity="error"))
        else:
            report.warnings.append(problem)
    return report
