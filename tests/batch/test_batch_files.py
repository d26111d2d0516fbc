"""The OpenAI batch file format: input files split at the API's limits, and output and error lines read
into answers, with every line that answers nothing named by file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lvegit.batch.files import Answers, Failure, RequestFile, custom_id
from lvegit.models.base import Completion

from servers import completion


def body(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def test_requests_are_split_at_the_limits_and_written_once(tmp_path: Path) -> None:
    file = RequestFile(tmp_path / "round-1.jsonl", max_requests=2)
    assert [file.add(custom_id("a", str(step)), body(str(step))) for step in range(3)] == [True, True, True]
    assert file.add(custom_id("a", "0"), body("again")) is False  # a batch refuses a custom_id twice
    file.close()
    assert [path.name for path in file.paths] == ["round-1.jsonl", "round-1.2.jsonl"]
    assert file.count == 3
    lines = [json.loads(line) for line in (tmp_path / "round-1.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "custom_id": "a/0",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": body("0"),
    }
    assert [json.loads(line)["custom_id"] for line in (tmp_path / "round-1.2.jsonl").open()] == ["a/2"]


def test_requests_are_split_by_size(tmp_path: Path) -> None:
    file = RequestFile(tmp_path / "in.jsonl", max_bytes=300)
    for step in range(4):
        file.add(custom_id("b", str(step)), body("x" * 100))
    file.close()
    assert len(file.paths) == 4 and all(path.stat().st_size <= 300 for path in file.paths)


def line(request_id: str, **fields: Any) -> str:
    return json.dumps({"id": "batch_req_1", "custom_id": request_id, "error": None, **fields}) + "\n"


def ok(request_id: str, text: str) -> str:
    return line(request_id, response={"status_code": 200, "body": completion(body("q"), text, 1)})


def test_answers_are_read_by_custom_id(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text(
        ok("a/0", "fine")
        + line("a/1", response={"status_code": 429, "body": {"error": {"message": "slow down"}}})
        + line("a/2", response={"status_code": 400, "body": {"error": {"message": "bad request"}}})
        + line("a/3", response=None, error={"code": "batch_expired", "message": "too late"})
        + line("a/4", response=None, error={"code": "batch_cancelled", "message": "cancelled"})
        + line("a/5", response={"status_code": 200, "body": {"choices": []}})
        + "\n"
    )
    answers = Answers()
    assert answers.read(output, {"batch": "batch_1"}) == 6
    assert answers.get("a/0") == Completion("fine", "m-2026-01-01", {"batch": "batch_1"})
    assert answers.get("a/1") == Failure("HTTP 429: slow down", batch=True, live=True)
    assert answers.get("a/2") == Failure("HTTP 400: bad request")
    assert answers.get("a/3") == Failure("error batch_expired: too late", batch=True, live=True)
    assert answers.get("a/4") == Failure("the batch was cancelled (cancelled)")
    assert answers.get("a/5") == Failure("malformed response: no choices[0].message.content", True, True)
    assert answers.get("a/6") is None
    assert answers.problems == []


def test_a_completion_beats_a_failure_and_the_first_completion_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    first.write_text(line("a/0", response={"status_code": 500, "body": {}}) + ok("a/1", "one"))
    second.write_text(ok("a/0", "zero") + ok("a/1", "other") + line("a/1", response={"status_code": 500}))
    answers = Answers()
    answers.read(first)
    answers.read(second)
    assert answers.get("a/0") == Completion("zero", "m-2026-01-01")
    assert answers.get("a/1") == Completion("one", "m-2026-01-01")
    assert answers.failures["a/0"] == 1


NOT_JSON = "Expecting property name enclosed in double quotes (line 2, column 2)"


def test_lines_that_answer_nothing_are_named_by_file_and_line(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_bytes(
        ok("a/0", "fine").encode()
        + b"{not json\n"
        + b'["a list"]\n'
        + b'{"custom_id": "a/1"}\n'
        + b'{"custom_id": "a/2", "response": {"body": {}}}\n'
        + b"\xff\xfe\n"
        + b'{"custom_id": "a/3", "response": '
        + b"[" * 100_000
        + b"\n"
    )
    answers = Answers()
    assert answers.read(output) == 1
    assert [problem.split(": ", 1) for problem in answers.problems] == [
        [f"{output}:2", f"invalid JSON: {NOT_JSON}"],
        [f"{output}:3", "not a batch output line (no custom_id)"],
        [f"{output}:4", "neither a response nor an error"],
        [f"{output}:5", "the response has no status_code"],
        [f"{output}:6", "not valid UTF-8 (byte 0)"],
        [f"{output}:7", "JSON nested deeper than 64 levels"],
    ]
    assert answers.get("a/0") == Completion("fine", "m-2026-01-01")


def test_responses_are_read_again_when_used_not_kept(tmp_path: Path) -> None:
    """Memory stays flat in the responses: the index holds where each answer is, not its text."""
    output = tmp_path / "out.jsonl"
    with output.open("w") as handle:
        for number in range(1000):
            handle.write(ok(f"a/{number}", "x" * 1000 + str(number)))
    answers = Answers()
    answers.read(output)
    assert answers._where["a/999"][1] > 1_000_000  # an offset into the file
    answer = answers.get("a/999")
    assert isinstance(answer, Completion) and answer.text.endswith("999")
