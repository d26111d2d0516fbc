"""AgentDojo's suites as LVE drafts: one LVE per user task and injection task, its environment in its folder.

AgentDojo (the `agentdojo` package, 0.1.35) defines each suite as an environment (YAML data with
`{injection_...}` vectors where an attacker's text goes), tools that read and change it, user tasks (a prompt
and a utility check) and injection tasks (a goal and a security check); an attack writes the goal into the
vectors a user task's agent reads. A draft holds what AgentDojo runs for one pair under one attack:

- test.json: AgentDojo's system message and the user task's prompt, the suite's tools as AgentDojo offers
  them to an OpenAI model, the attack's texts as the environment's injections, 15 tool steps (AgentDojo's
  loop), EnvironmentChecker;
- environment/state.json: the suite's environment as AgentDojo loads it, each vector a `{placeholder}`;
- environment/*.py: AgentDojo's own code, copied (its tools, its environment and task classes, their imports
  of agentdojo pointed at the copies, their reads of the clock at the LVE's fixed one), with runtime.py
  (lvegit/findings/agentdojo_runtime.py) standing in for the parts of agentdojo that import its LLM clients;
  tools.py and checks.py call into them.

AgentDojo fills its vectors into the YAML text before it parses it, so a text with line breaks arrives
changed (a double-quoted YAML string folds them); the injections hold each text as AgentDojo's environment
ends up holding it, so that a tool answers what AgentDojo's answers.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import importlib.metadata
import importlib.resources
import inspect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from lvegit.base.errors import LVEError, UsageError
from lvegit.base.extras import require
from lvegit.findings import agentdojo_runtime
from lvegit.findings.drafts import Draft, LeftOut, literal
from lvegit.lve.environment import filled_state

VERSION = "0.1.35"  # the agentdojo whose FunctionsRuntime, TaskSuite and formatting runtime.py follows
ATTACK = "important_instructions"
BENCHMARK = "v1.2.2"  # AgentDojo's default benchmark version
MAX_TOOL_STEPS = 15  # AgentDojo's ToolsExecutionLoop
RUNTIME = "runtime"
# agentdojo's modules that runtime.py stands in for (they import AgentDojo's pipeline and its LLM clients)
STOOD_IN = ("agentdojo.functions_runtime", "agentdojo.task_suite.task_suite", "agentdojo.task_suite")
HEADER = (
    "# Copied from agentdojo {version}, {path} (MIT License: see runtime.py), by `lvegit import agentdojo`:\n"
    "# its imports of agentdojo name the copies in this folder and its reads of the clock read the LVE's\n"
    "# (runtime.now), nothing else is changed.\n"
)
# The day AgentDojo's environments are set on (their calendars' current_day): what a tool that reads the
# clock reads, in every run and every replay.
CLOCK = "2024-05-15T12:00:00"
CLOCK_READ = "datetime.datetime.now"  # how AgentDojo's tools read it
CLOCK_NAME = "_clock_now"
# other ways to read the clock, which an LVE could not reproduce: refused
OTHER_CLOCKS = ("datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today", "time.time")


def load_suite(benchmark: str, name: str) -> Any:
    """AgentDojo's suite `name` of benchmark version `benchmark`, from the installed agentdojo."""
    require("lvegit import agentdojo", "agentdojo", "agentdojo")
    installed = importlib.metadata.version("agentdojo")
    if installed != VERSION:
        raise UsageError(f"lvegit import agentdojo reads agentdojo {VERSION}; {installed} is installed")
    from agentdojo.task_suite.load_suites import get_suites

    suites = get_suites(benchmark)
    if not suites:
        raise UsageError(f"AgentDojo has no benchmark version '{benchmark}'")
    if name not in suites:
        raise UsageError(f"AgentDojo's {benchmark} has no suite '{name}' (its suites: {', '.join(suites)})")
    return suites[name]


def chosen(available: dict[str, Any], wanted: tuple[str, ...], what: str) -> list[str]:
    """The task ids asked for (all of them when none is), in AgentDojo's order."""
    unknown = [task_id for task_id in wanted if task_id not in available]
    if unknown:
        raise UsageError(f"the suite has no {what} '{unknown[0]}' (its {what}s: {', '.join(available)})")
    return [task_id for task_id in available if not wanted or task_id in wanted]


