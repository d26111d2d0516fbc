"""test.json: the LVE model, loaded with problems that name the file, the field and the line."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvegit.base.files import (
    FileProblem,
    parse_json,
)
from lvegit.lve.environment import Environment
from lvegit.lve.impact import ImpactLevel
from lvegit.lve.instances import InstanceFile, read_instance_file
from lvegit.lve.problems import Problem, Problems, join_path
from lvegit.lve.prompt import Message
from lvegit.lve.prompt_file import load_prompt_file
from lvegit.lve.repo import TEST_FILE, Repository, folder_matches_model, has_text_name, model_folder
from lvegit.lve.tools import DEFAULT_TOOL_STEPS, Tool

if TYPE_CHECKING:
    from lvegit.lve.schema import CheckerArgs, MessageSpec, RunSpec

# Problems in these fields leave the LVE usable for replay and runs (they are metadata).
METADATA_FIELDS = ("description", "model", "tags", "author", "impact")


@dataclass
class RunPrompt:
    """One entry of `multi_run_prompt`: a prompt run `repetitions` times."""

    name: str
    repetitions: int
    messages: list[Message]


@dataclass
class LVE:
    dir: Path
    rel: str  # the LVE directory relative to the repository root
    category: str
    name: str
    description: str
    model: str
    checker_name: str
    checker_args: dict[str, Any]
    prompt: list[Message] | None = None
    runs: list[RunPrompt] | None = None
    prompt_parameters: list[str] = field(default_factory=list)
    default_model_args: dict[str, Any] = field(default_factory=dict)
    tags: list[dict[str, Any]] = field(default_factory=list)
    author: str | None = None
    impact: ImpactLevel | None = None  # declared in test.json
    # The file each prompt's messages came from, relative to the repository root.
    prompt_files: dict[str, str] = field(default_factory=dict)
    tools: dict[str, Tool] = field(default_factory=dict)  # by name, in the order declared
    max_tool_steps: int | None = None  # as test.json gives it
    environment: Environment | None = None  # the agent's environment (environment/), where it has one

    @property
    def step_limit(self) -> int:
        """How often one turn's tool calls are answered."""
        return DEFAULT_TOOL_STEPS if self.max_tool_steps is None else self.max_tool_steps

    _recorded: list[InstanceFile] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def test_file(self) -> str:
        return f"{self.rel}/{TEST_FILE}"

    @property
    def is_multi_run(self) -> bool:
        return self.runs is not None

    def run_sequence(self) -> list[RunPrompt]:
        """Every run of a multi-run LVE in order, repetitions expanded."""
        return [run for run in self.runs or [] for _ in range(run.repetitions)]

    @property
    def parameter_names(self) -> list[str]:
        """The names an instance's args give values to: the prompt parameters and the environment's
        injection vectors."""
        injections = [name for name in self.environment.injections] if self.environment else []
        return [*self.prompt_parameters, *(n for n in injections if n not in self.prompt_parameters)]

    def split_args(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Instance args split into prompt parameter values and model arguments."""
        named = self.parameter_names
        params = {k: v for k, v in args.items() if k in named}
        model_args = {k: v for k, v in args.items() if k not in named}
        return params, model_args

    def request_args(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """What a re-run sends: the prompt parameter values, and the model arguments over the LVE's
        default_model_args (with the tools it offers, which the chat-completions API takes beside them)."""
        params, model_args = self.split_args(args)
        offered = {"tools": [tool.as_api() for tool in self.tools.values()]} if self.tools else {}
        return params, {**self.default_model_args, **model_args, **offered}

    def instance_files(self) -> list[Path]:
        return instance_files(self.dir)

    def recorded(self) -> list[InstanceFile]:
        """Its instance files as read, read on first use only: validation, replay and runs of one loaded
        LVE share them."""
        if self._recorded is None:
            self._recorded = [
                read_instance_file(path, f"{self.rel}/instances/{path.name}")
                for path in self.instance_files()
            ]
        return self._recorded

    def forget_recorded(self) -> None:
        """Let the instance files as read go (a large run keeps only what its attempts need)."""
        self._recorded = None


def instance_files(lve_dir: Path) -> list[Path]:
    """The instance files of an LVE folder (instances/*.jsonl, and *.json holding JSONL): every such
    name that is not a folder, links and other odd entries included, so that reading them says what is
    wrong with them instead of passing them over."""
    folder = lve_dir / "instances"
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if p.suffix in (".jsonl", ".json") and (p.is_symlink() or not p.is_dir())
    )


def key_line(text: str, path: str) -> int | None:
    """Line of a JSON path's key in `text`, each key searched after the previous one. Paths into lists
    (`tags[1].value`) give the line of the list's key: a textual search cannot tell list items apart."""
    position = 0
    for key in re.findall(r"[A-Za-z_][\w-]*", path.split("[", 1)[0]):
        match = re.compile(rf'"{re.escape(key)}"\s*:').search(text, position)
        if match is None:
            break
        position = match.start()
    return text.count("\n", 0, position) + 1 if position else None


def _load_runs(specs: list[RunSpec], repo: Repository, lve: LVE, problems: Problems) -> None:
    runs = []
    for index, spec in enumerate(specs):
        name = spec.name if spec.name is not None else str(index)
        path = join_path(join_path("multi_run_prompt", index), "prompt_file")
        messages = _messages(lve, spec.prompt, spec.prompt_file, (path, name), repo, problems)
        runs.append(RunPrompt(name, spec.repetitions, messages))
    lve.runs = runs


def _messages(
    lve: LVE,
    prompt: list[MessageSpec] | None,
    prompt_file: str | None,
    where: tuple[str, str],
    repo: Repository,
    problems: Problems,
) -> list[Message]:
    """A prompt given inline or in a file; `where` is the field naming the file and the run it is for."""
    if prompt is not None:
        return [message.as_message() for message in prompt]
    if prompt_file is None:
        return []
    path, run = where
    messages, shown = load_prompt_file(lve.dir, prompt_file, path, repo, problems)
    if shown:
        lve.prompt_files[run] = shown
    return messages


Loaded = tuple["LVE | None", Problems, str]  # what load_lve returns


def load_lve(repo: Repository, lve_dir: Path) -> Loaded:
    """Read an LVE directory: the LVE (None when test.json is no JSON object), the problems found,
    and the text of test.json (for locating problems with `locate_lines`)."""
    key = Path(os.path.normpath(lve_dir))
    if key not in repo.loaded:
        repo.loaded[key] = _load(repo, key)
    lve, problems, text = repo.loaded[key]
    return lve, replace(problems, items=list(problems.items)), text  # each caller adds its own findings


def _load(repo: Repository, lve_dir: Path) -> Loaded:
    rel = repo.relative(lve_dir)
    problems = Problems(f"{rel}/{TEST_FILE}")
    if not has_text_name(lve_dir):
        problems.error("", "the LVE's folder name is not UTF-8 text: rename it (an LVE is named by its path)")
        return None, problems, ""
    try:
        text = repo.test_json(lve_dir)
        data = parse_json(text)
    except FileProblem as exc:
        problems.error("", exc.message, exc.line)
        return None, problems, ""
    if not isinstance(data, dict):
        problems.error("", "test.json must hold one JSON object")
        return None, problems, text
    return _build(repo, lve_dir, rel, data, problems), problems, text


def blocks(problem: Problem) -> bool:
    """Whether an error makes its LVE unusable for replay and runs (one in metadata does not)."""
    return problem.field.split(".")[0].split("[")[0] not in METADATA_FIELDS


def blocking_errors(problems: Problems) -> list[Problem]:
    """The errors that make an LVE unusable for replay and runs."""
    return [p for p in problems.errors if blocks(p)]


def locate_lines(problems: Problems, text: str) -> None:
    """Give test.json problems that name a field the line of that field."""
    problems.items[:] = [
        replace(p, line=key_line(text, p.field))
        if p.line is None and p.file == problems.file and p.field
        else p
        for p in problems.items
    ]


def _build(repo: Repository, lve_dir: Path, rel: str, data: dict[str, Any], problems: Problems) -> LVE:
    # Fields that are missing or invalid are reported and left empty, so that every other check still
    # runs and one invalid field does not hide the rest.
    from lvegit.lve.schema import read_test_file  # slow to import: where it validates (see its docstring)

    values = read_test_file(data, problems)
    model = values.get("model")
    if model and not folder_matches_model(lve_dir.name, model):
        problems.error(
            "model",
            f"the LVE folder '{lve_dir.name}' does not match the model: expected '{model_folder(model)}'",
        )
    category, name = repo.category_and_name(lve_dir)
    checker: CheckerArgs | None = values.get("checker_args")
    lve = LVE(
        dir=lve_dir,
        rel=rel,
        category=category,
        name=name,
        description=values.get("description") or "",
        model=model or "",
        checker_name=checker.checker_name if checker else "",
        checker_args=checker.arguments if checker else {},
        prompt_parameters=values.get("prompt_parameters") or [],
        default_model_args=values.get("default_model_args", {}),
        tags=[tag.as_dict() for tag in values.get("tags", [])],
        author=values.get("author"),
        impact=values.get("impact"),
        tools={spec.name: spec.as_tool() for spec in values.get("tools") or []},
        max_tool_steps=values.get("max_tool_steps"),
    )
    if (environment := values.get("environment")) is not None:
        lve.environment = Environment(dict(environment.injections))
    if values.get("multi_run_prompt") is not None:
        _load_runs(values["multi_run_prompt"], repo, lve, problems)
    elif values.get("prompt") is not None or values.get("prompt_file") is not None:
        where = ("prompt_file", "")
        lve.prompt = _messages(lve, values.get("prompt"), values.get("prompt_file"), where, repo, problems)
    return lve
