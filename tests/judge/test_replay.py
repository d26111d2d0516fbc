from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lvegit.judge.replay import replay_lve
from lvegit.judge.results import ReplayResult, summarize
from lvegit.lve.repo import Repository

from builders import SECRETS, RepoBuilder, instance, plant_code, recorded_calls, recording_git

INSTANCES = "repository/dummy/add/openai--gpt-4o-mini/instances/i.jsonl"


def replay(repo: RepoBuilder, **kwargs: Any) -> list[ReplayResult]:
    lve_dir = repo.lve(**kwargs)
    return replay_lve(Repository(repo.root.resolve()), lve_dir)


def test_reproduced_and_mismatch(repo: RepoBuilder) -> None:
    rows = [instance("3", True, a=1, b=2), instance("4", False, a=1, b=2), instance("3", False, a=1, b=2)]
    results = replay(repo, instances={"i.jsonl": rows})
    assert [(r.line, r.recorded, r.replayed, r.status) for r in results] == [
        (1, True, True, "reproduced"),
        (2, False, False, "reproduced"),
        (3, False, True, "mismatch"),
    ]
    assert summarize(results) == {"reproduced": 2, "mismatch": 1, "skipped": 0, "error": 0}


def test_checker_exception_is_an_error_for_that_instance_only(repo: RepoBuilder) -> None:
    rows = [instance("three", True, a=1, b=2), instance("3", True, a=1, b=2)]
    results = replay(repo, instances={"i.jsonl": rows})
    assert [(r.status, r.reason) for r in results] == [
        ("error", "checker_args.func: ValueError: invalid literal for int() with base 10: 'three'"),
        ("reproduced", None),
    ]


def test_bad_lines_are_errors_and_the_rest_replays(repo: RepoBuilder) -> None:
    text = (
        json.dumps(instance("3", True, a=1, b=2))
        + "\n{torn\n"
        + json.dumps(instance({"x": 1}, True, a=1, b=2))
    )
    results = replay(repo, instances={"i.jsonl": text})
    assert [(r.line, r.status) for r in results] == [(1, "reproduced"), (2, "error"), (3, "error")]
    assert (results[1].file, results[1].line) == (INSTANCES, 2)
    assert results[1].reason is not None and results[1].reason.startswith("invalid JSON")  # once, no location
    assert results[2].reason == "the response has no value for variable(s) response"


def test_model_based_checker_is_skipped_with_reason(repo: RepoBuilder) -> None:
    test = {"checker_args": {"checker_name": "ToxicityChecker", "toxicity_threshold": 0.5}}
    results = replay(repo, test=test, instances={"i.jsonl": [instance("hi", True, a=1, b=2)]})
    [(status, reason)] = [(r.status, r.reason) for r in results]
    assert status == "skipped" and reason is not None
    assert reason == (
        "model 's-nlp/roberta_toxicity_classifier' is not in the local Hugging Face cache: download it with: "
        "lvegit models --download"
    )


def test_redacted_response_is_skipped(repo: RepoBuilder) -> None:
    code = (
        "from lvegit.checkers import BaseChecker\n"
        "class Redacting(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        "        return '@' not in response\n"
        "    def replay_skip_reason(self, response):\n"
        "        return 'redacted' if '<EMAIL>' in response else None\n"
    )
    test = {"checker_args": {"checker_name": "Redacting"}}
    rows = [instance("mail <EMAIL>", False, a=1, b=2), instance("mail a@b", False, a=1, b=2)]
    results = replay(repo, test=test, files={"checker/checker.py": code}, instances={"i.jsonl": rows})
    assert [(r.status, r.reason) for r in results] == [("skipped", "redacted"), ("reproduced", None)]


def test_metadata_errors_do_not_stop_replay(repo: RepoBuilder) -> None:
    results = replay(
        repo, test={"model": "other/model"}, instances={"i.jsonl": [instance("3", True, a=1, b=2)]}
    )
    assert [r.status for r in results] == ["reproduced"]


