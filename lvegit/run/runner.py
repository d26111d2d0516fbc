"""Live execution: instances re-run against their model with bounded concurrency and retries.

Each task becomes one Attempt: the prompt's holes are filled in order (every run of a multi-run prompt),
the checker judges, `postprocess_response` rewrites what will be stored, and only then is anything written
(report line, appended instance). A request that fails transiently is retried with exponential backoff and
jitter (Retry-After wins when the server sends it); an attempt that still fails ends as `error` with the
reason, and the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from lvegit import __version__
from lvegit.base.errors import LvegitError
from lvegit.base.files import FileProblem
from lvegit.base.loop import run_loop
from lvegit.base.output import count
from lvegit.base.settings import RetryPolicy
from lvegit.base.versions import installed_versions
from lvegit.checkers.base import BaseChecker
from lvegit.checkers.llm_judge import Judgement, ModelJudge
from lvegit.checkers.registry import CheckerFactory, needs_of
from lvegit.judge.conversation import (
    Pair,
    conversation_steps,
    judge,
    postprocessed,
    recorded_conversations,
    stored_response,
)
from lvegit.judge.environment import AttemptEnvironment, judge_environment
from lvegit.lve.instances import InstanceKeys, append_instances, line_too_long
from lvegit.lve.prompt import Message
from lvegit.lve.spec import LVE
from lvegit.models.base import DEFAULT_CONCURRENCY, ChatModel, Completion, ModelError, TransientModelError
from lvegit.models.routing import ModelPool
from lvegit.run.attempt import Attempt, Report
from lvegit.run.verdicts import LambdaVerdicts

# A verdict of lvegit's own checker that takes longer than this moves its LVE's later verdicts off the loop.
INLINE_VERDICT_SECONDS = 0.01


@dataclass(slots=True)
class Task:
    lve: LVE
    attempt: Attempt
    append_to: Path | None = None  # the instance file to append the result to
    new_recording: bool = False  # `record`: new evidence each time, never a re-run of a recording

    def reproduces(self) -> dict[str, Any] | None:
        """For a re-run, the recording it reproduces: its instance file (relative to the LVE) and line."""
        if self.new_recording or self.attempt.source_file is None:
            return None
        source = PurePosixPath(self.attempt.source_file)
        if source.is_relative_to(self.lve.rel):
            source = source.relative_to(self.lve.rel)
        return {"file": source.as_posix(), "line": self.attempt.source_line}

    def idempotency_key(self) -> str:
        """Re-running the same recording appends it once; every new recording is new evidence."""
        return uuid.uuid4().hex if self.new_recording else self.attempt.id

    @property
    def models(self) -> list[str]:
        """The models the attempt asks: its own, and its checker's judge."""
        judge = needs_of(self.lve.checker_name).judge_model(self.lve.checker_args)
        if judge is None:
            return [self.attempt.model]
        return list(dict.fromkeys([self.attempt.model, judge]))


