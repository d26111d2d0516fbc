"""Replay: re-judge every recorded instance with the LVE's checker, no model involved."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from lvegit import __version__
from lvegit.base import processes
from lvegit.base.collector import collecting_less
from lvegit.base.errors import CheckerUnavailable, LvegitError
from lvegit.base.settings import CacheSettings, current
from lvegit.checkers.lambda_worker import judge_batched
from lvegit.checkers.launcher import launcher_starting, start_launcher_soon
from lvegit.checkers.llm_judge import ModelJudge
from lvegit.checkers.model_stack import classifier_missing, model_identity, stack_environment
from lvegit.checkers.registry import CheckerFactory, needs_of, substitute_args
from lvegit.judge.cache import Outcome, VerdictCache
from lvegit.judge.conversation import judge, prompts_to_send, recorded_pairs
from lvegit.judge.launching import needs_launcher
from lvegit.judge.results import ReplayResult, Status
from lvegit.lve.environment import environment_folder
from lvegit.lve.instances import Instance
from lvegit.lve.repo import Repository, named_checker
from lvegit.lve.spec import LVE, Loaded, blocking_errors, load_lve

Judged = TypeVar("Judged")
Result = TypeVar("Result")
# LVEs whose lambda verdicts go to the lambda worker together: one round trip for all, the replies read
# while the worker is still judging (a round trip per LVE waited 0.4 ms for 10 verdicts)
LAMBDA_LVES_PER_BATCH = 32
# An LVE's judging: it yields the lambda verdicts it asks for (judge_batched gives them), is sent each one's
# value or exception, and returns what it came to. Its other verdicts it gives itself.
Judging = Generator[list[Callable[[], bool]], list[bool | BaseException], Result]


@dataclass(frozen=True)
class Elsewhere(Generic[Judged]):
    """How LVEs are judged in a process of their own: the lvegit command it runs (with --format json), how
    its document gives each LVE's outcome by path, and the outcome of an LVE when that process failed."""

    command: list[str]
    read: Callable[[Any], dict[str, Judged]]
    failed: Callable[[Path, str], Judged]


Depends = Literal["files", "machine", "never"]  # what replay results follow from (see judging_lve)
DEPENDS: tuple[Depends, ...] = ("files", "machine", "never")


def checker_identity(lve: LVE) -> str:
    """Everything about an LVE's checker that decides verdicts and is the same for all its instances."""
    identity: dict[str, Any] = {"lvegit": __version__, "checker": lve.checker_name}
    if needs_of(lve.checker_name).runs == "sandbox":
        from lvegit.checkers.custom import read_checker_sources  # custom checkers' code: where there is one

        identity["sources"] = read_checker_sources(lve.dir)
    else:
        identity["model"] = model_identity(lve.checker_name, lve.checker_args)
    return json.dumps(identity, sort_keys=True, default=str)


def instance_key(lve: LVE, identity: str, instance: Instance) -> str | None:
    """An instance's key in the verdict cache; None when it cannot be keyed (replay reports why)."""
    params, _model_args = lve.split_args(instance.args)
    try:
        args = substitute_args(lve, instance.args)
        prompts = [[m.as_json() for m in prompt] for prompt in prompts_to_send(lve, params)]
    except LvegitError:
        return None
    material = [identity, args, prompts, params, instance.response, instance.data.get("judgement")]
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


def _instance_keys(lve: LVE, instances: list[Instance]) -> list[str | None]:
    """Each instance's key in the verdict cache (None for all when the checker cannot be identified)."""
    try:
        identity = checker_identity(lve)
    except LvegitError:
        return [None] * len(instances)
    return [instance_key(lve, identity, instance) for instance in instances]


def _result(lve: LVE, instance: Instance, outcome: Outcome) -> ReplayResult:
    """The replay result a checker's outcome gives (its own, or the cached one)."""

    def result(status: Status, replayed: bool | None = None, reason: str | None = None) -> ReplayResult:
        return ReplayResult(lve.rel, instance.file, instance.line, instance.passed, replayed, status, reason)

    if outcome.skip is not None:
        return result("skipped", reason=outcome.skip)
    if outcome.verdict == instance.passed:
        return result("reproduced", outcome.verdict)
    return result("mismatch", outcome.verdict, outcome.note)