def test_invalid_lve_is_one_error(repo: RepoBuilder) -> None:
    results = replay(repo, raw_test="{", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert len(results) == 1 and results[0].status == "error"
    assert results[0].reason is not None and "invalid LVE" in results[0].reason


def test_multi_run_and_multi_variable_together(repo: RepoBuilder) -> None:
    conversation = [{"content": "{a}?"}, {"role": "assistant", "variable": "x"}, {"content": "again"}]
    test = {
        "prompt": None,
        "prompt_parameters": ["a"],
        "multi_run_prompt": [{"name": "r", "repetitions": 2, "prompt": conversation}],
        "checker_args": {
            "checker_name": "MultiRunLambdaChecker",
            "func": "lambda rs, a: all(r == a for r in rs)",
        },
    }
    rows = [
        instance([{"x": "1", "response": "1"}, {"x": "2", "response": "1"}], True, a="1"),
        instance([{"x": "1", "response": "2"}, {"x": "1", "response": "1"}], False, a="1"),
    ]
    results = replay(repo, test=test, instances={"i.jsonl": rows})
    assert [r.status for r in results] == ["reproduced", "reproduced"]


def test_results_as_json(repo: RepoBuilder) -> None:
    [result] = replay(repo, instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert result.as_json() == {
        "lve": "repository/dummy/add/openai--gpt-4o-mini",
        "file": INSTANCES,
        "line": 1,
        "recorded": True,
        "replayed": True,
        "status": "reproduced",
        "reason": None,
    }


def test_replay_all_keeps_the_order_when_model_stacks_load_elsewhere(repo: RepoBuilder) -> None:
    """LVEs whose checkers load Presidio or transformers replay in processes of their own; the results
    are those of replaying each LVE alone, in the order asked."""
    from lvegit.judge.replay import replay_all

    pii = {
        "checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS"], "spacy_model": "blank"}
    }
    toxic = {
        "checker_args": {"checker_name": "ToxicityChecker", "toxicity_threshold": 0.5, "model": "nobody/gone"}
    }
    dirs = [
        repo.lve("a/pii", pii, instances={"i.jsonl": [instance("mail jane@example.com", False, a=1, b=2)]}),
        repo.lve(
            "b/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("4", True, a=1, b=2)]}
        ),
        repo.lve("c/toxic", toxic, instances={"i.jsonl": [instance("hi", True, a=1, b=2)]}),
    ]
    root = Repository(repo.root.resolve())
    alone = [result for lve_dir in dirs for result in replay_lve(root, lve_dir)]
    assert replay_all(root, dirs) == alone
    assert [r.status for r in alone] == ["reproduced", "reproduced", "mismatch", "skipped"]


PII = {"checker_args": {"checker_name": "PII_Checker", "entities": ["EMAIL_ADDRESS"], "spacy_model": "blank"}}


def test_the_model_stack_process_runs_lvegits_code_with_no_secret(repo: RepoBuilder, tmp_path: Path) -> None:
    """`check --all` with two model-based LVEs judges them in a process of its own: it imports lvegit, not
    the `lvegit/` folder at the repository's root, and gets neither the model key nor an unknown secret."""
    for name in ("a/pii", "b/pii"):
        repo.lve(name, PII, instances={"i.jsonl": [instance("mail jane@example.com", False, a=1, b=2)]})
    repo.lve("c/plain", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    marker = plant_code(repo.root)
    log = recording_git(tmp_path / "bin")
    (tmp_path / "cache").mkdir()  # an existing cache is asked whether git tracks it: by the other process too
    environment = {
        **os.environ,
        **SECRETS,
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "LVEGIT_CACHE_DIR": str(tmp_path / "cache"),
    }
    command = [sys.executable, "-I", "-m", "lvegit", "check", "--all", "--format", "json"]
    done = subprocess.run(command, cwd=repo.root, env=environment, capture_output=True, timeout=600)
    assert not marker.exists()
    assert done.returncode == 0, done.stderr
    assert [lve["replay"]["reproduced"] for lve in json.loads(done.stdout)["lves"]] == [1, 1, 1]
    [elsewhere] = [call for call in recorded_calls(log) if "--settings-json" in call["parent_command"]]
    assert elsewhere["parent_command"][1:4] == ["-I", "-m", "lvegit"] and elsewhere["parent_cwd"] == "/"
    for seen in (elsewhere["parent_env"], elsewhere["env"]):
        assert not set(SECRETS) & set(seen)


def test_an_instance_line_cannot_rewrite_a_lambda(repo: RepoBuilder) -> None:
    """A lambda's source is code: an instance's args never fill it (as lve-tools did), so a pull request
    that adds only an instance line cannot turn `r == '{answer}'` into `r == 'madrid' or 'x'`."""
    test = {
        "prompt": [{"content": "The capital of {country}?"}],
        "prompt_parameters": ["country", "answer"],
        "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r: r.lower() == '{answer}'"},
    }
    forged = instance("Paris", True, country="Spain", answer="madrid' or 'x")
    [result] = replay(repo, test=test, instances={"i.jsonl": [forged]})
    assert (result.status, result.replayed) == ("error", None)
    assert result.reason is not None
    assert "{answer}: a lambda's source is never filled from an instance's args" in result.reason