@dataclass
class Recorder:
    """What becomes of an attempt around its requests, in a live run and in batch rounds alike: the
    checker's verdict and postprocessing, the appended instance line, the report's lines."""

    report: Report | None = None
    author: str | None = None
    on_finish: Callable[[Attempt], None] | None = None
    _factories: dict[str, CheckerFactory] = field(default_factory=dict)
    _instance_keys: InstanceKeys = field(default_factory=InstanceKeys)

    def resumed(self, attempt: Attempt) -> Attempt | None:
        """The finished record of this attempt in the report of the run being resumed, if any."""
        if self.report is None or attempt.id not in self.report.done:
            return None
        return self.announce(self.report.done[attempt.id])

    def start(self, attempt: Attempt, write: bool = True) -> None:
        attempt.status = "started"
        attempt.started_at = attempt.started_at or time.time()
        if write:
            self._write(attempt)

    def checker(self, task: Task) -> BaseChecker:
        """The task's checker, built once per LVE and arguments. Blocking: a custom checker is built in its
        sandboxed worker."""
        if task.lve.rel not in self._factories:
            self._factories[task.lve.rel] = CheckerFactory(task.lve)
        return self._factories[task.lve.rel].for_args(task.attempt.args)

    def environment(self, task: Task, params: dict[str, Any]) -> AttemptEnvironment:
        """A new attempt's environment, in the LVE's sandboxed worker (started on first use). Blocking."""
        self.checker(task)  # the LVE's factory, which holds its environment
        return AttemptEnvironment(self._factories[task.lve.rel].environment, params)

    def verdict(self, task: Task, pairs: list[Pair]) -> bool:
        """The checker's verdict on the filled conversations. Blocking (see judge)."""
        params, _model_args = task.lve.split_args(task.attempt.args)
        return judge(task.lve, self.checker(task), pairs, params)

    def judge(
        self, task: Task, pairs: list[Pair], judgement: Judgement | None = None, verdict: bool | None = None
    ) -> None:
        """The verdict on the filled conversations (an LLM judge's `judgement`, where one was asked; the
        checker's `verdict`, where it was judged already), and the (postprocessed) response to store.
        Blocking: a custom checker answers in its sandboxed worker, an environment's checks in the
        environment's."""
        lve, attempt = task.lve, task.attempt
        params, _model_args = lve.split_args(attempt.args)
        checker = self.checker(task)
        if judgement is not None:
            attempt.verdict, attempt.judgement = judgement.verdict, judgement.as_json()
        elif verdict is not None:
            attempt.verdict = verdict
        elif lve.environment is None or not needs_of(lve.checker_name).environment:
            attempt.verdict = self.verdict(task, pairs)
        if lve.environment is not None and attempt.environment is not None:
            environment = self._factories[lve.rel].environment
            verdicts = judge_environment(lve, environment, pairs[0][1], attempt.environment, attempt.verdict)
            attempt.verdict, attempt.utility = verdicts.verdict, verdicts.utility
        attempt.response = postprocessed(lve, checker, stored_response(lve, pairs))
        recorded = recorded_conversations(lve, params, attempt.response)
        # a postprocessed response need not fit the prompt any more: then the prompts as sent
        attempt.conversation = recorded or [[m.as_json() for m in prompt] for prompt, _ in pairs]

    def finish(self, task: Task) -> Attempt:
        """An attempt that ended (complete or error): its instance line appended, its report line."""
        return self.finish_all([task])[0]

    def finish_all(self, tasks: list[Task]) -> list[Attempt]:
        """Attempts that ended, written together: one write per instance file (appended lines first),
        one to the report."""
        now = time.time()
        appending: dict[Path, list[tuple[Task, dict[str, Any]]]] = {}
        for task in tasks:
            task.attempt.finished_at = now
            if task.attempt.status == "complete" and task.append_to is not None:
                appending.setdefault(task.append_to, []).append((task, self._new_instance(task)))
        for path, pairs in appending.items():
            self._append(path, pairs)
        attempts = [task.attempt for task in tasks]
        if self.report is not None:
            self.report.write_all(attempts)
        return [self.announce(attempt) for attempt in attempts]

    def announce(self, attempt: Attempt) -> Attempt:
        if self.on_finish is not None:
            self.on_finish(attempt)
        return attempt

    def release(self, lve: str) -> None:
        """Let an LVE's checkers go (its sandboxed worker stops): no attempt of it is left to judge."""
        factory = self._factories.pop(lve, None)
        if factory is not None:
            factory.close()

    def close(self) -> None:
        for factory in self._factories.values():
            factory.close()
        self._factories.clear()

    def _new_instance(self, task: Task) -> dict[str, Any]:
        """The instance line an attempt would append (its file may hold it already: the same key)."""
        return instance_record(task.attempt, task.idempotency_key(), self.author, task.reproduces())

    def _append(self, path: Path, pairs: list[tuple[Task, dict[str, Any]]]) -> None:
        """Append the attempts' lines that the file does not hold yet; an instance file that cannot be
        written (a link out of its LVE, say) ends its attempts in an error that names it."""
        for task, record in pairs:
            if (too_long := line_too_long(record)) is not None:
                task.attempt.status, task.attempt.error = "error", f"{task.lve.rel}/instances: {too_long}"
        pairs = [(task, record) for task, record in pairs if task.attempt.error is None]
        if not pairs:
            return
        try:
            appended = append_instances(path, [record for _task, record in pairs], self._instance_keys)
        except FileProblem as exc:
            for task, _record in pairs:
                task.attempt.status, task.attempt.error = "error", f"{task.lve.rel}/instances: {exc}"
            return
        written = {id(record) for record in appended}
        for task, record in pairs:
            if id(record) in written:
                key = record["run_info"]["idempotency_key"]
                task.attempt.appended_to, task.attempt.appended_key = str(path), key

    def _write(self, attempt: Attempt) -> None:
        if self.report is not None:
            self.report.write(attempt)


