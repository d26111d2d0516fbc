from __future__ import annotations

from pathlib import Path

import jsonlines
import pytest

from lvegit.instances import append_instances, read_instances
from lvegit.problems import Problems


def read(tmp_path: Path, content: bytes) -> tuple[list, Problems]:
    path = tmp_path / "i.jsonl"
    path.write_bytes(content)
    problems = Problems("i.jsonl")
    return read_instances(path, "i.jsonl", problems), problems


def test_reads_lines_keeping_unknown_keys(tmp_path: Path) -> None:
    content = (
        b'{"args": {"a": 1}, "response": "r", "passed": false, "extra": {"k": 1}}\n\n{"response": ["x"]}'
    )
    instances, problems = read(tmp_path, content)
    assert [(i.line, i.args, i.response, i.passed) for i in instances] == [
        (1, {"a": 1}, "r", False),
        (3, {}, ["x"], True),
    ]
    assert instances[0].data["extra"] == {"k": 1}
    assert [p.render() for p in problems.items] == [
        "warning: i.jsonl:3: passed: missing; read as true (safe), as lve-tools does"
    ]


def test_every_bad_line_is_reported_and_good_lines_survive(tmp_path: Path) -> None:
    content = (
        b'{"response": "ok", "passed": true}\n'
        b'{"response": "torn\n'
        b"[1, 2]\n"
        b'{"response": "\xff\xfe", "passed": true}\n'
        b'{"args": [], "response": 1, "passed": "yes"}\n'
        b'{"passed": true}\n'
        b'{"response": "last", "passed": true}\n'
    )
    instances, problems = read(tmp_path, content)
    assert [i.line for i in instances] == [1, 7]
    assert [(p.line, p.field, p.message) for p in problems.errors] == [
        (2, "", "invalid JSON: Unterminated string starting at (line 2, column 14)"),
        (3, "", "an instance must be a JSON object, not a list"),
        (4, "", "not valid UTF-8 (byte 14)"),
        (5, "args", "must be an object, not a list"),
        (5, "response", "must be a string, object or list, not a number"),
        (5, "passed", "must be true or false, not a string"),
        (6, "response", "required field is missing"),
    ]


@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n"])
def test_a_truncated_last_line_is_reported_at_its_own_line(tmp_path: Path, ending: bytes) -> None:
    content = b'{"response": "a", "passed": true}\n\n{"args": ' + ending
    instances, problems = read(tmp_path, content)
    assert [i.line for i in instances] == [1]
    assert [p.render() for p in problems.items] == [
        "error: i.jsonl:3: invalid JSON: Expecting value (line 3, column 10)"
    ]


def test_lines_with_a_byte_order_mark_or_crlf_endings_parse(tmp_path: Path) -> None:
    content = b'\xef\xbb\xbf{"response": "a", "passed": true}\r\n{"response": "b", "passed": false}\r\n'
    instances, problems = read(tmp_path, content)
    assert [(i.line, i.response) for i in instances] == [(1, "a"), (2, "b")]
    assert problems.items == []


def test_appended_line_round_trips_through_jsonlines(tmp_path: Path) -> None:
    path = tmp_path / "i.jsonl"
    path.write_bytes(b'{"response": "torn"')  # a last line without its newline
    append_instances(path, [{"args": {"x": "caf\u00e9\n"}, "response": "r", "passed": True}])
    lines = path.read_bytes().split(b"\n")
    assert lines[0] == b'{"response": "torn"' and lines[-1] == b""
    with jsonlines.open(path) as reader:
        rows = list(reader.iter(skip_invalid=True))
    assert rows == [{"args": {"x": "caf\u00e9\n"}, "response": "r", "passed": True}]
