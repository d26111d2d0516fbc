"""Every protection of the sandbox, tried from inside a real worker (the probe that `lvegit sandbox` runs,
with a sibling worker's files and pid to reach) in each mode, as root and as an unprivileged user (nobody):
namespaces and Landlock; namespaces without Landlock (a seccomp wrapper refuses Landlock, as a kernel
without it does); Landlock without namespaces (the wrapper refuses them, as a container without
CAP_SYS_ADMIN does); neither (refused). `lvegit sandbox --format json` runs in a process of its own for
each, so each mode starts its own launcher."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lvegit.sandbox.probe import LANDLOCK_LIMITS, PROBES

from builders import ENVIRONMENT_FILES, ENVIRONMENT_TEST, RepoBuilder, instance, shipped_schema_accepts
from sandbox_modes import REFUSE_NAMESPACES, ROOT_ONLY, as_nobody


def sandbox_report(*prefix: str, code: int = 0) -> dict[str, Any]:
    """`lvegit sandbox --format json` run behind `prefix`; `code`: the exit code it must end with (1 where
    contributed code would be refused)."""
    command = [*prefix, sys.executable, "-I", "-m", "lvegit", "sandbox", "--format", "json"]
    environment = {"PATH": os.environ["PATH"], "HOME": "/tmp", "LANG": "C.UTF-8"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd="/", env=environment)
    assert done.returncode == code, done.stderr
    return dict(json.loads(done.stdout))


def not_held(report: dict[str, Any]) -> dict[str, str]:
    return {name: outcome for name, outcome in report["probes"].items() if not outcome.startswith("blocked")}


def assert_everything_held(report: dict[str, Any]) -> None:
    """Every probe blocked but, in landlock mode, the limits docs/security.md states (pinned: a change
    of what the kernel allows shows here)."""
    assert list(report["probes"]) == list(PROBES)
    limits = LANDLOCK_LIMITS if report["mode"] == "landlock" else ()
    assert sorted(not_held(report)) == sorted(limits), not_held(report)
    assert not any("unavailable" in layer or "still held" in layer for layer in report["isolation"])


def assert_apart(report: dict[str, Any]) -> None:
    """Namespaces without Landlock: each worker in user and mount namespaces of its own, and nothing else
    between a worker and its sibling's files, /tmp, /dev/shm and processes."""
    assert report["mode"] == "namespaces-without-landlock"
    assert report["isolation"][2].startswith("apart: own user and mount namespaces")
    assert report["isolation"][4].startswith("landlock: unavailable")
    assert_everything_held({**report, "isolation": report["isolation"][:4] + report["isolation"][5:]})


@ROOT_ONLY
def test_as_root_with_namespaces() -> None:
    report = sandbox_report()
    shipped_schema_accepts(report, "sandbox")
    assert report["mode"] == "namespaces"
    assert_everything_held(report)
    assert report["isolation"][1].startswith("privileges: uid 21")  # a uid of its own, never 0


@ROOT_ONLY
def test_as_root_with_namespaces_refused() -> None:
    # with a supplementary group (adm), as a CI runner's user has docker's: the worker must shed it
    setpriv = shutil.which("setpriv")
    with_group = [setpriv, "--groups=4"] if setpriv else []
    report = sandbox_report(*with_group, sys.executable, REFUSE_NAMESPACES)
    assert report["mode"] == "landlock"
    assert report["isolation"][0].startswith("namespaces: none")
    assert_everything_held(report)


@ROOT_ONLY
def test_as_root_with_namespaces_without_landlock() -> None:
    assert_apart(sandbox_report(sys.executable, REFUSE_NAMESPACES, "--only-landlock"))


@ROOT_ONLY
def test_as_an_unprivileged_user_with_namespaces_without_landlock() -> None:
    """One uid for every worker: a worker read and rewrote its sibling's files (scratch, /tmp, /dev/shm,
    the launcher's scratch folder, the view's root) and opened bubblewrap's /proc/1/mem read-write."""
    assert_apart(sandbox_report(*as_nobody(), sys.executable, REFUSE_NAMESPACES, "--only-landlock"))


@ROOT_ONLY
def test_without_landlock_workers_that_cannot_be_apart_are_refused() -> None:
    """A kernel without Landlock whose user namespaces are off but for root: bubblewrap holds, but a
    worker (a uid of its own) cannot make its own namespaces, and would see its siblings' processes."""
    report = sandbox_report(sys.executable, REFUSE_NAMESPACES, "--only-landlock-and-users", code=1)
    assert report["mode"] == "refused"
    assert report["isolation"][2] == "apart: unavailable ([Errno 1] unshare: Operation not permitted)"


@ROOT_ONLY
def test_where_landlock_holds_workers_that_cannot_be_apart_still_run() -> None:
    """Root where a worker's uid may not make a user namespace (Ubuntu 24.04's AppArmor restriction):
    Landlock keeps it apart from its siblings, and contributed code runs."""
    report = sandbox_report(sys.executable, REFUSE_NAMESPACES, "--only-users")
    assert report["mode"] == "namespaces"
    assert report["isolation"][2] == "apart: unavailable ([Errno 1] unshare: Operation not permitted)"
    assert not_held(report) == {}