@dataclass
class Runner:
    pool: ModelPool
    concurrency: int | None = None  # per model; None: what its backend asks for
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    recorder: Recorder = field(default_factory=Recorder)
    _checker_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _slow_verdicts: set[str] = field(default_factory=set)  # LVEs whose verdicts are judged in a thread
    _lambda_verdicts: LambdaVerdicts = field(default_factory=LambdaVerdicts)

    def run(self, tasks: list[Task]) -> list[Attempt]:
        """Every task's attempt, in the tasks' order."""
        finished: dict[int, Attempt] = {}
        order = {id(task.attempt): number for number, task in enumerate(tasks)}
        self.stream(tasks, lambda attempt: finished.__setitem__(order[id(attempt)], attempt))
        return [finished[number] for number in range(len(tasks))]

    def stream(self, tasks: Iterable[Task], finished: Callable[[Attempt], None]) -> None:
        """Run tasks as they come (a plan read while the first requests are under way), handing each
        attempt to `finished` when it ends; a task is taken only when its model has a request slot free,
        so no more is held than is in flight."""
        run_loop(self._stream(tasks, finished))

    async def _stream(self, tasks: Iterable[Task], finished: Callable[[Attempt], None]) -> None:
        limits: dict[str, asyncio.Semaphore] = {}
        running: set[asyncio.Task[None]] = set()
        # Tasks come LVE by LVE: once a later LVE's task was taken and an LVE has no attempt left in flight,
        # its checkers are let go, so that a run over a corpus holds those of the LVEs in flight only.
        in_flight: dict[str, int] = {}
        taking = ""  # the LVE whose tasks are being taken

        def release(lve: str) -> None:
            del in_flight[lve]
            self._checker_locks.pop(lve, None)
            self._slow_verdicts.discard(lve)
            self.recorder.release(lve)

        def done(lve: str) -> None:
            in_flight[lve] -= 1
            if not in_flight[lve] and lve != taking:
                release(lve)

        async def one(task: Task, limit: asyncio.Semaphore) -> None:
            try:
                finished(await self._execute(task))
            finally:
                limit.release()
                done(task.lve.rel)

        try:
            for task in tasks:
                model_id, lve = task.attempt.model, task.lve.rel
                if lve != taking:
                    previous, taking = taking, lve
                    if in_flight.get(previous) == 0:
                        release(previous)
                in_flight[lve] = in_flight.get(lve, 0) + 1
                if model_id not in limits:
                    limits[model_id] = asyncio.Semaphore(self._concurrency(model_id))
                await limits[model_id].acquire()
                job = asyncio.create_task(one(task, limits[model_id]))
                running.add(job)
                job.add_done_callback(running.discard)
            await asyncio.gather(*running)
        finally:
            for job in running:
                job.cancel()
            self.recorder.close()
            await self.pool.close()

    async def _execute(self, task: Task) -> Attempt:
        attempt = task.attempt
        resumed = self.recorder.resumed(attempt)
        if resumed is not None:
            return resumed
        self.recorder.start(attempt)
        with failing_alone(attempt):
            route, model = self.pool.get(attempt.model)
            attempt.backend = route.backend
            await self._complete(task, model)
            attempt.status = "complete"
        return self.recorder.finish(task)

    async def _complete(self, task: Task, model: ChatModel) -> None:
        params, model_args = task.lve.request_args(task.attempt.args)
        environment = self.recorder.environment(task, params) if task.lve.environment is not None else None
        steps = conversation_steps(task.lve, params, environment.answer if environment else None)
        asked = next(steps)
        while True:
            requests = [
                request(model, step.messages, model_args, task.attempt, self.policy) for step in asked
            ]
            # one request (every prompt but a multi-run one) is awaited as it is: gather would make it a task
            completions = [await requests[0]] if len(requests) == 1 else await asyncio.gather(*requests)
            try:
                asked = steps.send(list(completions))
            except StopIteration as finished:
                pairs: list[Pair] = finished.value
                break
        if environment is not None:
            task.attempt.environment = environment.record()
        judgement = None
        needs = needs_of(task.lve.checker_name)
        if needs.judge_argument is not None:  # lvegit's own code: built here at once
            checker = self.recorder.checker(task)
            assert isinstance(checker, ModelJudge)
            params, _model_args = task.lve.split_args(task.attempt.args)
            conversations = [conversation for _prompt, conversation in pairs]
            judgement = await ask_judge(self.pool, checker, conversations, params, task.attempt, self.policy)
        lve = task.lve.rel
        if needs.runs == "inline" and lve not in self._slow_verdicts:
            # lvegit's own checkers judge faster than a thread hop, on the loop (lambdas in the lambda worker,
            # with the other verdicts of this turn); an LVE whose lambda or pattern took long once is judged
            # in a thread from then on, so it cannot stall the requests
            started = time.perf_counter()
            seconds = None
            try:
                if needs.lambda_batches:
                    verdict, seconds = await self._lambda_verdicts.judge(
                        lve, lambda: self.recorder.verdict(task, pairs)
                    )
                    self.recorder.judge(task, pairs, judgement, verdict)
                else:
                    self.recorder.judge(task, pairs, judgement)
            finally:
                if (time.perf_counter() - started if seconds is None else seconds) > INLINE_VERDICT_SECONDS:
                    self._slow_verdicts.add(lve)
            return
        # A custom checker's worker answers one request at a time, a model-based one runs a model: each
        # LVE's checker is used under its own lock, off the event loop.
        async with self._checker_locks.setdefault(lve, asyncio.Lock()):
            await asyncio.to_thread(self.recorder.judge, task, pairs, judgement)

    def _concurrency(self, model_id: str) -> int:
        """Attempts in flight for one model: --concurrency, else what its backend asks for (a local
        model a full batch)."""
        if self.concurrency is not None:
            return max(1, self.concurrency)
        try:
            return self.pool.get(model_id)[1].concurrency
        except LvegitError:  # its attempts end in this error when they start
            return DEFAULT_CONCURRENCY