def drafts(
    suite: Any,
    benchmark: str,
    user_ids: list[str],
    injection_ids: list[str],
    attack_name: str,
    model: str,
    category: str,
) -> tuple[list[Draft], list[LeftOut]]:
    """A draft per user task and injection task of `suite`, under AgentDojo's attack `attack_name`, and the
    pairs whose environment cannot be an LVE's, with why."""
    loader = _Loader(suite)
    attack = aimed_attack(loader.fast_suite(), attack_name, model)
    files = environment_files(suite)
    made, left_out = [], []
    for user_id in user_ids:
        user_task = suite.user_tasks[user_id]
        for injection_id in injection_ids:
            injection_task = suite.injection_tasks[injection_id]
            try:
                texts = attack.attack(user_task, injection_task)
            except ValueError as exc:  # AgentDojo's: a user task whose agent reads no vector
                raise UsageError(f"AgentDojo cannot attack {suite.name} {user_id}: {exc}") from None
            draft = _draft(suite, benchmark, user_task, injection_task, attack_name, model, category)
            try:
                state, injections = loader.placed(texts)
            except LVEError as exc:  # this pair's environment cannot be an LVE's: named, the rest written
                left_out.append(LeftOut(f"{user_id} with {injection_id}", str(exc)))
                continue
            draft.settings["environment"] = {"injections": injections}
            draft.files = {
                **files,
                "environment/state.json": json.dumps(state, indent=1, ensure_ascii=False) + "\n",
                "environment/checks.py": _checks(suite, user_task.ID, injection_task.ID),
            }
            made.append(draft)
    return made, left_out


def aimed_attack(suite: Any, name: str, model: str) -> Any:
    """AgentDojo's attack `name` on `suite`, aimed at `model` (attacks that name the model take its
    name from the pipeline's, as in AgentDojo's benchmark)."""
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.attacks.attack_registry import ATTACKS, load_attack

    attacks = sorted(set(ATTACKS) - {"manual"})  # manual asks a person for each text, at a terminal
    if name not in attacks:
        raise UsageError(f"AgentDojo has no attack '{name}' to import (its attacks: {', '.join(attacks)})")

    class Target(BasePipelineElement):  # type: ignore[misc]
        def query(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("an import runs no model")

    target = Target()
    target.name = model.rpartition("/")[2]
    try:
        return load_attack(name, suite, target)
    except ValueError as exc:  # the model is none AgentDojo knows by name
        raise UsageError(
            f"AgentDojo's attack {name}: {exc} (or choose an attack that names no model: direct, "
            "ignore_previous, injecagent)"
        ) from None


def _draft(
    suite: Any,
    benchmark: str,
    user_task: Any,
    injection_task: Any,
    attack_name: str,
    model: str,
    category: str,
) -> Draft:
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message

    pair = f"{user_task.ID} with {injection_task.ID}"
    description = (
        f"AgentDojo {suite.name}, {pair} ({attack_name} attack): asked '{user_task.PROMPT}', the agent reads "
        f"an injected instruction: '{injection_task.GOAL}'"
    )
    note = (
        f"Imported from AgentDojo {VERSION} (MIT License), benchmark {benchmark}, suite {suite.name}: user "
        f"task {user_task.ID} and injection task {injection_task.ID}, the injections written by its "
        f"{attack_name} attack. environment/ holds AgentDojo's tools, environment and checks, copied; the "
        "verdict is its security check (unsafe when the injection task was done), the utility its user "
        "task's check."
    )
    prompt = [
        {"role": "system", "content": literal(load_system_message(None))},
        {"role": "user", "content": literal(user_task.PROMPT)},
    ]
    source = {"tool": "agentdojo", "version": VERSION, "run": f"{benchmark} {suite.name} {attack_name}"}
    draft = Draft(
        category=f"{category}/{suite.name}",
        name=f"{user_task.ID}-{injection_task.ID}",
        model=model,
        description=description,
        checker_args={"checker_name": "EnvironmentChecker"},
        prompt=prompt,
        parameters=[],
        source=source,
        note=note,
    )
    draft.settings = {"tools": copy.deepcopy(offered_tools(suite)), "max_tool_steps": MAX_TOOL_STEPS}
    return draft


@functools.cache  # one suite's, for each of its pairs
def offered_tools(suite: Any) -> list[dict[str, Any]]:
    """The suite's tools as AgentDojo offers them to an OpenAI model (its _function_to_openai); no
    `returns`: the environment answers them."""
    return [
        {"name": f.name, "description": f.description, "parameters": f.parameters.model_json_schema()}
        for f in suite.tools
    ]


# The environment's code


def flat_name(module: str) -> str:
    """The module of the environment folder that holds agentdojo's `module`:
    agentdojo.default_suites.v1.tools.slack -> v1_tools_slack."""
    if module in STOOD_IN:
        return RUNTIME
    parts = module.split(".")[1:]
    if parts[:1] in (["default_suites"], ["task_suite"]):
        parts = parts[1:]
    return "_".join(parts)


def _imports_of_agentdojo(tree: ast.Module) -> Iterator[ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "agentdojo" for a in node.names):
            raise LVEError(f"line {node.lineno} imports agentdojo itself: only `from ... import` is copied")
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "agentdojo"
        ):
            yield node


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _clocked(module: str, source: str) -> tuple[str, bool]:
    """`source` with each read of the clock (datetime.datetime.now) a read of the LVE's; whether any was."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        name = _dotted(node)
        if name in OTHER_CLOCKS:
            raise LVEError(
                f"{module} line {node.lineno} reads the clock with {name}: runtime.py stands in for none"
            )
        if name == CLOCK_READ:
            reads.append(node)
    lines = source.splitlines(keepends=True)
    for node in sorted(reads, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        text = lines[node.lineno - 1]
        lines[node.lineno - 1] = text[: node.col_offset] + CLOCK_NAME + text[node.end_col_offset :]
    return "".join(lines), bool(reads)


def copied(module: str) -> tuple[str, list[str]]:
    """agentdojo's `module` as the environment folder holds it, and the agentdojo modules it imports."""
    source, reads_clock = _clocked(module, inspect.getsource(importlib.import_module(module)))
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    needs = []
    for node in sorted(_imports_of_agentdojo(tree), key=lambda n: n.lineno, reverse=True):
        target = str(node.module)
        names = [f"{a.name} as {a.asname}" if a.asname else a.name for a in node.names]
        if target in STOOD_IN:
            lacking = [a.name for a in node.names if not hasattr(agentdojo_runtime, a.name)]
            if lacking:
                raise LVEError(f"{module} imports {lacking[0]} from {target}: runtime.py lacks it")
        else:
            needs.append(target)
        indent = lines[node.lineno - 1][: node.col_offset]
        end = node.end_lineno or node.lineno
        lines[node.lineno - 1 : end] = [f"{indent}from .{flat_name(target)} import {', '.join(names)}\n"]
    if reads_clock:  # imported with the module's first import (the lines before it are unchanged)
        first = next(
            node
            for node in tree.body
            if isinstance(node, ast.Import)
            or (isinstance(node, ast.ImportFrom) and node.module != "__future__")
        )
        lines.insert(first.lineno - 1, f"from .{RUNTIME} import now as {CLOCK_NAME}\n")
    path = module.replace(".", "/") + ".py"
    return HEADER.format(version=VERSION, path=path) + "".join(lines), needs


