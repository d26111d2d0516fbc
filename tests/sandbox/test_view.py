"""What the sandbox's view is built from: what isolated mode imports from, never PYTHONPATH's folders."""

from __future__ import annotations

import site
import sys
from pathlib import Path

import pytest

from lvegit.sandbox import view


def test_pythonpath_and_the_users_site_packages_stay_out_of_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PYTHONPATH=$HOME put the home (~/.netrc, ~/.ssh) into bubblewrap's view; the launcher runs with -I,
    which imports nothing from there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(home))
    monkeypatch.setattr(sys, "path", [*sys.path, str(home), site.getusersitepackages()])
    paths = view.import_paths()
    assert str(home) not in paths
    assert site.getusersitepackages() not in paths
    assert sys.prefix in paths  # the interpreter stays
