"""The workers' scratch folders survive the worst a checker leaves in them: folders nested thousands deep,
modes their owner cannot list; lvegit judges the other LVEs, exits as it should and leaves nothing behind,
in every sandbox mode, and a killed lvegit's scratch is swept at the next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lvegit.base.errors import CheckerError
from lvegit.base.settings import CheckerSettings, Settings, configure
from lvegit.sandbox import scratch

from builders import RepoBuilder, fill, instance
from sandbox_modes import REFUSE_NAMESPACES, ROOT_ONLY, as_nobody

DEPTH = 2_500  # Python 3.11's rmtree raised RecursionError (exit 3, the other LVE never judged)

# A checker's worst scratch: folders nested DEPTH deep (past PATH_MAX too), and at the bottom folders of
# modes that their owner cannot list (0o300) or pass (0o600), with files in them.
NESTING = f"""
for _ in range({DEPTH}):
    os.mkdir('d')
    os.chdir('d')
os.mkdir('unlistable', 0o300)
open('unlistable/file', 'w').write('x')
os.mkdir('unlistable/deeper', 0o300)
open('unlistable/deeper/file', 'w').write('x')
os.mkdir('closed', 0o700)
os.umask(0o777)
os.mkdir('closed/inside')
open('closed/inside-file', 'w').close()
"""


def nest(where: Path) -> None:
    """What NESTING does, done here (for removal without a sandbox)."""
    working, mask = os.getcwd(), os.umask(0o022)
    os.chdir(where)
    try:
        exec(NESTING, {"os": os})
    finally:
        os.umask(mask)
        os.chdir(working)


def test_removal_goes_through_any_depth_and_any_mode(tmp_path: Path) -> None:
    top = tmp_path / "scratch"
    top.mkdir()
    nest(top)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("kept")
    os.symlink(outside, top / "link")  # a link is removed, never followed
    assert scratch.remove_tree(str(top)) is None
    assert not top.exists()
    assert (outside / "kept").read_text() == "kept"
    assert scratch.remove_tree(str(top)) is None  # gone already: nothing to say


def test_a_folder_that_cannot_be_removed_is_named_never_raised(tmp_path: Path) -> None:
    top = tmp_path / "scratch"
    (top / "inner").mkdir(parents=True)
    os.chmod(tmp_path, 0o500)  # top itself cannot be removed from here
    try:
        problem = scratch.remove_tree(str(top))
    finally:
        os.chmod(tmp_path, 0o700)
    if os.geteuid() == 0:
        assert problem is None  # root passes every mode
    else:
        assert problem is not None and problem.startswith(str(top))
        assert not (top / "inner").exists()


def shared_folder() -> Iterator[Path]:
    """A folder that nobody (the unprivileged user of as_nobody) can use as the temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="lvegit-test-scratch-"))
    os.chmod(folder, 0o1777)
    try:
        yield folder
    finally:
        scratch.remove_tree(str(folder))


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_folder()


def python(*arguments: str) -> list[str]:
    return [sys.executable, *arguments]


# How each mode is made (see test_modes.py): a command prefix, as a function (as_nobody may skip).
MODES: dict[str, Callable[[], list[str]]] = {
    "root-namespaces-landlock": list,
    "root-landlock-alone": lambda: python(REFUSE_NAMESPACES),
    "root-namespaces-alone": lambda: python(REFUSE_NAMESPACES, "--only-landlock"),
    "nobody-namespaces-landlock": as_nobody,
    "nobody-landlock-alone": lambda: [*as_nobody(), *python(REFUSE_NAMESPACES)],
    "nobody-namespaces-alone": lambda: [
        *as_nobody(),
        *python(REFUSE_NAMESPACES, "--only-landlock"),
    ],
    "neither-refused": lambda: python(REFUSE_NAMESPACES, "--no-landlock"),
}


def lvegit(
    prefix: list[str], repo: Path, temporary: Path, *arguments: str, **variables: str
) -> subprocess.Popen[str]:
    environment = {"PATH": os.environ["PATH"], "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": str(temporary)}
    environment.update(variables)
    command = [*prefix, sys.executable, "-I", "-m", "lvegit", *arguments]
    return subprocess.Popen(  # a session of its own: killing it kills lvegit under any prefix
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=repo,
        env=environment,
        start_new_session=True,
    )


def checker_lve(repo: RepoBuilder, name: str, body: str) -> Path:
    code = (
        "import os, time\nfrom lvegit.checkers import BaseChecker\n"
        "class Probe(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        + "".join(f"        {line}\n" for line in body.strip().splitlines())
        + "        return True\n"
    )
    return repo.lve(
        name,
        {"checker_args": {"checker_name": "Probe"}, "prompt": [{"content": "{a}{b}"}]},
        files={"checker/checker.py": code},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )


def readable_repo(shared: Path) -> RepoBuilder:
    repo = RepoBuilder(shared / "lves")
    os.chmod(shared / "lves", 0o755)
    return repo