@ROOT_ONLY
def test_as_an_unprivileged_user() -> None:
    report = sandbox_report(*as_nobody())
    assert report["mode"] == "namespaces"
    assert report["isolation"][1] == "privileges: the invoking user's uid, no groups, no capabilities"
    assert_everything_held(report)


@ROOT_ONLY
def test_an_unprivileged_user_with_groups_is_confined_all_the_same() -> None:
    """No unprivileged process can drop its user's groups (a developer's docker or sudo group): the worker
    keeps them, says so, and runs contributed code, since nothing they own is in its reach."""
    report = sandbox_report(*as_nobody("--groups=100"), sys.executable, REFUSE_NAMESPACES)
    assert report["mode"] == "landlock"
    assert "the user's groups [100]" in report["isolation"][1]
    assert report["probes"]["groups"] == "done: held: [100]"
    assert sorted(not_held(report)) == sorted(["groups", *LANDLOCK_LIMITS])


@ROOT_ONLY
def test_as_an_unprivileged_user_with_namespaces_refused() -> None:
    report = sandbox_report(*as_nobody(), sys.executable, REFUSE_NAMESPACES)
    assert report["mode"] == "landlock"
    assert_everything_held(report)


@ROOT_ONLY
def test_where_the_sandbox_cannot_hold_contributed_code_is_refused(tmp_path: Path) -> None:
    """Neither namespaces nor Landlock (an old kernel): no unconfined fallback, on a local replay too."""
    marker = tmp_path / "ran"
    repo = RepoBuilder(tmp_path / "lves")
    code = (
        "from lvegit.checkers import BaseChecker\n"
        "class Ran(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        f"        open({str(marker)!r}, 'w').write('ran')\n"
        "        return True\n"
    )
    repo.lve(
        "sandbox/refused",
        {"checker_args": {"checker_name": "Ran"}, "prompt": [{"content": "{a}{b}"}]},
        files={"checker/checker.py": code},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    repo.lve(
        "sandbox/lambda", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}
    )  # lambdas are contributed
    environment_code = f"open({str(marker)!r}, 'w').write('ran')\n"  # environments are contributed too
    bank_files = {
        **ENVIRONMENT_FILES,
        "environment/tools.py": environment_code + ENVIRONMENT_FILES["environment/tools.py"],
    }
    recorded = {"response": "No.", "passed": True, "environment": {"before": {}, "after": {}}}
    repo.lve("sandbox/bank", ENVIRONMENT_TEST, files=bank_files, instances={"i.jsonl": [recorded]})
    report = sandbox_report(sys.executable, REFUSE_NAMESPACES, "--no-landlock", code=1)
    assert report["mode"] == "refused"
    # the probe's sibling wrote in the machine's /tmp and /dev/shm, unconfined, and removed what it wrote
    assert [path for path in report["probes"]["sibling_read"].split("'") if path.startswith("/")]
    assert not any(Path(p).exists() for p in report["probes"]["sibling_read"].split("'") if p.startswith("/"))
    command = [sys.executable, REFUSE_NAMESPACES, "--no-landlock", sys.executable, "-I", "-m", "lvegit"]
    environment = {"PATH": os.environ["PATH"], "HOME": "/tmp", "LANG": "C.UTF-8"}
    said = subprocess.run([*command, "sandbox"], capture_output=True, text=True, timeout=300, env=environment)
    assert said.returncode == 1  # `lvegit sandbox` once said "refused" and exited 0
    assert said.stderr.endswith(
        "contributed code would be refused here. To run it: use a Linux machine that allows user namespaces "
        "or Landlock\n"
    )
    done = subprocess.run(
        [*command, "replay", "--all"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=repo.root,
        env=environment,
    )
    assert (
        "custom checker code is not run: the sandbox does not hold on this machine"
        in done.stdout + done.stderr
    )
    assert "LVEGIT_UNCONFINED_CHECKERS=1" in done.stdout + done.stderr
    assert not marker.exists()
    assert "sandbox/bank/openai--gpt-4o-mini: environment code is not run" in done.stdout + done.stderr
    assert (
        "checker lambdas are not run: the sandbox does not hold on this machine" in done.stdout + done.stderr
    )


@ROOT_ONLY
def test_an_unprivileged_user_where_the_sandbox_cannot_hold_is_refused() -> None:
    report = sandbox_report(*as_nobody(), sys.executable, REFUSE_NAMESPACES, "--no-landlock", code=1)
    assert report["mode"] == "refused"
    assert "landlock: unavailable ([Errno 38] Function not implemented)" in report["isolation"]


@ROOT_ONLY
def test_lambdas_are_judged_in_a_confined_worker(repo: RepoBuilder) -> None:
    """The lambda worker confines itself as a custom checker's does (as root: a uid of its own)."""
    from lvegit.checkers import lambda_worker

    repo.lve("sandbox/lambda", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    worker = lambda_worker.worker()
    worker.close()
    assert [
        outcome
        for outcome, _error in worker.evaluate(
            [lambda_worker.Call("lambda r: r == '3'", "truth", ["3"], {}, None, True)]
        )
    ] == [True]
    layers = " | ".join(worker.isolation)
    assert "privileges: uid" in layers and "no capabilities" in layers, layers
    assert "seccomp: allow-list" in layers and "landlock: ABI" in layers, layers