Replayed = tuple[ReplayResult, Outcome, Depends]
# An instance's replay up to its verdict: it yields the verdict to give, is sent its value (or thrown what
# giving it raised) and returns the result.
Replaying = Generator[Callable[[], bool], bool, Replayed]


def _replaying(
    lve: LVE, factory: CheckerFactory, instance: Instance, unprepared: dict[int, BaseException]
) -> Replaying:
    """The result, the checker's outcome and what it follows from (see judging_lve). `unprepared`: how
    `prepare` failed, by checker: each of that checker's instances ends with it."""

    def failed(status: Status, reason: str) -> Replayed:
        result = ReplayResult(lve.rel, instance.file, instance.line, instance.passed, None, status, reason)
        return result, Outcome(skip=reason), "machine" if status == "skipped" else "never"

    params, _model_args = lve.split_args(instance.args)
    try:
        checker = factory.for_args(instance.args)
        if id(checker) in unprepared:
            raise unprepared[id(checker)]
        skip = checker.replay_skip_reason(instance.response)
        if skip is not None:
            outcome = Outcome(skip=skip)
        else:
            pairs = None
            verdict: bool | None = None
            if needs_of(lve.checker_name).judge_argument is not None:  # its judge's answers, read again
                assert isinstance(checker, ModelJudge)
                verdict = checker.recorded_verdict(instance.data.get("judgement"))
            else:
                pairs = recorded_pairs(lve, params, instance.response)
                if lve.environment is None or not needs_of(lve.checker_name).environment:
                    verdict = yield partial(judge, lve, checker, pairs, params)
            if lve.environment is not None:
                from lvegit.judge.environment import replay_environment  # environment LVEs' only

                conversation = (pairs or recorded_pairs(lve, params, instance.response))[0][1]
                verdict, differs = replay_environment(
                    lve, factory.environment, params, conversation, instance.data, verdict
                )
                if differs is not None:
                    result = ReplayResult(
                        lve.rel, instance.file, instance.line, instance.passed, verdict, "mismatch", differs
                    )
                    return result, Outcome(verdict=verdict), "never"
            note = (
                f"judged by {checker.judged_with}; the recording may come from another model"
                if checker.judged_with
                else None
            )
            outcome = Outcome(verdict=verdict, note=note)
    except CheckerUnavailable as exc:
        return failed("skipped", str(exc))
    except LvegitError as exc:
        return failed("error", str(exc))
    except (Exception, SystemExit) as exc:  # a checker's own failure costs only this instance
        return failed("error", f"{type(exc).__name__}: {exc}")
    return _result(lve, instance, outcome), outcome, "files"


def _given(replaying: Replaying, verdict: bool | BaseException) -> Callable[[], bool] | Replayed:
    """What an instance's replay does once given its verdict: ask for another, or end with its result."""
    try:
        return replaying.throw(verdict) if isinstance(verdict, BaseException) else replaying.send(verdict)
    except StopIteration as ended:
        return ended.value  # type: ignore[no-any-return]


def _replay_instances(
    lve: LVE, factory: CheckerFactory, instances: list[Instance], unprepared: dict[int, BaseException]
) -> Judging[list[Replayed]]:
    """Each instance's replay, its verdict given where it is asked; a lambda checker's verdicts are yielded
    together, for the lambda worker (see Judging)."""
    batched = needs_of(lve.checker_name).lambda_batches
    replays = [_replaying(lve, factory, instance, unprepared) for instance in instances]
    done: dict[int, Replayed] = {}
    asked: dict[int, Callable[[], bool]] = {}
    for number, replaying in enumerate(replays):
        try:
            asked[number] = next(replaying)
        except StopIteration as ended:
            done[number] = ended.value
    while asked:
        numbers = list(asked)
        verdicts = (yield [asked[n] for n in numbers]) if batched else [_verdict(asked[n]) for n in numbers]
        asked = {}
        for number, verdict in zip(numbers, verdicts, strict=True):
            step = _given(replays[number], verdict)
            if callable(step):
                asked[number] = step
            else:
                done[number] = step
    return [done[number] for number in range(len(instances))]


