"""Prompt files: plain text (one user message), one JSON message, a JSON list of messages, or JSON lines."""

from __future__ import annotations

import re
from pathlib import Path

from lvegit.base.files import MAX_PROMPT_BYTES, FileProblem, json_lines, parse_json, path_inside, read_text
from lvegit.lve.problems import PLACEHOLDER, Problems
from lvegit.lve.prompt import Message, Role
from lvegit.lve.repo import Repository

_LOOKS_LIKE_JSON = re.compile(r"\A\s*(\{\s*\"|\[\s*\{)")


def parse_prompt_text(text: str, path: str, problems: Problems) -> list[Message]:
    """A prompt file: one JSON object per line, one JSON object or list (across lines), or plain text.

    A file that starts like JSON is held to JSON, so a typo reports its line instead of silently becoming
    a plain-text prompt.
    """
    if not _LOOKS_LIKE_JSON.match(text):
        if not text.strip():
            problems.error(path, "prompt file is empty")
            return []
        return [Message(text, Role.user, line=1)]
    from lvegit.lve.schema import parse_message, parse_messages  # slow to import: where it validates

    whole_error: FileProblem | None = None
    try:
        whole = parse_json(text)
    except FileProblem as exc:
        whole_error = exc
    else:
        if isinstance(whole, dict):
            message = parse_message(whole, path, problems, line=1)
            return [message] if message else []
        if isinstance(whole, list):
            return parse_messages(whole, path, problems)
    messages: list[Message] = []
    for number, value in json_lines(text.splitlines()):
        if isinstance(value, FileProblem):
            # A JSONL file whose first line already fails is more likely one broken multi-line object.
            report = whole_error if not messages and whole_error is not None else value
            problems.error(path, report.message, report.line)
            return []
        message = parse_message(value, f"{path}[{len(messages)}]", problems, line=number)
        if message is not None:
            messages.append(message)
    return messages


def load_prompt_file(
    lve_dir: Path, relative: str, path: str, repo: Repository, problems: Problems
) -> tuple[list[Message], str | None]:
    """The messages of a prompt file named at `path` of test.json, and the file as shown (None when it
    cannot be read: a problem says why)."""
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
