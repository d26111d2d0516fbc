from __future__ import annotations

import os
from pathlib import Path

import pytest

from lvegit.base.files import (
    MAX_JSON_DEPTH,
    FileProblem,
    json_lines,
    parse_json,
    path_inside,
    read_text,
    reserve_inside,
    walk,
    write_inside,
)

from builders import fill, nest_folders, remove_nested


def test_read_text_rejects_large_binary_and_non_utf8(tmp_path: Path) -> None:
    (tmp_path / "big").write_text("x" * 11)
    with pytest.raises(FileProblem, match="too large"):
        read_text(tmp_path / "big", 10, within=tmp_path)
    (tmp_path / "bin").write_bytes(b"a\x00b")
    with pytest.raises(FileProblem, match="NUL byte"):
        read_text(tmp_path / "bin", 100, within=tmp_path)
    (tmp_path / "latin").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(FileProblem, match=r"not valid UTF-8 \(byte 3\)"):
        read_text(tmp_path / "latin", 100, within=tmp_path)
    with pytest.raises(FileProblem, match="'missing' does not exist"):
        read_text(tmp_path / "missing", 100, within=tmp_path)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "bom").write_bytes(b"\xef\xbb\xbf{}")
    assert read_text(tmp_path / "bom", 100, within=tmp_path) == "{}"


def test_json_lines_names_each_bad_line_and_reads_on() -> None:
    lines = [
        b'{"a": 1}\n',
        b"  \n",  # blank: skipped, still counted
        "\ufeff[2]\n".encode(),  # a byte order mark, as some editors write one on every line
        b"caf\xe9\n",
        b'{"b": \x00}\n',
        b"{oops\n",
        b"\x1enull\n",  # an RFC 7464 record separator
    ]
    found = list(json_lines(lines))
    assert [number for number, _value in found] == [1, 3, 4, 5, 6, 7]
    assert (found[0][1], found[1][1], found[5][1]) == ({"a": 1}, [2], None)
    problems = [value for _number, value in found[2:5]]
    assert [(problem.message, problem.line) for problem in problems] == [
        ("not valid UTF-8 (byte 3)", 4),
        ("binary content (NUL byte) where text was expected", 5),
        ("invalid JSON: Expecting property name enclosed in double quotes (line 6, column 2)", 6),
    ]


def test_parse_json_reports_line_and_column() -> None:
    with pytest.raises(FileProblem) as info:
        parse_json('{\n  "a": 1,\n  "b": \n}')
    assert info.value.line == 4
    assert "line 4, column 1" in info.value.message


def test_parse_json_depth_limit() -> None:
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(FileProblem, match="nested deeper"):
        parse_json(deep)
    # a scalar counts as a level: inside 64 lists it is one too deep, inside 63 it is at the limit
    with pytest.raises(FileProblem, match="nested deeper"):
        parse_json("[" * MAX_JSON_DEPTH + "1" + "]" * MAX_JSON_DEPTH)
    assert parse_json("[" * (MAX_JSON_DEPTH - 1) + "1" + "]" * (MAX_JSON_DEPTH - 1)) is not None
    assert parse_json('{"a": "' + "[" * 100 + '"}') == {"a": "[" * 100}  # brackets in a string: no level
    very_deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(FileProblem, match="nested deeper"):
        parse_json(very_deep)


def test_path_inside_refuses_escapes(tmp_path: Path) -> None:
    base = tmp_path / "lve"
    base.mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (base / "link.prompt").symlink_to(tmp_path / "secret.txt")
    assert path_inside(base, "test.prompt") == base / "test.prompt"
    for bad in ("../secret.txt", "/etc/passwd", "link.prompt", ""):
        with pytest.raises(FileProblem):
            path_inside(base, bad)


def test_a_number_past_pythons_digit_limit_is_named_with_its_line() -> None:
    with pytest.raises(FileProblem, match="a number with more than 4300 digits") as info:
        parse_json('{\n"a": 1,\n"n": ' + "7" * 4301 + "\n}")
    assert info.value.line == 3


def test_open_inside_refuses_what_is_no_regular_file_inside(tmp_path: Path) -> None:
    base = tmp_path / "lve"
    base.mkdir()
    (base / "folder").mkdir()
    os.mkfifo(base / "pipe")
    (base / "loop").symlink_to("loop")
    (base / "inside").write_text("fine")
    (base / "link").symlink_to("inside")
    assert read_text(base / "link", 10, within=base) == "fine"  # a link that stays inside is followed
    for name, complaint in [
        ("folder", "not a regular file"),
        ("pipe", "not a regular file"),  # without waiting for a writer
        ("loop", "a loop of links"),
        ("nul\0", "holds a NUL byte"),
        ("x" * 300, "the name is too long"),
    ]:
        with pytest.raises(FileProblem, match=complaint):
            read_text(base / name, 10, within=base)
    with pytest.raises(FileProblem, match="'link' is a link: lvegit does not write through links"):
        write_inside(base, base / "link", b"changed")
    assert (base / "inside").read_text() == "fine"
    write_inside(base, base / "new/deeper/file", b"made")  # missing folders are made, inside
    assert (base / "new/deeper/file").read_bytes() == b"made"


def test_walk_goes_through_folders_nested_thousands_deep(tmp_path: Path) -> None:
    folder = nest_folders(tmp_path, 1500)
    (folder / "leaf").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "d")
    found = [(top, others) for top, _folders, others in walk(tmp_path)]
    assert found[0] == (tmp_path, ["link"]) and found[-1] == (folder, ["leaf"])
    assert len(found) == 1501
    remove_nested(tmp_path / "d")


def test_a_write_into_space_set_aside_survives_a_full_disk(small_disk: Path) -> None:
    """What lvegit writes after contributed code ran (results.json) goes into space set aside before; a
    write without it is an error naming the full disk, and leaves the file as it was."""
    results, other = small_disk / "results.json", small_disk / "other.json"
    other.write_bytes(b"as it was")
    reserve_inside(small_disk, results, 200_000, "the results folder")
    fill(small_disk)
    write_inside(small_disk, results, b"r" * 150_000, "the results folder")
    assert results.read_bytes() == b"r" * 150_000
    with pytest.raises(
        FileProblem,
        match=f"'\\.?other.json(\\.lvegit-part)?' cannot be (written|opened): no space left on the disk that holds "
        f"{small_disk}$",
    ):
        write_inside(small_disk, other, b"o" * 150_000)
    assert other.read_bytes() == b"as it was"
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "fillers", "other.json", "results.json"]