def _verdict(verdict: Callable[[], bool]) -> bool | BaseException:
    try:
        return verdict()
    except (Exception, SystemExit) as exc:  # the instance's replay reports it
        return exc


def _prepare(factory: CheckerFactory, instances: list[Instance]) -> dict[int, BaseException]:
    """Let each checker see all its responses at once (model-based checkers classify them in batches);
    how it failed, by checker, for those that could not."""
    groups: dict[int, tuple[Any, list[Any]]] = {}
    for instance in instances:
        try:
            checker = factory.for_args(instance.args)
        except LvegitError:  # the same error is reported per instance by _replaying
            continue
        groups.setdefault(id(checker), (checker, []))[1].append(instance.response)
    failed: dict[int, BaseException] = {}
    for checker, responses in groups.values():
        try:
            checker.prepare(responses)
        except (Exception, SystemExit) as exc:  # each instance of this checker reports it; others go on
            failed[id(checker)] = exc
    return failed


def judge_together(judgings: list[Judging[Result]]) -> list[Result]:
    """What each judging comes to, run side by side: each round, the lambda verdicts all of them ask for go
    to the lambda worker in one batch."""
    done: dict[int, Result] = {}
    asked: dict[int, list[Callable[[], bool]]] = {}

    def step(number: int, given: list[bool | BaseException] | None) -> None:
        try:
            asked[number] = judgings[number].send(given)  # type: ignore[arg-type]  # None starts it
        except StopIteration as ended:
            done[number] = ended.value

    for number in range(len(judgings)):
        step(number, None)
    while asked:
        this_round = list(asked.items())
        asked.clear()
        asking = [verdict for _number, verdicts in this_round for verdict in verdicts]
        answers: list[bool | Exception] = judge_batched(asking, are_checkers=True)  # conversation.judge's
        given = iter(answers)
        for number, verdicts in this_round:
            step(number, [next(given) for _verdict in verdicts])
    return [done[number] for number in range(len(judgings))]


def judge_alone(judging: Judging[Result]) -> Result:
    """What one judging comes to."""
    return judge_together([judging])[0]


def replay_lve(repo: Repository, lve_dir: Path, cache: VerdictCache | None = None) -> list[ReplayResult]:
    """Replay one LVE's instances. With a cache, an instance whose checker and stored response are
    unchanged gets its verdict from there, and the checker is built only for the others."""
    return judge_alone(replaying_lve(repo, lve_dir, cache))


def replaying_lve(
    repo: Repository, lve_dir: Path, cache: VerdictCache | None = None
) -> Judging[list[ReplayResult]]:
    """replay_lve as a Judging, to be judged together with others."""
    return (yield from judging_lve(repo, lve_dir, cache))[0]