@contextlib.contextmanager
def failing_alone(attempt: Attempt) -> Iterator[None]:
    """Whatever goes wrong in one attempt ends that attempt in an error with the reason, not the run."""
    try:
        yield
    except ModelError as exc:
        attempt.status, attempt.error, attempt.error_source = "error", str(exc), "model"
    except LvegitError as exc:
        attempt.status, attempt.error = "error", str(exc)
    except Exception as exc:
        attempt.status, attempt.error = "error", f"{type(exc).__name__}: {exc}"


async def request(
    model: ChatModel,
    messages: list[Message],
    model_args: dict[str, Any],
    attempt: Attempt,
    policy: RetryPolicy,
    for_judge: bool = False,
) -> Completion:
    """One completion for an attempt, retried with backoff while it fails transiently; the attempt counts
    its requests and retries and keeps the model and backend that answered (its judge's requests are
    counted apart, and the judge is known by the judgement)."""
    for retry in range(policy.attempts):
        if for_judge:
            attempt.judge_requests += 1
        else:
            attempt.requests += 1
        try:
            completion = await model.complete(messages, model_args)
        except TransientModelError as exc:
            if policy.gives_up(retry + 1, exc.refused):
                raise ModelError(f"gave up after {count(retry + 1, 'request')}: {exc}") from None
            attempt.retries += 1
            await policy.wait(retry, exc.retry_after)
            continue
        if not for_judge:
            attempt.resolved_model = completion.model
            attempt.backend_details = completion.run_info
        return completion
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


async def ask_judge(
    pool: ModelPool,
    checker: ModelJudge,
    conversations: list[list[Message]],
    params: dict[str, Any],
    attempt: Attempt,
    policy: RetryPolicy,
) -> Judgement:
    """An LLM judge's judgement of an instance's conversation, asked in this process (never in a sandbox)
    through the routing: `samples` requests, each retried like the model's and counted by the attempt."""
    messages = checker.judge_messages(conversations, params)
    _route, judge_model = pool.get(checker.judge)
    asking = (
        request(judge_model, messages, checker.request_args, attempt, policy, for_judge=True)
        for _ in range(checker.samples)
    )
    return checker.judgement([completion.text for completion in await asyncio.gather(*asking)])


def library_versions() -> dict[str, str]:
    versions = {"lvegit": __version__}
    loaded = tuple(
        package for package in ("aiohttp", "openai", "transformers", "torch") if package in sys.modules
    )
    return {**versions, **installed_versions(loaded)}


def instance_record(
    attempt: Attempt, key: str, author: str | None, reproduces: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An attempt as an instance line (the response is the postprocessed one); a re-run says which
    recording it reproduces."""
    return {
        "args": attempt.args,
        "response": attempt.response,
        "passed": attempt.verdict,
        **({"judgement": attempt.judgement} if attempt.judgement is not None else {}),
        **(
            {"environment": attempt.environment, "utility": attempt.utility}
            if attempt.environment is not None
            else {}
        ),
        "author": author or "",
        "run_info": {
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "backend": attempt.backend,
            "model": attempt.resolved_model or attempt.model,
            "requested_model": attempt.model,
            **attempt.backend_details,
            **library_versions(),
            "idempotency_key": key,
            **({"reproduces": reproduces} if reproduces is not None else {}),
        },
    }
