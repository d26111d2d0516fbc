"""test.json: the LVE model, loaded with problems that name the file, the field and the line."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lvegit.base.files import (
    MAX_PROMPT_BYTES,
    FileProblem,
    parse_json,
    path_inside,
    read_text,
)
from lvegit.lve.instances import InstanceFile, read_instance_file
from lvegit.lve.problems import Problem, Problems, join_path
from lvegit.lve.prompt import Message, parse_messages, parse_prompt_text
from lvegit.lve.repo import TEST_FILE, Repository, folder_matches_model, model_folder
from lvegit.lve.template import is_parameter_name

PLACEHOLDER = "<please fill in>"
# Problems in these fields leave the LVE usable for replay and runs (they are metadata).
METADATA_FIELDS = ("description", "model", "tags", "author")
PROMPT_FORMS = ("prompt", "prompt_file", "multi_run_prompt")
KNOWN_KEYS = (
    "description",
    "model",
    "checker_args",
    *PROMPT_FORMS,
    "prompt_parameters",
    "default_model_args",
    "tags",
    "author",
)
TAG_VALUES: dict[str, tuple[str, ...] | None] = {
    "severity": ("low", "medium", "high"),
    "jailbreak": ("yes", "no"),
    "paper": None,  # free text
}
RUN_KEYS = ("name", "repetitions", "prompt", "prompt_file")


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
    # The file each prompt's messages came from, relative to the repository root.
    prompt_files: dict[str, str] = field(default_factory=dict)
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

    def split_args(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Instance args split into prompt parameter values and model arguments."""
        params = {k: v for k, v in args.items() if k in self.prompt_parameters}
        model_args = {k: v for k, v in args.items() if k not in self.prompt_parameters}
        return params, model_args

    def request_args(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """What a re-run sends: the prompt parameter values, and the model arguments over the LVE's
        default_model_args."""
        params, model_args = self.split_args(args)
        return params, {**self.default_model_args, **model_args}

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


def _placeholder_problems(value: Any, path: str, problems: Problems) -> None:
    if isinstance(value, str) and value.strip() == PLACEHOLDER:
        problems.error(path, f"still holds the placeholder {PLACEHOLDER!r}: fill it in")
    elif isinstance(value, dict):
        for key, child in value.items():
            _placeholder_problems(child, join_path(path, key), problems)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _placeholder_problems(child, join_path(path, index), problems)


def _load_prompt_file(
    lve_dir: Path, relative: Any, path: str, repo: Repository, problems: Problems
) -> tuple[list[Message], str | None]:
    if not isinstance(relative, str):
        problems.error(path, "must be a file name (string)")
        return [], None
    try:
        prompt_path = path_inside(lve_dir, relative)
        text = read_text(prompt_path, MAX_PROMPT_BYTES, within=lve_dir)
    except FileProblem as exc:
        problems.error(path, exc.message)
        return [], None
    shown = repo.relative(prompt_path)
    file_problems = Problems(shown)
    messages = parse_prompt_text(text, "", file_problems)
    problems.items.extend(file_problems.items)
    if PLACEHOLDER in text:
        line = text.count("\n", 0, text.index(PLACEHOLDER)) + 1
        problems.error("", f"still holds the placeholder {PLACEHOLDER!r}: write the prompt", line, file=shown)
    return messages, shown


def _load_runs(lve_dir: Path, value: Any, repo: Repository, problems: Problems, lve: LVE) -> None:
    if not isinstance(value, list) or not value:
        problems.error(
            "multi_run_prompt", "must be a non-empty list of {name, repetitions, prompt | prompt_file}"
        )
        return
    runs = []
    for index, item in enumerate(value):
        path = join_path("multi_run_prompt", index)
        if not isinstance(item, dict):
            problems.error(path, "must be an object with name, repetitions and prompt or prompt_file")
            continue
        for key in item:
            if key not in RUN_KEYS:
                hint = " (did you mean 'repetitions'?)" if key == "repetition" else ""
                problems.warning(join_path(path, key), f"unknown key '{key}'{hint}")
        name = item.get("name", str(index))
        if not isinstance(name, str):
            problems.error(join_path(path, "name"), "must be a string")
        repetitions = item.get("repetitions", 1)
        if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
            problems.error(join_path(path, "repetitions"), "must be a whole number of at least 1")
            repetitions = 1
        forms = [k for k in ("prompt", "prompt_file") if item.get(k) is not None]
        if len(forms) != 1:
            problems.error(path, "needs exactly one of prompt or prompt_file")
            continue
        if forms[0] == "prompt":
            messages = parse_messages(item["prompt"], join_path(path, "prompt"), problems)
        else:
            messages, shown = _load_prompt_file(
                lve_dir, item["prompt_file"], join_path(path, "prompt_file"), repo, problems
            )
            if shown:
                lve.prompt_files[str(name)] = shown
        runs.append(RunPrompt(str(name), repetitions, messages))
    lve.runs = runs


def _check_tags(value: Any, problems: Problems) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        problems.error("tags", "must be a list of {name, value} objects")
        return []
    for index, tag in enumerate(value):
        path = join_path("tags", index)
        if not isinstance(tag, dict) or not isinstance(tag.get("name"), str) or "value" not in tag:
            problems.error(path, "a tag is an object with a string 'name' and a 'value'")
            continue
        allowed = TAG_VALUES.get(tag["name"], ())
        if allowed == ():
            problems.warning(join_path(path, "name"), f"unknown tag '{tag['name']}'")
        elif allowed is not None and tag["value"] not in allowed:
            problems.error(
                join_path(path, "value"),
                f"{tag['name']} must be one of {', '.join(allowed)}, not {tag['value']!r}",
            )
        elif allowed is None and not isinstance(tag["value"], str):
            problems.error(join_path(path, "value"), f"{tag['name']} must be text")
    return [t for t in value if isinstance(t, dict)]


def _required_string(data: dict[str, Any], key: str, problems: Problems, parent: str = "") -> str | None:
    path = join_path(parent, key)
    if key not in data:
        problems.error(path, "required field is missing")
        return None
    if not isinstance(data[key], str) or not data[key].strip():
        problems.error(path, "must be a non-empty string")
        return None
    return str(data[key])


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
    for key in data:
        if key not in KNOWN_KEYS:
            problems.warning(key, f"unknown key '{key}'")
    _placeholder_problems(data, "", problems)
    description = _required_string(data, "description", problems)
    model = _required_string(data, "model", problems)
    checker_args = data.get("checker_args")
    checker_name = None
    if checker_args is None:
        problems.error("checker_args", "required field is missing")
    elif not isinstance(checker_args, dict):
        problems.error("checker_args", "must be an object with checker_name and the checker's arguments")
    else:
        checker_name = _required_string(checker_args, "checker_name", problems, "checker_args")
    forms = [key for key in PROMPT_FORMS if data.get(key) is not None]
    if len(forms) != 1:
        found = ", ".join(forms) if forms else "none"
        problems.error("", f"needs exactly one of prompt, prompt_file or multi_run_prompt (found: {found})")
    if model and not folder_matches_model(lve_dir.name, model):
        problems.error(
            "model",
            f"the LVE folder '{lve_dir.name}' does not match the model: expected '{model_folder(model)}'",
        )
    category, name = repo.category_and_name(lve_dir)
    # Fields that are missing or of the wrong type are reported above and left empty, so that every
    # other check still runs and one invalid field does not hide the rest.
    lve = LVE(
        dir=lve_dir,
        rel=rel,
        category=category,
        name=name,
        description=description or "",
        model=model or "",
        checker_name=checker_name or "",
        checker_args={k: v for k, v in checker_args.items() if k != "checker_name"}
        if isinstance(checker_args, dict)
        else {},
    )
    if len(forms) == 1:
        if forms[0] == "prompt":
            lve.prompt = parse_messages(data["prompt"], "prompt", problems)
        elif forms[0] == "prompt_file":
            lve.prompt, shown = _load_prompt_file(lve_dir, data["prompt_file"], "prompt_file", repo, problems)
            if shown:
                lve.prompt_files[""] = shown
        else:
            _load_runs(lve_dir, data["multi_run_prompt"], repo, problems, lve)
    params = data.get("prompt_parameters", [])
    if params is None:
        params = []
    if not isinstance(params, list) or not all(isinstance(p, str) and is_parameter_name(p) for p in params):
        problems.error("prompt_parameters", "must be a list of parameter names (strings such as 'person')")
    else:
        lve.prompt_parameters = params
        for index, param in enumerate(params):
            if param in params[:index]:
                problems.error(join_path("prompt_parameters", index), f"'{param}' is listed twice")
    model_args = data.get("default_model_args", {})
    if not isinstance(model_args, dict):
        problems.error("default_model_args", "must be an object (temperature, top_p, max_tokens, ...)")
    else:
        lve.default_model_args = model_args
    if "tags" in data:
        lve.tags = _check_tags(data["tags"], problems)
    author = data.get("author")
    if author is not None and not isinstance(author, str):
        problems.error("author", "must be a string")
    lve.author = author if isinstance(author, str) else None
    return lve