def judging_lve(
    repo: Repository,
    lve_dir: Path,
    cache: VerdictCache | None = None,
    loaded: Loaded | None = None,
    factory: CheckerFactory | None = None,
) -> Judging[tuple[list[ReplayResult], Depends]]:
    """replay_lve's results, and what they follow from, for the verdict cache: "files" when from the
    LVE's files alone; "machine" when some are skips for a checker that cannot run here (a package or a
    model missing), which stand while the machine does; "never" after a checker failure.
    `loaded`: what load_lve returned for the LVE, where the caller has read it already; `factory`: the
    LVE's checker factory, where the caller has one (the caller closes it)."""
    lve, problems, _text = loaded or load_lve(repo, lve_dir)
    rel = repo.relative(lve_dir)
    blocking = blocking_errors(problems)
    if lve is None or blocking:
        first = (blocking or problems.errors)[0]
        error = ReplayResult(rel, first.file, first.line, None, None, "error", f"invalid LVE: {first.what}")
        return [error], "files"
    results: list[ReplayResult] = []
    instances: list[Instance] = []
    for recorded in lve.recorded():
        instances.extend(recorded.instances)
        results.extend(
            ReplayResult(rel, p.file, p.line, None, None, "error", p.what) for p in recorded.problems.errors
        )
    to_judge: list[tuple[Instance, str | None]] = []
    # lvegit's own checkers judge an instance faster than its cache entry is keyed and read: the cache is
    # for model-based and custom checkers
    # an environment LVE's replay runs its tools again: never from the cache
    keyed = cache is not None and needs_of(lve.checker_name).cached and lve.environment is None
    keys = _instance_keys(lve, instances) if keyed else [None] * len(instances)
    stamp = None  # the machine's, for skips that depend on it: read when first needed
    for instance, key in zip(instances, keys, strict=True):
        cached = None
        if cache is not None and key is not None:
            stamp = stamp or cache.machine_stamp(rel)
            cached = cache.get(key) or cache.get(cache.machine_key(key, stamp))
        if cached is not None:
            results.append(_result(lve, instance, cached))
        else:
            to_judge.append((instance, key))
    depends: Depends = "files"
    if to_judge:
        on_this_machine: list[tuple[str, Outcome]] = []
        with contextlib.nullcontext(factory) if factory else CheckerFactory(lve) as judging:
            unprepared = _prepare(judging, [instance for instance, _key in to_judge])
            replayed = yield from _replay_instances(
                lve, judging, [instance for instance, _key in to_judge], unprepared
            )
            for (_instance, key), (result, outcome, this) in zip(to_judge, replayed, strict=True):
                results.append(result)
                unkeyed = keyed and key is None  # what decides its verdict could not be hashed
                depends = max(depends, "never" if unkeyed else this, key=DEPENDS.index)
                if cache is not None and key is not None and this == "files":
                    cache.put(key, outcome)
                elif key is not None and this == "machine":
                    on_this_machine.append((key, outcome))
            if cache is not None and judging.hub_models:
                cache.put_hub_models(rel, judging.hub_models)
        if cache is not None and on_this_machine:  # stamped after the models the checker asked for
            stamp = cache.machine_stamp(rel)
            for key, outcome in on_this_machine:
                cache.put(cache.machine_key(key, stamp), outcome)
    return sorted(results, key=lambda r: (r.file, r.line or 0)), depends


def _stack(
    repo: Repository, lve_dir: Path, named: tuple[str, dict[str, Any]] | None, cache: VerdictCache | None
) -> str | None:
    """The model stack (presidio, transformers) an LVE's replay has to load, if any: None for the other
    checkers, when the checker's model is missing (judged here: each instance is skipped at once, with no
    process started) and when every instance's verdict is in the cache."""
    if named is None or (stack := needs_of(named[0]).stack) is None or classifier_missing(*named):
        return None
    if cache is not None:  # loaded here only to ask the cache
        lve, _problems, _text = load_lve(repo, lve_dir)
        if lve is None:
            return None
        instances = [instance for recorded in lve.recorded() for instance in recorded.instances]
        keys = _instance_keys(lve, instances)
        if all(key is not None and cache.get(key) is not None for key in keys):
            return None
    return stack