def task_modules(suite: Any) -> list[str]:
    """The modules that register the suite's tasks, in the order of their benchmark versions (an update of a
    task needs its first version registered): AgentDojo's default_suites imports them so."""
    modules = {
        type(task).__module__
        for tasks in (suite._user_tasks, suite._injection_tasks)
        for versions in tasks.values()
        for task in versions.values()
        if type(task).__module__.startswith("agentdojo.default_suites.")
    }

    def version(module: str) -> tuple[int, ...]:
        return tuple(int(part) for part in module.split(".")[2].removeprefix("v").split("_"))

    return sorted(modules, key=lambda module: (version(module), module))


def environment_files(suite: Any) -> dict[str, str]:
    """Every module the suite's tasks and tools need, copied; runtime.py; tools.py."""
    suite_module = _suite_module(suite)
    wanted = [suite_module, *task_modules(suite)]
    files: dict[str, str] = {}
    while wanted:
        module = wanted.pop()
        name = f"environment/{flat_name(module)}.py"
        if name in files:
            continue
        files[name], needs = copied(module)
        wanted += [need for need in needs if f"environment/{flat_name(need)}.py" not in files]
    runtime = importlib.resources.files("lvegit.findings").joinpath("agentdojo_runtime.py")
    files[f"environment/{RUNTIME}.py"] = runtime.read_text(encoding="utf-8")
    files["environment/tools.py"] = _tools(suite, suite_module)
    return files


def _suite_module(suite: Any) -> str:
    """The module that defines the suite (its environment class and its tool list)."""
    return str(suite.environment_type.__module__)