@ROOT_ONLY
@pytest.mark.parametrize("mode", list(MODES))
def test_the_worst_scratch_is_removed_and_the_other_lves_judged(mode: str, shared: Path) -> None:
    prefix = MODES[mode]()
    repo = readable_repo(shared)
    checker_lve(repo, "scratch/deep", NESTING)
    repo.lve("scratch/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    for folder, _, _ in os.walk(repo.root):
        os.chmod(folder, 0o755)
    temporary = shared / "tmp"
    temporary.mkdir(mode=0o777)
    os.chmod(temporary, 0o1777)
    done = lvegit(prefix, repo.root, temporary, "replay", "--all")
    output, _ = done.communicate(timeout=600)
    assert "Traceback" not in output and "unexpected error" not in output, output
    if mode.startswith("neither"):
        assert "custom checker code is not run" in output, output
    else:
        assert done.returncode == 0, output
        assert "scratch/deep" in output and "scratch/plain" in output, output
    assert os.listdir(temporary) == []


@ROOT_ONLY
@pytest.mark.parametrize("mode", [m for m in MODES if not m.startswith("neither")])
def test_a_killed_lvegits_scratch_is_swept_at_the_next_start(mode: str, shared: Path) -> None:
    prefix = MODES[mode]()
    repo = readable_repo(shared)
    # the checker says it is done nesting with a file in its scratch folder (it can write nowhere else)
    checker_lve(
        repo, "scratch/killed", f"{NESTING}\nopen(os.environ['HOME'] + '/ready', 'w')\ntime.sleep(600)"
    )
    for folder, _, _ in os.walk(repo.root):
        os.chmod(folder, 0o755)
    temporary = shared / "tmp"
    temporary.mkdir()
    os.chmod(temporary, 0o1777)
    running = lvegit(prefix, repo.root, temporary, "replay", "--all")
    try:
        for _ in range(6000):  # a generous bound on a loaded machine
            if list(temporary.glob("*/worker-*/ready")) or running.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert list(temporary.glob("*/worker-*/ready")), running.communicate()[0]
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.communicate()
    assert os.listdir(temporary) != []  # left behind by the killed lvegit, as nothing else could remove it
    # (what its launcher and worker did once lvegit was gone is theirs: they die with it)
    again = lvegit(prefix, repo.root, temporary, "sandbox", "--format", "json")
    output, _ = again.communicate(timeout=600)
    assert again.returncode == 0, output
    assert os.listdir(temporary) == []


def test_a_full_disk_is_an_error_naming_it_where_a_scratch_folder_is_made(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lvegit.checkers.launcher import close_launchers, launcher

    fill(small_disk)
    close_launchers()  # the next launcher makes its scratch folder on the full disk
    monkeypatch.setattr(tempfile, "tempdir", str(small_disk))
    try:
        with pytest.raises(
            CheckerError, match=f"the sandbox's scratch folder cannot be made in {small_disk}: "
        ):
            launcher()
    finally:
        close_launchers()
    with pytest.raises(CheckerError, match=f"cannot be made in {small_disk}: No space left on device"):
        scratch.worker_folder(str(small_disk), "worker-")


def test_the_watch_ends_a_worker_past_its_bound_and_all_past_the_total(tmp_path: Path) -> None:
    root = tmp_path / "root"  # a launcher's scratch folder
    many = root / "many"
    many.mkdir(parents=True)
    nest(many)  # 2,500 folders deep, some unlistable: all counted
    try:
        assert scratch.usage(str(many), 100_000) == (scratch.usage(str(many), 100_000)[0], DEPTH + 7, True)
        assert scratch.usage(str(many), 100)[1] == 101  # counted no further than needed
        # four folders within their bound of 200 KiB; with what a worker wrote outside its own, past the
        # 800 KiB of all
        for number in range(4):
            (root / f"f{number}").mkdir()
            (root / f"f{number}" / "file").write_bytes(os.urandom(180 * 1024))
        past: dict[str, str] = {}
        watch = scratch.Watch(str(root), lambda: scratch.Bounds(bytes=200 * 1024, files=1_000))
        for name in ["many", *(f"f{number}" for number in range(4))]:
            watch.add(str(root / name), lambda why, name=name: past.setdefault(name, why))
        os.chmod(root, 0o711)  # as a launcher's: a worker of another uid passes it
        watch.check()
        assert past == {"many": "the checker's scratch folder passed its bound of 200 KiB or 1,000 files"}
        assert root.stat().st_mode & 0o777 == 0o711  # measuring changes no live folder's mode
        scratch.remove_tree(str(many))
        watch.remove(str(many))  # as its worker does once ended
        watch.check()
        assert list(past) == ["many"]  # 720 KiB in all
        (root / "outside").write_bytes(os.urandom(100 * 1024))
        watch.check()
        total = (
            "the checker's scratch folder passed the bound of all workers together, 800 KiB or 5,000 files"
        )
        assert past == {"many": past["many"], **{f"f{number}": total for number in range(4)}}
    finally:
        scratch.remove_tree(str(many))  # pytest's clean-up recurses


# 64 files of 1 MiB at most (past the bound, the watch ends it); then it waits past the call's timeout
FILLER = "for number in range(64):\n    open(str(number), 'wb').write(b'x' * 1024**2)\ntime.sleep(120)"


def ended_with_8_mib(repo: RepoBuilder, name: str, body: str, timeout: float) -> str:
    """Why the checker of `body`, run with scratch folders of 8 MiB, was ended in its first call."""
    from lvegit.checkers.sandbox import CheckerWorker, SandboxSettings
    from lvegit.lve.prompt import Message, Role

    lve_dir = checker_lve(repo, name, body)
    configure(Settings(checkers=CheckerSettings(scratch_mib=8)))
    worker = CheckerWorker(name, lve_dir, SandboxSettings(call_timeout=timeout))
    try:
        checker = worker.build("Probe", {})
        with pytest.raises(CheckerError) as raised:
            checker.invoke_check([Message("12", Role.user)], [Message("3", Role.assistant)], {})
    finally:
        worker.close()
    return str(raised.value)


def test_a_checker_past_its_scratch_bound_is_ended_and_named(repo: RepoBuilder, confined: bool) -> None:
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    assert (
        ended_with_8_mib(repo, "scratch/filler", FILLER, 60)
        == "scratch/filler: the checker's scratch folder passed its bound of 8 MiB or 20,000 files"
    )


# 10,000 empty files, whose listing takes a while, and beside them a folder of 12 MiB renamed through 100
# names without pause: each measure listed a name, found it gone when it opened it and counted nothing
# beneath it (50 MiB unseen in 40 measures of 40); the checker wrote on past any bound, unseen.
HIDER = """
for number in range(10_000):
    open(f'f{number}', 'w').close()
os.mkdir('n0')
open('n0/data', 'wb').write(b'x' * 12 * 1024**2)
number = 0
while True:
    os.rename(f'n{number % 100}', f'n{(number + 1) % 100}')
    number += 1
"""


def test_a_checker_that_renames_its_folders_while_measured_is_ended(
    repo: RepoBuilder, confined: bool
) -> None:
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    # seen at last (a measure that went through it all) or never: ended either way, before the timeout
    assert ended_with_8_mib(repo, "scratch/hider", HIDER, 30) in (
        "scratch/hider: the checker's scratch folder passed its bound of 8 MiB or 20,000 files",
        "scratch/hider: the checker's scratch folder changed under 4 measures in a row: it cannot be bounded",
    )


@ROOT_ONLY
@pytest.mark.parametrize("mode", [m for m in MODES if not m.startswith("neither")])
def test_a_checker_past_its_scratch_bound_is_ended_in_every_mode(mode: str, shared: Path) -> None:
    prefix = MODES[mode]()
    repo = readable_repo(shared)
    checker_lve(repo, "scratch/filler", FILLER)
    for folder, _, _ in os.walk(repo.root):
        os.chmod(folder, 0o755)
    temporary = shared / "tmp"
    temporary.mkdir()
    os.chmod(temporary, 0o1777)
    done = lvegit(prefix, repo.root, temporary, "replay", "--all", LVEGIT_CHECKER_SCRATCH_MIB="4")
    output, _ = done.communicate(timeout=600)
    assert "the checker's scratch folder passed its bound of 4 MiB or 20,000 files" in output, output
    assert os.listdir(temporary) == []


def test_a_folder_without_a_lock_is_swept_once_it_is_old(tmp_path: Path) -> None:
    """An earlier lvegit made its folders without a lock: one still running may use its own."""
    fresh, old = tmp_path / f"{scratch.PREFIX}fresh", tmp_path / f"{scratch.PREFIX}old"
    for folder in (fresh, old):
        (folder / "worker-1").mkdir(parents=True)
    day_ago = time.time() - scratch.UNLOCKED_SECONDS - 60
    os.utime(old, (day_ago, day_ago))
    locked = Path(scratch.make_root())  # with its lock, held: never swept
    try:
        scratch.sweep(str(tmp_path))
        assert fresh.is_dir() and not old.exists()
        scratch.sweep(tempfile.gettempdir())
        assert locked.is_dir()
    finally:
        scratch.remove_root(str(locked))
    assert not locked.exists() and not Path(f"{locked}{scratch.LOCK_SUFFIX}").exists()


def test_any_start_of_lvegit_sweeps_a_killed_lvegits_scratch(tmp_path: Path) -> None:
    """Not only one that starts a launcher: `lvegit validate` after a killed `lvegit replay` left it all."""
    leftover = tmp_path / f"{scratch.PREFIX}killed"
    (leftover / "worker-1" / "deep").mkdir(parents=True)
    Path(f"{leftover}{scratch.LOCK_SUFFIX}").touch()  # its lock, free: its lvegit is gone
    environment = {"PATH": os.environ["PATH"], "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": str(tmp_path)}
    command = [sys.executable, "-I", "-m", "lvegit", "--version"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp_path) == []