def _judge_elsewhere(
    repo: Repository, lve_dirs: list[Path], cache: VerdictCache | None, command: list[str]
) -> subprocess.Popen[bytes]:
    """`lvegit COMMAND` of these LVEs in a process of its own, started now so that its libraries load
    while this process judges the other LVEs. It runs lvegit's code only (isolated, outside the
    repository: a pull request's `lvegit/` folder is not imported) with what it reads from the
    environment: the model stack's caches, and git's configuration for the cache's `tracked` check. Its
    settings come in the flag (no LVEGIT_* variable), and no model key: its checkers ask no model. It uses
    this process's cache as this process does: the same directory, read-only when this one is."""
    cache_settings = CacheSettings(
        "off" if cache is None else "on" if cache.writable else "read",
        None if cache is None else os.path.abspath(cache.directory),
    )
    settings = replace(current(), cache=cache_settings)
    arguments = [
        "--settings-json",
        settings.as_flag(),
        *command,
        "--format",
        "json",
        "--repo",
        str(repo.root),
    ]
    arguments += [os.path.abspath(lve_dir) for lve_dir in lve_dirs]
    from lvegit.git.vcs import git_passing  # only where LVEs are judged in other processes

    environment = processes.environment([*stack_environment(), *git_passing()])
    return processes.start(
        processes.lvegit_command("lvegit", *arguments),
        environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _outcomes_of(
    process: subprocess.Popen[bytes], lve_dirs: list[Path], repo: Repository, elsewhere: Elsewhere[Judged]
) -> Iterator[tuple[Path, Judged]]:
    """Each LVE's outcome from the document the process printed; where that fails, why."""
    out, err = process.communicate()
    try:
        found = elsewhere.read(json.loads(out))
        outcomes = [(d, found[repo.relative(d)]) for d in lve_dirs]
    except (ValueError, KeyError, TypeError):
        reason = f"the {elsewhere.command[0]} process failed: {err.decode(errors='replace').strip()[-500:]}"
        outcomes = [(d, elsewhere.failed(d, reason)) for d in lve_dirs]
    yield from outcomes


def replay_error(repo: Repository, lve_dir: Path, reason: str) -> ReplayResult:
    """An LVE's one replay result when it could not be replayed at all."""
    return ReplayResult(repo.relative(lve_dir), repo.relative(lve_dir), None, None, None, "error", reason)


def judge_stream(
    repo: Repository,
    lve_dirs: list[Path],
    cache: VerdictCache | None,
    here: Callable[[Path], Judging[Judged]],
    elsewhere: Elsewhere[Judged],
    settled: Callable[[Path], bool] = lambda _lve_dir: False,
    threads: int = 8,
) -> Iterator[tuple[Path, Judged]]:
    """Each LVE's outcome as soon as it is known. LVEs whose checker needs a model stack that is not
    cached (and that are not `settled` already) go to one lvegit replay process per stack, started first,
    so that Presidio and torch load side by side while `here` judges the others; `elsewhere` says what that
    process runs and how its outcomes are read (they are used as they come: nothing is loaded or judged
    again here). LVEs with a custom checker or an environment are judged on up to `threads` threads, since
    they mostly wait for their sandboxed workers; the others on this thread (threads would only contend
    for the interpreter: lambda LVEs on threads of their own were 50% slower), ahead of their turn while a
    threaded LVE is not done yet, those with a lambda checker LAMBDA_LVES_PER_BATCH together
    (judge_together).
    The LVEs come in the order given, warm cache or cold: one judged elsewhere holds back those after it
    (which are judged meanwhile) until its process answers."""
    found = _judge_stream(repo, lve_dirs, cache, here, elsewhere, settled, threads)
    done: dict[Path, Judged] = {}
    position = 0
    with collecting_less():
        for lve_dir, judged in found:
            done[lve_dir] = judged
            while position < len(lve_dirs) and lve_dirs[position] in done:
                yield lve_dirs[position], done.pop(lve_dirs[position])
                position += 1


def _judge_stream(
    repo: Repository,
    lve_dirs: list[Path],
    cache: VerdictCache | None,
    here: Callable[[Path], Judging[Judged]],
    elsewhere: Elsewhere[Judged],
    settled: Callable[[Path], bool],
    threads: int,
) -> Iterator[tuple[Path, Judged]]:
    """judge_stream's outcomes as they come: the LVEs judged here in the order given, then the others."""
    checkers: dict[Path, tuple[str, dict[str, Any]] | None] = {}  # (name, checker_args) or None
    launching = False
    for lve_dir in lve_dirs:
        if not settled(lve_dir):
            checkers[lve_dir] = named = named_checker(repo, lve_dir)
            if not launching and needs_launcher(lve_dir, named):
                start_launcher_soon()  # now, not once every test.json is read: the first LVE may need it
                launching = True
    by_stack: dict[str, list[Path]] = {}
    if len(lve_dirs) > 1:
        for lve_dir, named in checkers.items():
            stack = _stack(repo, lve_dir, named, cache)
            if stack is not None:
                by_stack.setdefault(stack, []).append(lve_dir)
    if len(by_stack) == 1 and sum(map(len, by_stack.values())) == len(lve_dirs):
        by_stack.clear()  # one stack and nothing else: no process to overlap with (and no recursion)
    away = {d for dirs in by_stack.values() for d in dirs}
    processes = [(_judge_elsewhere(repo, dirs, cache, elsewhere.command), dirs) for dirs in by_stack.values()]
    local = [d for d in lve_dirs if d not in away]
    needs = {d: needs_of(named[0]) for d in local if (named := checkers.get(d)) is not None}
    custom = {  # an environment's replay waits on its worker too (sets: 10,000s of LVEs are looked up)
        d for d in local if (d in needs and needs[d].runs == "sandbox") or environment_folder(d).is_dir()
    }
    lambdas = deque(d for d in local if d in needs and needs[d].lambda_batches and d not in custom)
    batched = set(lambdas)
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(custom)))) as pool:
        waiting = {d: pool.submit(lambda d: judge_alone(here(d)), d) for d in local if d in custom}
        in_process = deque(d for d in local if d not in waiting)  # lambdas: the same order
        judged: dict[Path, Judged] = {}

        def judge_next() -> None:
            if lambdas and in_process[0] == lambdas[0] and launcher_starting():
                # The lambdas' worker is still starting: an LVE that needs none is judged meanwhile.
                ahead = next((d for d in in_process if d not in batched), None)
                if ahead is not None:
                    in_process.remove(ahead)
                    judged[ahead] = judge_alone(here(ahead))
                    return
            lve_dir = in_process.popleft()
            if lve_dir not in batched:
                judged[lve_dir] = judge_alone(here(lve_dir))
            elif lambdas and lambdas[0] == lve_dir:  # the first lambda LVE left: judged with the next ones
                group = [lambdas.popleft() for _lve in range(min(LAMBDA_LVES_PER_BATCH, len(lambdas)))]
                judged.update(zip(group, judge_together([here(d) for d in group]), strict=True))
            # else: judged already, with the lambda LVEs before it

        for lve_dir in local:
            if lve_dir in waiting:
                while in_process and not waiting[lve_dir].done():
                    judge_next()
                yield lve_dir, waiting[lve_dir].result()
            else:
                while lve_dir not in judged:  # it is in in_process, the next not judged
                    judge_next()
                yield lve_dir, judged.pop(lve_dir)
    for process, dirs in processes:
        yield from _outcomes_of(process, dirs, repo, elsewhere)


def replay_stream(
    repo: Repository, lve_dirs: list[Path], cache: VerdictCache | None = None
) -> Iterator[tuple[Path, list[ReplayResult]]]:
    """Each LVE's replay results as soon as they are known (see judge_stream)."""

    def read(document: Any) -> dict[str, list[ReplayResult]]:
        per_lve: dict[str, list[ReplayResult]] = {repo.relative(d): [] for d in lve_dirs}
        for item in document["instances"]:
            result = ReplayResult(**item)
            per_lve[result.lve].append(result)
        return per_lve

    elsewhere = Elsewhere(["replay"], read, lambda lve_dir, reason: [replay_error(repo, lve_dir, reason)])
    return judge_stream(repo, lve_dirs, cache, lambda lve_dir: replaying_lve(repo, lve_dir, cache), elsewhere)


def replay_all(
    repo: Repository, lve_dirs: list[Path], cache: VerdictCache | None = None
) -> list[ReplayResult]:
    """Every result of replaying the LVEs (see replay_stream), in the order of `lve_dirs`."""
    per_lve = dict(replay_stream(repo, lve_dirs, cache))
    return [result for lve_dir in lve_dirs for result in per_lve[lve_dir]]