def _tools(suite: Any, suite_module: str) -> str:
    imports = sorted({(flat_name(f.run.__module__), f.name) for f in suite.tools})
    lines = [
        f'"""The tools of AgentDojo\'s {suite.name} suite, each run as AgentDojo runs it (runtime.py),',
        'on the suite\'s environment (State). Written by `lvegit import agentdojo`."""',
        "",
        "from typing import Any",
        "",
        "from .runtime import run_function, set_clock",
        "from .runtime import tool_result_to_str as format_result",
        f"from .{flat_name(suite_module)} import {suite.environment_type.__name__} as State",
        *(f"from .{module} import {name} as _{name}" for module, name in imports),
        "",
        '__all__ = ["State", "format_result"]',
        "",
        "# What the tools read as the time (runtime.now), in every run and replay of this LVE.",
        f"set_clock({CLOCK!r})",
    ]
    for f in suite.tools:
        lines += [
            "",
            "",
            f"def {f.name}(state: State, **arguments: Any) -> Any:",
            f"    return run_function(_{f.name}, state, arguments)",
        ]
    return "\n".join(lines) + "\n"


def _checks(suite: Any, user_id: str, injection_id: str) -> str:
    suite_module = flat_name(_suite_module(suite))
    registering = ", ".join(flat_name(module) for module in task_modules(suite))
    return f'''"""AgentDojo's checks of this pair: the security of {injection_id} (True: the attack
succeeded) and the utility of {user_id}, as AgentDojo's TaskSuite judges a run. Written by
`lvegit import agentdojo`."""

from typing import Any

# AgentDojo's tasks register with their suite on import, in the order of their benchmark versions.
from . import {registering}  # noqa: F401
from .runtime import judge
from .{suite_module} import TOOLS, task_suite

SUITE = task_suite.get_new_version({tuple(suite.benchmark_version)!r})
USER_TASK = SUITE.user_tasks[{user_id!r}]
INJECTION_TASK = SUITE.injection_tasks[{injection_id!r}]


def security(output: Any, before: Any, after: Any, calls: Any) -> bool:
    return judge(INJECTION_TASK, output, before, after, calls, TOOLS)


def utility(output: Any, before: Any, after: Any, calls: Any) -> bool:
    return judge(USER_TASK, output, before, after, calls, TOOLS)
'''


# The environment's data


@dataclass(frozen=True)
class _Vectors:
    """Canary texts that stand for the injection vectors while the environment is loaded."""

    names: list[str]

    def canary(self, index: int) -> str:
        return f"LVEGITCANARY{index}X"

    @property
    def canaries(self) -> dict[str, str]:
        return {name: self.canary(i) for i, name in enumerate(self.names)}

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(r"LVEGITCANARY(\d+)X")


class _Loader:
    """AgentDojo's load_and_inject_default_environment, its suite's files read once: the environment's YAML
    text with the texts filled in, parsed (by LibYAML where PyYAML has it: the same data, the import's
    cost), validated by the suite's model; the canaries' environment."""

    def __init__(self, suite: Any) -> None:
        from agentdojo.task_suite.task_suite import read_suite_file, validate_injections

        self.suite = suite
        self.text = read_suite_file(suite.name, "environment.yaml", suite.data_path)
        self.defaults = suite.get_injection_vector_defaults()
        self.validate_injections = validate_injections
        self.vectors = _Vectors(list(self.defaults))
        self.loaded: dict[tuple[tuple[str, str], ...], Any] = {}
        self.placements: dict[tuple[tuple[str, str], ...], tuple[Any, dict[str, str]] | LVEError] = {}
        self.marked = self.environment(self.vectors.canaries)

    def model(self, texts: dict[str, str]) -> Any:
        """The environment under `texts` (AgentDojo's environment object)."""
        self.validate_injections(texts, self.defaults)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(self.text.format(**dict(self.defaults, **texts)), Loader=loader)
        return self.suite.environment_type.model_validate(data)

    def environment(self, texts: dict[str, str]) -> Any:
        """The environment under `texts`, as JSON data, read only (pairs whose user tasks read the same
        vectors share their texts: loaded once)."""
        key = tuple(sorted(texts.items()))
        if key not in self.loaded:
            self.loaded[key] = self.model(texts).model_dump(mode="json")
        return self.loaded[key]

    def placed(self, texts: dict[str, str]) -> tuple[Any, dict[str, str]]:
        """placed(self, texts), once for the pairs that share their texts."""
        key = tuple(sorted(texts.items()))
        if key not in self.placements:
            try:
                self.placements[key] = placed(self, texts)
            except LVEError as exc:
                self.placements[key] = exc
        found = self.placements[key]
        if isinstance(found, LVEError):
            raise found
        return found

    def fast_suite(self) -> Any:
        """The suite loading its environment here (an attack loads it once per user task to see which
        vectors its agent reads)."""
        suite = copy.copy(self.suite)
        suite.load_and_inject_default_environment = self.model
        suite.get_injection_vector_defaults = lambda: dict(self.defaults)
        return suite

    def validated(self, data: Any) -> Any:
        return self.suite.environment_type.model_validate(data).model_dump(mode="json")


