"""Validation of an LVE's environment: its state, its code read as syntax trees (nothing contributed runs),
the tools it answers and the checks it judges with, and what its instances record of it."""

from __future__ import annotations

import ast

from lvegit.base.files import FileProblem
from lvegit.checkers.registry import needs_of
from lvegit.checkers.safe_lambda import UNPARSEABLE
from lvegit.lve.environment import (
    CHECKS,
    CHECKS_MODULE,
    ENVIRONMENT_DIR,
    STATE_FILE,
    TOOLS_MODULE,
    environment_folder,
    read_sources,
    read_state,
    state_fields,
)
from lvegit.lve.instances import Instance
from lvegit.lve.problems import Problems, join_path
from lvegit.lve.spec import LVE
from lvegit.lve.template import TemplateError, braces_hint


def check_environment(lve: LVE, problems: Problems) -> set[str]:
    """The problems of an LVE's environment; returns the prompt parameters its state uses."""
    folder = f"{lve.rel}/{ENVIRONMENT_DIR}"
    if lve.environment is None:
        if environment_folder(lve.dir).is_dir():
            problems.warning(
                "", f"{ENVIRONMENT_DIR}/ is not used: test.json declares no environment", file=folder
            )
        if needs_of(lve.checker_name).environment:
            problems.error(
                "checker_args.checker_name", f"{lve.checker_name} judges an environment: declare one"
            )
        return set()
    if lve.runs is not None:
        problems.error("environment", "an environment needs a prompt or prompt_file, not multi_run_prompt")
    used = _check_state(lve, problems)
    try:
        sources = read_sources(lve.dir)
    except FileProblem as exc:
        problems.error("", exc.message, exc.line, file=folder)
        return used
    functions = {name: _functions(lve, name, text, problems) for name, text in sources.items()}
    if TOOLS_MODULE not in sources:
        problems.error("", f"{ENVIRONMENT_DIR}/{TOOLS_MODULE}.py is missing: the tools' code", file=folder)
    tools = functions.get(TOOLS_MODULE)
    for index, tool in enumerate(lve.tools.values()):
        if tool.returns is None and tools is not None and tool.name not in tools:
            problems.error(
                join_path(join_path("tools", index), "returns"),
                f"{tool.name} has no returns and {ENVIRONMENT_DIR}/{TOOLS_MODULE}.py defines no function "
                f"{tool.name}: say what a call returns, or write the function",
            )
    checks = functions.get(CHECKS_MODULE)
    unparsed = CHECKS_MODULE in sources and checks is None  # its own error says why, alone
    if (
        needs_of(lve.checker_name).environment
        and not unparsed
        and (checks is None or CHECKS[0] not in checks)
    ):
        problems.error(
            "checker_args.checker_name",
            f"{lve.checker_name} judges with {ENVIRONMENT_DIR}/{CHECKS_MODULE}.py's function security, "
            "which is not there",
        )
    return used


def _check_state(lve: LVE, problems: Problems) -> set[str]:
    """state.json is a JSON object whose `{name}` fields are injection vectors or prompt parameters."""
    assert lve.environment is not None
    file = f"{lve.rel}/{ENVIRONMENT_DIR}/{STATE_FILE}"
    try:
        state = read_state(lve.dir)
        fields = state_fields(state)
    except FileProblem as exc:
        problems.error("", exc.message.removeprefix(f"{ENVIRONMENT_DIR}/{STATE_FILE}: "), exc.line, file=file)
        return set()
    except TemplateError as exc:
        problems.error("", str(exc), file=file)
        return set()
    known = set(lve.environment.injections) | set(lve.prompt_parameters)
    for where, name in fields:
        if name not in known:
            problems.error(
                where.lstrip("."),
                f"{{{name}}} is neither an injection (environment.injections in test.json) nor a prompt "
                f"parameter{braces_hint(name)}",
                file=file,
            )
    return {name for _where, name in fields if name in lve.prompt_parameters}


def _functions(lve: LVE, module: str, text: str, problems: Problems) -> set[str] | None:
    """The names of a module's top-level functions; None where it does not parse (reported)."""
    file = f"{lve.rel}/{ENVIRONMENT_DIR}/{module}.py"
    try:
        tree = ast.parse(text, filename=f"{module}.py")
    except SyntaxError as exc:
        problems.error("", f"syntax error: {exc.msg}", exc.lineno, file=file)
        return None
    except UNPARSEABLE:
        problems.error("", "cannot be parsed (nested too deeply, or null bytes)", file=file)
        return None
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def check_environment_record(lve: LVE, instance: Instance, problems: Problems) -> None:
    """An environment LVE's instance records the state before and after (what replay judges)."""
    if lve.environment is not None and not isinstance(instance.data.get("environment"), dict):
        problems.error(
            "environment",
            "an environment LVE's instance records the state before and after its tool calls: record it "
            "again with lvegit record",
            instance.line,
            file=instance.file,
        )
    elif lve.environment is None and "environment" in instance.data:
        problems.warning(
            "environment",
            "the LVE declares no environment: this is not judged",
            instance.line,
            file=instance.file,
        )