def test_an_instance_line_fills_a_regex_only_literally(repo: RepoBuilder) -> None:
    """A parameter in a pattern matches itself: `.*` in an instance line is two characters, not any text."""
    test = {
        "prompt": [{"content": "Say {word}."}],
        "prompt_parameters": ["word"],
        "checker_args": {"checker_name": "RegexChecker", "pattern": "^{word}[.]?$", "match_safe": True},
    }
    rows = [
        instance("Paris", True, word=".*"),  # forged: recorded safe, yet the response is not the word
        instance("a+b.", True, word="a+b"),
        instance("aab", True, word="a+b"),
    ]
    results = replay(repo, test=test, instances={"i.jsonl": rows})
    assert [(r.status, r.replayed) for r in results] == [
        ("mismatch", False),
        ("reproduced", True),
        ("mismatch", False),
    ]


def test_while_the_launcher_starts_lves_that_need_no_worker_are_judged_first(
    repo: RepoBuilder, monkeypatch: Any
) -> None:
    """The lambdas' worker comes from the launcher, a process that takes a tenth of a second to start: the
    LVEs judged in lvegit's own process are judged meanwhile, and the results still come in order."""
    import lvegit.judge.replay as replay
    from lvegit.judge.replay import Elsewhere, judge_stream, replaying_lve

    regex = {"checker_args": {"checker_name": "RegexChecker", "pattern": "3", "match_safe": True}}
    dirs = [
        repo.lve("a/lambda", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
        repo.lve("b/regex", regex, instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
        repo.lve("c/lambda", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
    ]
    root = Repository(repo.root.resolve())
    nowhere: Elsewhere[list[ReplayResult]] = Elsewhere([], dict, lambda _lve_dir, _reason: [])
    judged: list[str] = []

    def here(lve_dir: Path) -> Any:
        judged.append(root.relative(lve_dir).split("/")[2])
        return (yield from replaying_lve(root, lve_dir))

    for starting, order in ((True, ["regex", "lambda", "lambda"]), (False, ["lambda", "lambda", "regex"])):
        monkeypatch.setattr(replay, "launcher_starting", lambda starting=starting: starting)
        judged.clear()
        streamed = list(judge_stream(root, dirs, None, here, nowhere))
        assert judged == order
        assert [lve_dir for lve_dir, _results in streamed] == dirs
        assert [r.status for _d, results in streamed for r in results] == ["reproduced"] * 3


def test_lambda_lves_are_judged_together_in_one_batch_in_the_order_asked(
    repo: RepoBuilder, monkeypatch: Any
) -> None:
    """The lambda verdicts of several LVEs go to the lambda worker in one batch (a round trip per LVE
    made replay 50% slower); every LVE is judged on this thread, collecting garbage less often, and the
    results come in the order asked."""
    import gc

    import lvegit.judge.replay as replay
    from lvegit.base.collector import RUN_GC_THRESHOLD
    from lvegit.judge.replay import Elsewhere, judge_stream, replaying_lve

    regex = {"checker_args": {"checker_name": "RegexChecker", "pattern": "3", "match_safe": True}}
    dirs = [
        repo.lve("a/lambda", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
        repo.lve("b/regex", regex, instances={"i.jsonl": [instance("3", True, a=1, b=2)]}),
        repo.lve(
            "c/lambda", instances={"i.jsonl": [instance("4", True, a=1, b=2), instance("3", True, a=1, b=2)]}
        ),
    ]
    root = Repository(repo.root.resolve())
    batches: list[int] = []
    judge_batched = replay.judge_batched

    def counted(verdicts: list[Any], **options: Any) -> list[Any]:
        batches.append(len(verdicts))
        return judge_batched(verdicts, **options)

    monkeypatch.setattr(replay, "judge_batched", counted)
    judged_on: set[tuple[str, tuple[int, int, int]]] = set()
    before = gc.get_threshold()

    def here(lve_dir: Path) -> Any:
        judged_on.add((threading.current_thread().name, gc.get_threshold()))
        return (yield from replaying_lve(root, lve_dir))

    nowhere: Elsewhere[list[ReplayResult]] = Elsewhere([], dict, lambda _lve_dir, _reason: [])
    streamed = list(judge_stream(root, dirs, None, here, nowhere))
    assert [lve_dir for lve_dir, _results in streamed] == dirs
    assert [r.status for _d, results in streamed for r in results] == [
        "reproduced", "reproduced", "mismatch", "reproduced"
    ]  # fmt: skip
    assert batches == [3]  # both lambda LVEs' verdicts, in one
    assert judged_on == {(threading.main_thread().name, RUN_GC_THRESHOLD)}
    assert gc.get_threshold() == before
