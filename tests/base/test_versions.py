from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from lvegit.base.versions import installed_version, installed_versions


@pytest.mark.parametrize("name", ["click", "jsonlines", "Jinja2", "typing-extensions", "typing_extensions"])
def test_agrees_with_importlib_metadata(name: str) -> None:
    assert installed_version(name) == importlib.metadata.version(name)


def test_reads_wheel_and_egg_metadata_first_entry_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "Zope.Interface-6.1.dist-info").mkdir(parents=True)
    (second / "zope_interface-5.0.dist-info").mkdir(parents=True)
    (second / "old_tool-0.3-py3.11.egg-info").mkdir()
    (second / "not-metadata-1.0").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(first), str(second)])
    assert installed_version("zope-interface") == "6.1"
    assert installed_version("old-tool") == "0.3"
    assert installed_versions(("zope.interface", "absent", "not-metadata")) == {"zope.interface": "6.1"}
