"""The OpenAI batch file format, as the Batch API and offline engines (`vllm run-batch`) read and write it.

An input line is one request: `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`.
An output or error line answers one: `{"id", "custom_id", "response": {"status_code", "body"}, "error"}`.
lvegit's custom_id is `<attempt id>/<run>.<hole>`: which attempt, and which of its requests (the run
of a multi-run prompt, and the position of the hole in its conversation).

Files are streamed both ways. Answers are indexed by where their line starts and read again when used, so
that memory does not grow with the responses. Lines are read here rather than through `jsonlines`: the
index needs each line's byte offset, which jsonlines' reader does not give; each line is parsed with the
same limits as instance files (UTF-8, no NUL, bounded nesting).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from lvegit.base.files import FileProblem, decode, parse_json
from lvegit.models.base import Completion, ModelError, TransientModelError
from lvegit.models.openai_backend import completion_of

# What one input file of the OpenAI Batch API may hold: 50,000 requests and 200 MB.
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
CHAT_URL = "/v1/chat/completions"


def custom_id(attempt: str, step: str) -> str:
    return f"{attempt}/{step}"


class RequestFile:
    """Requests streamed into an input file; past `max_requests` or `max_bytes` a new file is begun
    (`paths` lists them, `ids` holds the custom_ids of each). A request already written is not written
    again: identical instance lines make identical attempts, and a batch refuses a custom_id twice."""

    def __init__(
        self,
        path: Path,
        url: str = CHAT_URL,
        max_requests: int | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.path = path
        self.url = url
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.paths: list[Path] = []
        self.ids: list[set[str]] = []
        self._handle: IO[bytes] | None = None
        self._bytes = 0

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self.ids)

    def add(self, request_id: str, body: dict[str, Any]) -> bool:
        """Write one request; False when this custom_id is already in the file."""
        if any(request_id in ids for ids in self.ids):
            return False
        line = (
            json.dumps(
                {"custom_id": request_id, "method": "POST", "url": self.url, "body": body},
                ensure_ascii=False,
            )
            + "\n"
        ).encode("utf-8")
        if self._handle is None or self._full(len(line)):
            self._begin()
        assert self._handle is not None
        self._handle.write(line)
        self._bytes += len(line)
        self.ids[-1].add(request_id)
        return True

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def _full(self, size: int) -> bool:
        if self.max_requests is not None and len(self.ids[-1]) >= self.max_requests:
            return True
        return self.max_bytes is not None and self._bytes + size > self.max_bytes

    def _begin(self) -> None:
        self.close()
        path = (
            self.path
            if not self.paths
            else self.path.with_name(f"{self.path.stem}.{len(self.paths) + 1}.jsonl")
        )
        self.paths.append(path)
        self.ids.append(set())
        self._handle = path.open("wb")
        self._bytes = 0


@dataclass(frozen=True)
class Failure:
    """Why a request got no completion. `batch`: worth a follow-up batch (rate limits, server errors, an
    expired batch); `live`: worth a live request under --batch-fallback live (also a batch that failed as a
    whole); neither: final (a bad request, a cancelled batch)."""

    message: str
    batch: bool = False
    live: bool = False

    @classmethod
    def transient(cls, message: str) -> Failure:
        """A failure worth another request: in a follow-up batch, or live."""
        return cls(message, batch=True, live=True)


@dataclass
class Answers:
    """The answers of every output and error file read so far, by custom_id. A completion beats a failure
    and the first completion wins; `failures` counts each request's failed answers (its batch retries)."""

    _files: list[tuple[Path, dict[str, str]]] = field(default_factory=list)  # path, run_info of its answers
    _where: dict[str, tuple[int, int]] = field(
        default_factory=dict
    )  # custom_id -> (file, offset) of a completion
    _failed: dict[str, Failure] = field(default_factory=dict)
    _live: dict[str, Completion] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)  # lines that answer nothing, named file:line
    ids: set[str] = field(default_factory=set)  # every custom_id answered
    asked: set[str] = field(default_factory=set)  # those an attempt asked for (the rest answer none)
    _handles: dict[int, IO[bytes]] = field(default_factory=dict)  # files read again, open until close()

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    def read(self, path: Path, run_info: dict[str, str] | None = None) -> int:
        """Index one output or error file; returns its number of answers."""
        number = len(self._files)
        self._files.append((path, run_info or {}))
        answers = 0
        offset = 0
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise ModelError(f"{path}: cannot read the batch output ({exc.strerror or exc})") from None
        with handle:
            for line_number, raw in enumerate(handle, 1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                where = f"{path}:{line_number}"
                try:
                    data = parse_json(decode(raw, line_number), line_number)
                except FileProblem as problem:  # not UTF-8, not JSON, nested too deeply
                    self.problems.append(f"{where}: {problem}")
                    continue
                request_id = data.get("custom_id") if isinstance(data, dict) else None
                if not isinstance(request_id, str):
                    self.problems.append(f"{where}: not a batch output line (no custom_id)")
                    continue
                outcome = _outcome(data)
                if isinstance(outcome, str):
                    self.problems.append(f"{where}: {outcome}")
                    continue
                answers += 1
                self.ids.add(request_id)
                if outcome is None:
                    self._where.setdefault(request_id, (number, start))
                elif request_id not in self._where:
                    self.fail(request_id, outcome)
        return answers

    def fail(self, request_id: str, failure: Failure) -> None:
        """A request that failed (in an error file, or because its batch ended without answering it)."""
        self.failures[request_id] += 1
        self._failed[request_id] = failure

    def answer_live(self, request_id: str, completion: Completion) -> None:
        self._live[request_id] = completion

    def get(self, request_id: str) -> Completion | Failure | None:
        """The completion of a request, else why it failed, else None: it was never answered."""
        if request_id in self.ids:
            self.asked.add(request_id)
        if request_id in self._live:
            return self._live[request_id]
        if request_id in self._where:
            number, offset = self._where[request_id]
            path, run_info = self._files[number]
            if number not in self._handles:
                self._handles[number] = path.open("rb")
            handle = self._handles[number]
            handle.seek(offset)
            body = json.loads(handle.readline().decode("utf-8"))["response"]["body"]
            completion = completion_of(body, "")  # it parsed when indexed
            return replace(completion, run_info=run_info)
        return self._failed.get(request_id)


def _outcome(data: dict[str, Any]) -> Failure | str | None:
    """None for a completion, a Failure for an answer that gives none, a string for a line that answers
    nothing."""
    error = data.get("error")
    if error:
        code = str(error.get("code") or "") if isinstance(error, dict) else ""
        message = str(error.get("message") or code) if isinstance(error, dict) else str(error)
        if "cancel" in code:
            return Failure(f"the batch was cancelled ({message})")
        return Failure.transient(f"error {code}: {message}" if code else f"error: {message}")
    response = data.get("response")
    if not isinstance(response, dict):
        return "neither a response nor an error"
    status, body = response.get("status_code"), response.get("body")
    if status == 200:
        try:
            completion_of(body, "")
        except TransientModelError as exc:
            return Failure.transient(str(exc))
        return None
    if not isinstance(status, int):
        return "the response has no status_code"
    message = _error_message(body)
    if status in (408, 409, 429) or status >= 500:
        return Failure.transient(f"HTTP {status}: {message}")
    return Failure(f"HTTP {status}: {message}")


def _error_message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return json.dumps(body)[:200]
