"""The verdict cache: unchanged instances are not judged again, anything that decides a verdict changes
the key, entries survive corruption and concurrency, and a cache that could be forged is refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from lvegit.base.settings import CacheSettings
from lvegit.judge import replay as replay_module
from lvegit.judge.cache import Outcome, VerdictCache, open_cache
from lvegit.judge.replay import checker_identity, instance_key, replay_lve
from lvegit.lve.repo import Repository

from builders import GitRepo, RepoBuilder, instance

CUSTOM = (
    "from lvegit.checkers import BaseChecker\n"
    "class Sum(BaseChecker):\n"
    "    def is_safe(self, prompt, response, param_values=None):\n"
    "        return int(response) == param_values['a'] + param_values['b']\n"
)


def summing_lve(repo: RepoBuilder, rows: list[dict[str, Any]]) -> Path:
    """An LVE whose verdicts the cache keeps: a custom checker's (lvegit's own checkers are not cached)."""
    return repo.lve(
        test={"checker_args": {"checker_name": "Sum"}},
        files={"checker/checker.py": CUSTOM},
        instances={"i.jsonl": rows},
    )


def statuses(repo: RepoBuilder, lve_dir: Path, verdicts: VerdictCache | None) -> list[tuple[str, str | None]]:
    return [(r.status, r.reason) for r in replay_lve(Repository(repo.root.resolve()), lve_dir, verdicts)]


def test_an_unchanged_instance_builds_no_checker(
    repo: RepoBuilder, builds: list[str], tmp_path: Path
) -> None:
    rows = [instance("3", True, a=1, b=2), instance("5", True, a=1, b=2), instance("7", True, a=3, b=4)]
    lve_dir = summing_lve(repo, rows)
    verdicts = VerdictCache(tmp_path / "cache")
    first = statuses(repo, lve_dir, verdicts)
    assert first == [("reproduced", None), ("mismatch", None), ("reproduced", None)]
    assert len(builds) == 1 and verdicts.written == 3
    assert statuses(repo, lve_dir, verdicts) == first
    assert len(builds) == 1  # every verdict came from the cache
    (lve_dir / "instances/i.jsonl").write_text(json.dumps(instance("9", True, a=4, b=5)) + "\n", "utf-8")
    assert statuses(repo, lve_dir, verdicts) == [("reproduced", None)]
    assert len(builds) == 2  # a new response is judged


@pytest.mark.parametrize(
    "change",
    ["response", "checker_args", "prompt", "custom_source", "version"],
)
def test_what_decides_a_verdict_is_in_the_key(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    lve_dir = repo.lve(
        test={"checker_args": {"checker_name": "Sum"}},
        files={"checker/checker.py": CUSTOM},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    root = Repository(repo.root.resolve())

    def key() -> str | None:
        from lvegit.lve.spec import load_lve

        lve, _problems, _text = load_lve(Repository(root.root), lve_dir)  # each key: a command of its own
        assert lve is not None
        [row] = [json.loads(line) for line in (lve_dir / "instances/i.jsonl").read_text().splitlines()]
        from lvegit.lve.instances import Instance

        return instance_key(lve, checker_identity(lve), Instance("i.jsonl", 1, row))

    before = key()
    if change == "response":
        (lve_dir / "instances/i.jsonl").write_text(json.dumps(instance("4", True, a=1, b=2)) + "\n")
    elif change == "checker_args":
        test = json.loads((lve_dir / "test.json").read_text())
        test["checker_args"]["strict"] = True
        (lve_dir / "test.json").write_text(json.dumps(test))
    elif change == "prompt":
        test = json.loads((lve_dir / "test.json").read_text())
        test["prompt"][0]["content"] = "Add {a} and {b}."
        (lve_dir / "test.json").write_text(json.dumps(test))
    elif change == "custom_source":
        (lve_dir / "checker/checker.py").write_text(CUSTOM.replace("a'] + param", "a'] - -param"))
    else:
        monkeypatch.setattr(replay_module, "__version__", "99.0")
    assert key() != before


def test_lvegits_own_checkers_judge_without_the_cache(
    repo: RepoBuilder, builds: list[str], tmp_path: Path
) -> None:
    """Judging with a lambda or a regex takes less than keying and reading an entry: none is kept."""
    lve_dir = repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("5", True, a=1, b=2)]})
    verdicts = VerdictCache(tmp_path / "cache")
    for _ in range(2):
        assert statuses(repo, lve_dir, verdicts) == [("reproduced", None), ("mismatch", None)]
    assert len(builds) == 2 and verdicts.written == 0 and not (tmp_path / "cache").exists()


def test_corrupt_entries_are_ignored_and_written_again(repo: RepoBuilder, tmp_path: Path) -> None:
    lve_dir = summing_lve(repo, [instance("3", True, a=1, b=2)])
    verdicts = VerdictCache(tmp_path / "cache")
    statuses(repo, lve_dir, verdicts)
    [entry] = list((tmp_path / "cache/v1").glob("*/*"))
    for garbage in (b"", b"{", b'{"verdict": "yes", "note": null}', b'{"skip": 3}', b"\xff"):
        entry.write_bytes(garbage)
        assert statuses(repo, lve_dir, verdicts) == [("reproduced", None)]
        assert json.loads(entry.read_bytes()) == {"verdict": True, "note": None}


def test_concurrent_writers_leave_whole_entries(tmp_path: Path) -> None:
    verdicts = VerdictCache(tmp_path)
    outcomes = [Outcome(verdict=bool(n % 2), note="x" * n) for n in range(50)]

    def write(outcome: Outcome) -> None:
        for _ in range(20):
            verdicts.put("ab" * 32, outcome)

    threads = [threading.Thread(target=write, args=(o,)) for o in outcomes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert verdicts.get("ab" * 32) in outcomes
    assert [p.name for p in (tmp_path / "v1/ab").iterdir()] == ["ab" * 32]  # no temporary files left


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    verdicts = VerdictCache(tmp_path, max_entries=10)
    for n in range(25):
        verdicts.put(f"{n:064x}", Outcome(verdict=True))
    verdicts.prune()
    assert len(list((tmp_path / "v1").glob("*/*"))) == 9


def test_read_only_and_off(repo: RepoBuilder, tmp_path: Path) -> None:
    lve_dir = repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    verdicts, unused = open_cache(repo.root, CacheSettings("read", str(tmp_path / "elsewhere")))
    assert verdicts is not None and unused is None and not verdicts.writable
    statuses(repo, lve_dir, verdicts)
    assert not (tmp_path / "elsewhere").exists()
    assert open_cache(repo.root, CacheSettings("off")) == (None, None)


def test_replay_command_uses_the_cache_and_no_cache_bypasses_it(
    repo: RepoBuilder, cli: Any, builds: list[str]
) -> None:
    summing_lve(repo, [instance("3", True, a=1, b=2)])
    assert (
        cli("replay", "--all", cwd=repo.root).out.splitlines()[-1]
        == "1 LVE: 1 reproduced, 0 mismatches, 0 skipped, 0 errors"
    )
    assert (repo.root / ".lvegit-cache/v1").is_dir() and len(builds) == 1
    assert cli("replay", "--all", cwd=repo.root).code == 0 and len(builds) == 1
    assert cli("replay", "--all", "--no-cache", cwd=repo.root).code == 0 and len(builds) == 2


def test_a_cache_tracked_by_git_is_refused(repo: RepoBuilder, cli: Any, builds: list[str]) -> None:
    """A pull request could commit entries that say its LVE reproduces: such a cache is not read."""
    git = GitRepo(repo.root)
    lve_dir = summing_lve(repo, [instance("4", True, a=1, b=2)])  # 1 + 2 is not 4
    assert cli("replay", "--all", cwd=repo.root).code == 1
    for entry in (repo.root / ".lvegit-cache/v1").glob("*/*"):
        entry.write_text(json.dumps({"verdict": True, "note": None}))  # forged: "reproduces"
    git.git("add", "-f", ".lvegit-cache")  # past the cache's own .gitignore, as a pull request can
    git.commit("a forged cache")
    result = cli("replay", "--all", cwd=repo.root)
    assert result.code == 1 and "1 mismatch" in result.out
    assert (
        result.err
        == f"lvegit: verdict cache: {repo.root / '.lvegit-cache'} is tracked by git, so its verdicts could be forged: not used\n"
    )
    assert lve_dir.exists()


def test_new_keeps_the_cache_out_of_git(repo: RepoBuilder, cli: Any) -> None:
    (repo.root / ".gitignore").write_text("*.pyc")
    assert cli("new", "cat/x", "--model", "m/x", cwd=repo.root).code == 0
    assert cli("new", "cat/y", "--model", "m/x", cwd=repo.root).code == 0
    assert (repo.root / ".gitignore").read_text() == "*.pyc\n.lvegit-cache/\n"


MISSING_PACKAGE = (
    "import lvegit_no_such_package\n"
    "from lvegit.checkers import BaseChecker\n"
    "class Sum(BaseChecker):\n"
    "    def is_safe(self, prompt, response, param_values=None):\n"
    "        return True\n"
)


def test_a_checker_skipped_for_what_this_machine_lacks_is_not_started_again(
    repo: RepoBuilder, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm check of an unchanged repository starts no sandbox for a checker whose package is missing:
    the skip is stored with what it depended on, and a change to that (a distribution installed, the
    hub cache, the environment) decides it again."""
    from lvegit.checkers import sandbox
    from lvegit.judge import cache as cache_module

    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    cache_module._import_folders.cache_clear()
    repo.lve(
        "cat/custom",
        {"checker_args": {"checker_name": "Sum"}},
        files={"checker/checker.py": MISSING_PACKAGE},
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    started: list[str] = []
    original = sandbox.CheckerWorker.__init__

    def counting(self: Any, label: str, *args: Any, **kwargs: Any) -> None:
        started.append(label)
        original(self, label, *args, **kwargs)

    monkeypatch.setattr(sandbox.CheckerWorker, "__init__", counting)
    first = cli("check", "--all", cwd=repo.root)
    assert first.code == 0 and "1 skipped" in first.out and len(started) == 1
    assert cli("check", "--all", cwd=repo.root).out == first.out and len(started) == 1  # warm: not started
    assert cli("replay", "--all", cwd=repo.root).code == 0 and len(started) == 1  # nor for replay
    (site / "lvegit_no_such_package").mkdir()  # a distribution installed where Python imports from
    cache_module._import_folders.cache_clear()  # a new process
    again = cli("check", "--all", cwd=repo.root)  # decided again: lvegit's Python now finds the package
    assert len(started) == 2 and "could not import it inside the sandbox" in again.out
    (site / "lvegit_no_such_package").rmdir()
    cache_module._import_folders.cache_clear()
    assert cli("check", "--all", cwd=repo.root).out == first.out and len(started) == 3
    assert cli("check", "--all", cwd=repo.root).out == first.out and len(started) == 3  # warm again
    monkeypatch.setenv("LVEGIT_ALLOW_DOWNLOADS", "1")  # the environment that decides about models
    assert cli("check", "--all", cwd=repo.root).out == first.out and len(started) == 4


def test_the_cache_keeps_itself_out_of_git(tmp_path: Path, cli: Any) -> None:
    """Only `lvegit new` added .lvegit-cache/ to .gitignore: in a repository adopted as it was, the first
    `check` left the cache untracked, for `git add -A` to commit (and the next check to refuse)."""
    git = GitRepo(tmp_path / "lves")
    RepoBuilder(git.root).lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    git.commit("an LVE repository without a .gitignore")
    assert cli("check", "--all", cwd=git.root).code == 0
    assert (git.root / ".lvegit-cache").is_dir()
    assert git.git("status", "--porcelain", "--untracked-files=all") == ""
    assert cli("check", "--all", cwd=git.root).code == 0  # and the next check uses it
