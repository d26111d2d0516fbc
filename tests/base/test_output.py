"""Printing JSON documents: a streamed list prints exactly what the whole document would."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lvegit.base.output import JsonStream, print_json


def test_a_streamed_list_prints_the_same_document(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LVEGIT_TEST_API_KEY", "sk-streamed-secret")
    rows: list[Any] = [{"n": n, "text": "é ##[error] sk-streamed-secret"} for n in range(2_500)]
    head = {"schema": "x", "rows": [], "summary": {"rows": len(rows)}}
    print_json({**head, "rows": rows})
    whole = capsys.readouterr().out
    stream = JsonStream("rows", {"schema": "x"})
    for row in rows:
        stream.item(row)
    stream.end(head)
    streamed = capsys.readouterr().out
    assert json.loads(streamed) == json.loads(whole)
    assert "sk-streamed-secret" not in streamed and "##[" not in streamed
    empty = JsonStream("rows", {"schema": "x"})
    empty.end(head)
    assert json.loads(capsys.readouterr().out) == head
