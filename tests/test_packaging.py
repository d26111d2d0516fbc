"""The action's metadata, image and workflow templates: linted, and consistent with the code."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from builders import PROJECT_ROOT, RepoBuilder, build_wheel, instance
from servers import Running

WORKFLOWS = sorted(
    str(p)
    for p in [*PROJECT_ROOT.glob("examples/workflows/*.yml"), *PROJECT_ROOT.glob(".github/workflows/*.yml")]
)


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: the test extras install it")
    return path


def test_every_import_is_declared_where_it_is_used() -> None:
    """deptry over the package, the tests and the benchmarks: an import that only a transitive or an
    undeclared dependency provides fails here, not in a user's bare install."""
    result = subprocess.run(
        [tool("deptry"), "."], cwd=PROJECT_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_action_inputs_are_the_ones_the_code_reads() -> None:
    declared = set(yaml.safe_load((PROJECT_ROOT / "action.yml").read_text())["inputs"])
    source = (PROJECT_ROOT / "lvegit/commands/action.py").read_text()
    read = set(re.findall(r'(?:action_input|flag|_number)\("([a-z-]+)"', source))
    assert declared == read


def test_action_outputs_are_the_ones_written() -> None:
    declared = set(yaml.safe_load((PROJECT_ROOT / "action.yml").read_text())["outputs"])
    source = (PROJECT_ROOT / "lvegit/github/flow.py").read_text()
    written = set(re.findall(r'"([a-z-]+)": (?:str\(|" "\.join)', source))
    assert declared == written


def test_dockerfile_passes_hadolint_and_its_entrypoint_is_the_action() -> None:
    """(tests/github/test_action.py runs that entry point as the container would.)"""
    result = subprocess.run(
        [tool("hadolint"), str(PROJECT_ROOT / "Dockerfile")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'ENTRYPOINT ["lvegit", "action"]' in (PROJECT_ROOT / "Dockerfile").read_text()


def test_image_dependencies_are_pinned() -> None:
    pins = dict(
        line.split("==")
        for line in (PROJECT_ROOT / "requirements/action.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    runtime = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in runtime:
        name = re.split(r"[<>=!~ \[]", requirement)[0].lower()
        assert name in pins, f"{name} is not pinned in requirements/action.txt"


def test_workflows_pass_zizmor_offline() -> None:
    assert len(WORKFLOWS) == 6
    result = subprocess.run(
        [tool("zizmor"), "--offline", *WORKFLOWS, str(PROJECT_ROOT / "action.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout + result.stderr


def test_untrusted_stage_has_no_secrets_and_the_trusted_one_no_checkout() -> None:
    check = yaml.safe_load((PROJECT_ROOT / "examples/workflows/lvegit-check.yml").read_text())
    job = check["jobs"]["check"]
    assert job["permissions"] == {"contents": "read"}
    assert "secrets." not in str(job)
    assert job["steps"][0]["with"]["persist-credentials"] is False
    comment = yaml.safe_load((PROJECT_ROOT / "examples/workflows/lvegit-comment.yml").read_text())
    steps = str(comment["jobs"]["comment"]["steps"])
    assert "actions/checkout" not in steps and "mode': 'comment'" in steps


def test_the_site_workflow_builds_read_only_and_only_deploys_with_write_access() -> None:
    workflow = yaml.safe_load((PROJECT_ROOT / "examples/workflows/lvegit-site.yml").read_text())
    assert workflow["permissions"] == {}
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert build["permissions"] == {"contents": "read"}
    assert build["steps"][0]["with"]["persist-credentials"] is False
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]  # no checkout
    uses = [step["uses"] for job in (build, deploy) for step in job["steps"] if "uses" in step]
    assert all(re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", ref) for ref in uses)  # pinned by commit


def test_ci_runs_the_readme_test_command_in_a_fresh_virtual_environment() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    script = (PROJECT_ROOT / ".ci/run").read_text().splitlines()
    assert script[-1] == test_command
    assert 'venv="$(mktemp -d)/venv"' in script and '. "$venv/bin/activate"' in script


def test_the_wheel_alone_runs_a_model(tmp_path: Path, openai_server: Running) -> None:
    """A bare install (the wheel, no extras, in a fresh virtual environment) runs `lvegit run` against an
    OpenAI-compatible server: every import a model run needs is a declared dependency."""
    wheel, venv = build_wheel(tmp_path / "wheels"), tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr
    repo = RepoBuilder(tmp_path / "lves")
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    openai_server.state.answer = lambda _body: "3"
    environment = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OPENAI_BASE_URL": openai_server.url}
    environment["OPENAI_API_KEY"] = "sk-loopback"
    ran = subprocess.run(
        [str(venv / "bin/lvegit"), "run", "--all", "--format", "json"],
        cwd=repo.root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert json.loads(ran.stdout)["summary"]["agree"] == 1
