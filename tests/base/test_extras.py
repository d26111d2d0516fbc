"""A missing optional part is named with its extra, as installable today, at the moment it is needed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from lvegit.base import extras
from lvegit.base.versions import is_release

from builders import RepoBuilder, instance
from servers import Running


def test_the_install_command_is_pypi_for_a_release_and_the_repository_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert is_release("0.2.0") and not is_release("0.0.0") and not is_release("0.2.1.dev3+gabc")
    monkeypatch.setattr(extras, "__version__", "0.2.1.dev3+gabc")
    assert (
        extras.install_command("data") == 'pip install "lvegit[data] @ git+https://github.com/lvegit/lvegit"'
    )
    monkeypatch.setattr(extras, "__version__", "0.2.0")
    assert extras.install_command("data") == "pip install 'lvegit[data]==0.2.0'"
    assert "download.pytorch.org/whl/cpu torch" in extras.install_hint("transformers")


def test_a_transformers_route_without_torch_names_the_extra_before_any_attempt(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch, openai_server: Running
) -> None:
    """It once failed every attempt with "No module named 'torch'"."""
    monkeypatch.setitem(sys.modules, "torch", None)  # not importable, as in a bare install
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    (repo.root / "lvegit.toml").write_text('[models."local/tiny"]\nbackend = "transformers"\nmodel = "/m"\n')
    result = cli("run", "--all", "--model", "local/tiny", cwd=repo.root)
    assert result.code == 2, result.out
    assert "the transformers backend (/m) needs torch: pip install" in result.err
    assert "lvegit[transformers]" in result.err and "download.pytorch.org/whl/cpu torch" in result.err
    assert "attempt" not in result.out


def test_models_download_without_huggingface_hub_says_so_before_downloading(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    toxicity = {"checker_args": {"checker_name": "ToxicityChecker", "model": "lve-org/tiny-toxic"}}
    repo.lve("core/toxic", toxicity, instances={"i.jsonl": [instance("have a nice day", True, a=1, b=2)]})
    result = cli("models", "--all", "--download", cwd=repo.root)
    assert result.code == 2
    assert "downloading" not in result.err
    assert (
        "--download needs huggingface_hub: pip install" in result.err and "lvegit[transformers]" in result.err
    )
