from __future__ import annotations

from pathlib import Path

import pytest

from lvegit.files import MAX_JSON_DEPTH, FileProblem, parse_json, read_text, resolve_inside


def test_read_text_rejects_large_binary_and_non_utf8(tmp_path: Path) -> None:
    (tmp_path / "big").write_text("x" * 11)
    with pytest.raises(FileProblem, match="too large"):
        read_text(tmp_path / "big", 10)
    (tmp_path / "bin").write_bytes(b"a\x00b")
    with pytest.raises(FileProblem, match="NUL byte"):
        read_text(tmp_path / "bin", 100)
    (tmp_path / "latin").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(FileProblem, match=r"not valid UTF-8 \(byte 3\)"):
        read_text(tmp_path / "latin", 100)
    with pytest.raises(FileProblem, match="cannot read"):
        read_text(tmp_path / "missing", 100)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "bom").write_bytes(b"\xef\xbb\xbf{}")
    assert read_text(tmp_path / "bom", 100) == "{}"


def test_parse_json_reports_line_and_column() -> None:
    with pytest.raises(FileProblem) as info:
        parse_json('{\n  "a": 1,\n  "b": \n}')
    assert info.value.line == 4
    assert "line 4, column 1" in info.value.message


def test_parse_json_depth_limit() -> None:
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(FileProblem, match="nested deeper"):
        parse_json(deep)
    very_deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(FileProblem, match="nested deeper"):
        parse_json(very_deep)


def test_resolve_inside_refuses_escapes(tmp_path: Path) -> None:
    base = tmp_path / "lve"
    base.mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (base / "link.prompt").symlink_to(tmp_path / "secret.txt")
    assert resolve_inside(base, "test.prompt") == (base / "test.prompt").resolve()
    for bad in ("../secret.txt", "/etc/passwd", "link.prompt", ""):
        with pytest.raises(FileProblem):
            resolve_inside(base, bad)
