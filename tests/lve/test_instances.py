from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonlines
import pytest

from lvegit.base.files import MAX_INSTANCE_FILE_BYTES, FileProblem
from lvegit.lve.instances import InstanceKeys, append_instances, count_lines, read_instances
from lvegit.lve.problems import Problems

from builders import fill


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


APPENDER = """
import sys
from pathlib import Path
from lvegit.lve.instances import InstanceKeys, append_instances

path, keys = Path(sys.argv[1]), InstanceKeys()
for n in range(40):  # one line per call, as runs append attempts while they finish
    record = {"response": str(n), "passed": True, "run_info": {"idempotency_key": f"key-{n}"}}
    append_instances(path, [record], keys)
"""


def test_appending_processes_append_each_key_once(tmp_path: Path) -> None:
    """Four processes append the same 40 keys to one file at once: each key lands once, whole."""
    path = tmp_path / "lve/instances/i.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"response": "old", "passed": true, "run_info": {"idempotency_key": "key-7"}}\n')
    command = [sys.executable, "-c", APPENDER, str(path)]
    processes = [subprocess.Popen(command, stderr=subprocess.PIPE) for _ in range(4)]
    for process in processes:
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    with jsonlines.open(path) as reader:
        keys = [row["run_info"]["idempotency_key"] for row in reader]
    assert sorted(keys) == sorted(f"key-{n}" for n in range(40))


def test_an_instance_file_rewritten_by_hand_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "lve/instances/i.jsonl"
    path.parent.mkdir(parents=True)
    keys = InstanceKeys()

    def record(key: str) -> dict[str, object]:
        return {"response": "r", "passed": True, "run_info": {"idempotency_key": key}}

    assert append_instances(path, [record("a"), record("b"), record("a")], keys) == [record("a"), record("b")]
    path.write_text(json.dumps(record("c")) + "\n")  # shorter than what this process saw
    assert append_instances(path, [record("a"), record("c")], keys) == [record("a")]


def test_an_old_is_safe_key_is_named_where_passed_is_missing(tmp_path: Path) -> None:
    _instances, problems = read(tmp_path, b'{"response": "r", "is_safe": false}\n')
    assert [p.render() for p in problems.items] == [
        "warning: i.jsonl:1: passed: missing; read as true (safe), as lve-tools does; this line has the old "
        "key `is_safe`"
    ]


def test_an_append_to_a_full_disk_is_an_error_naming_it_and_no_half_line(small_disk: Path) -> None:
    path = small_disk / "lve/instances/i.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"response": "old", "passed": true}\n')
    fill(small_disk)
    record = {"response": "r" * 100_000, "passed": True, "run_info": {"idempotency_key": "k"}}
    with pytest.raises(
        FileProblem, match=f"cannot be written: no space left on the disk that holds {small_disk}$"
    ):
        append_instances(path, [record])
    assert path.read_text() == '{"response": "old", "passed": true}\n'


def test_a_file_over_the_bound_is_neither_read_nor_counted(tmp_path: Path) -> None:
    """A file of no line break (sparse here: no disk taken) past MAX_INSTANCE_FILE_BYTES: counting its
    lines read it into memory as one line. It counts none, and reading it names the bound."""
    path = tmp_path / "lve" / "instances" / "big.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        handle.truncate(MAX_INSTANCE_FILE_BYTES + 1)
    assert count_lines(path) == 0
    problems = Problems("big.jsonl")
    assert read_instances(path, "big.jsonl", problems) == []
    assert f"limit {MAX_INSTANCE_FILE_BYTES}" in problems.errors[0].message