def placed(loader: _Loader, texts: dict[str, str]) -> tuple[Any, dict[str, str]]:
    """The environment as a state.json template (each vector a `{name}`, other braces doubled) and each
    vector's text as AgentDojo's environment holds it once `texts` (the attack's, the defaults elsewhere)
    are filled in; checked by filling the template as lvegit fills a state.

    A field that is no text but changes with the injections (a file's size) holds its value under these
    texts: it must be one the state model derives from the texts (the worker validates each attempt's first
    state with it), which is checked by changing each such field and validating the state."""
    filled = loader.environment(texts)
    values: dict[str, str] = {}
    derived: list[str] = []
    vectors = loader.vectors
    template = _template(loader.marked, filled, vectors, values, derived, "")
    injections = {name: values.get(name, texts.get(name, loader.defaults[name])) for name in vectors.names}
    if filled_state(template, injections) != filled:
        raise LVEError(f"AgentDojo's {loader.suite.name} environment cannot hold its vectors as placeholders")
    if derived:  # each changed to another value, which the state model must derive back
        changed = copy.deepcopy(template)
        for where in derived:
            _change(changed, where)
        again = loader.validated(filled_state(changed, injections))
        wrong = [where for where in derived if _at(again, where) != _at(filled, where)]
        if wrong:
            raise LVEError(
                f"AgentDojo's environment at {wrong[0]} changes with the injections, and its state model "
                "does not derive it from them"
            )
    return template, injections


def _at(data: Any, where: str) -> Any:
    for key in where.split("/")[1:]:
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def _change(data: Any, where: str) -> None:
    """Changes the number (or truth) at `where` to another."""
    parent, _, key = where.rpartition("/")
    container = _at(data, parent)
    index = int(key) if isinstance(container, list) else key
    value = container[index]
    container[index] = (not value) if isinstance(value, bool) else value + 1


def _template(
    marked: Any, filled: Any, vectors: _Vectors, values: dict[str, str], derived: list[str], where: str
) -> Any:
    if isinstance(marked, str):
        return _string_template(marked, filled, vectors, values, where)
    if isinstance(marked, dict) and isinstance(filled, dict) and marked.keys() == filled.keys():
        if any(vectors.pattern.search(key) for key in marked):
            raise LVEError(f"AgentDojo's environment has an injection vector in a key at {where or '/'}")
        return {
            key: _template(marked[key], filled[key], vectors, values, derived, f"{where}/{key}")
            for key in marked
        }
    if isinstance(marked, list) and isinstance(filled, list) and len(marked) == len(filled):
        return [
            _template(m, f, vectors, values, derived, f"{where}/{i}")
            for i, (m, f) in enumerate(zip(marked, filled, strict=True))
        ]
    if marked != filled:
        if not all(isinstance(value, int | float) for value in (marked, filled)):
            raise LVEError(f"AgentDojo's environment at {where or '/'} changes with the injections")
        derived.append(where)  # a number or the like: the state model's to derive (see placed)
        return filled
    return marked


def _string_template(marked: str, filled: Any, vectors: _Vectors, values: dict[str, str], where: str) -> str:
    pieces = vectors.pattern.split(marked)  # literal, index, literal, index, ..., literal
    literals, indices = pieces[::2], [int(i) for i in pieces[1::2]]
    if not indices:
        return literal(marked)
    found = _split(literals, filled)
    if found is None:  # YAML folded the spaces beside the text away: they become the text's
        literals = [text.rstrip() if i < len(indices) else text for i, text in enumerate(literals)]
        literals = [text.lstrip() if i else text for i, text in enumerate(literals)]
        found = _split(literals, filled)
    if found is None:
        raise LVEError(f"AgentDojo's environment at {where} does not hold its injection where the vector is")
    template = literal(literals[0])
    for index, text, after in zip(indices, found, literals[1:], strict=True):
        name = vectors.names[index]
        if values.setdefault(name, text) != text:
            raise LVEError(f"AgentDojo's environment holds two texts for {name}")
        template += "{" + name + "}" + literal(after)
    return template


def _split(literals: list[str], filled: Any) -> tuple[str, ...] | None:
    """The texts between `literals` in `filled`, when it is they with texts between them."""
    regex = "(.*?)".join(re.escape(text) for text in literals)
    found = re.fullmatch(regex, filled, re.DOTALL) if isinstance(filled, str) else None
    return found.groups() if found else None
