"""Batch rounds: every attempt driven as far as the answers known so far take it.

A round drives each unfinished attempt through its conversation from the start, answering its requests by
custom_id from the batch outputs read so far. An attempt whose requests are all answered is judged and
recorded as in a live run (postprocessing, --append, --report). One whose request failed for good ends
in an error that says why. Any other gets its next request written to the round's input file: round k
sends the k-th step of every multi-step conversation. Driving from the start keeps nothing between rounds
but the answers, so a run resumed in another process (--resume, --batch-in) drives the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lvegit.base.errors import LvegitError
from lvegit.base.output import count
from lvegit.base.settings import RetryPolicy
from lvegit.batch.files import Answers, Failure, RequestFile, custom_id
from lvegit.checkers.llm_judge import Judgement, ModelJudge
from lvegit.checkers.registry import needs_of
from lvegit.judge.conversation import Pair, conversation_steps
from lvegit.lve.prompt import Message
from lvegit.models.base import Completion, chat_body
from lvegit.models.routing import ModelPool, Route
from lvegit.run.attempt import Attempt
from lvegit.run.runner import Recorder, Task, failing_alone, request

WRITE_EVERY = 1000  # ended attempts are written together (instance lines, report lines), this many at most

# Where a round writes the requests of a route; None: nowhere (--batch-in alone), so they end in errors.
RequestFiles = Callable[[Route], RequestFile | None]


@dataclass
class Request:
    """A request of an attempt, to its model or its judge's; made live when its batch failed it
    (--batch-fallback live)."""

    task: Task
    request_id: str
    messages: list[Message]
    model_args: dict[str, Any]
    model_id: str

    @property
    def for_judge(self) -> bool:
        return self.model_id != self.task.attempt.model


@dataclass
class Rounds:
    tasks: list[Task]
    routes: dict[str, Route]  # by model id: every model the tasks ask
    recorder: Recorder
    policy: RetryPolicy  # attempts: how often one request is sent in batches at most
    fallback_live: bool = False
    answers: Answers = field(default_factory=Answers)
    finished: dict[int, Attempt] = field(default_factory=dict)  # by task index

    def drive(self, files: RequestFiles) -> list[Request]:
        """One round over the unfinished attempts; returns the requests to make live."""
        live: list[Request] = []
        ended: dict[int, Task] = {}
        for index, task in enumerate(self.tasks):
            if index in self.finished:
                continue
            resumed = self.recorder.resumed(task.attempt)
            if resumed is not None:
                self.finished[index] = resumed
            elif self._drive(task, files, live):
                ended[index] = task
                if len(ended) == WRITE_EVERY:
                    self._finish(ended)
        self._finish(ended)
        return live

    def _finish(self, ended: dict[int, Task]) -> None:
        """Write the attempts that ended together (their instance lines, their report lines)."""
        if ended:
            written = self.recorder.finish_all(list(ended.values()))
            for attempt in written:
                attempt.forget_exchange()
            self.finished.update(zip(ended, written, strict=True))
            ended.clear()

    async def go_live(self, pool: ModelPool, live: list[Request], concurrency: int) -> None:
        """Make the failed requests live, with the live retries; each answer (or its failure, final)
        becomes the request's answer for the next round."""
        limit = asyncio.Semaphore(concurrency)

        async def one(item: Request) -> None:
            attempt = item.task.attempt
            async with limit:
                try:
                    _route, model = pool.get(item.model_id)
                    for_judge = item.model_id != attempt.model
                    answered = await request(
                        model, item.messages, item.model_args, attempt, self.policy, for_judge
                    )
                except LvegitError as exc:
                    self.answers.fail(item.request_id, Failure(f"live fallback: {exc}"))
                    return
            run_info = {**attempt.backend_details, "batch_fallback": "live"}
            self.answers.answer_live(
                item.request_id, replace(answered, model=attempt.resolved_model or "", run_info=run_info)
            )

        await asyncio.gather(*(one(item) for item in live))

    @property
    def waiting(self) -> int:
        return len(self.tasks) - len(self.finished)

    def attempts(self) -> list[Attempt]:
        """The finished attempts, in the order of the plan."""
        return [self.finished[index] for index in sorted(self.finished)]

    def unmatched(self) -> int:
        """Answers read that no attempt of this run asked for (another selection's, another run's)."""
        return len(self.answers.ids) - len(self.answers.asked)

    def _drive(self, task: Task, files: RequestFiles, live: list[Request]) -> bool:
        """Whether the attempt ended (complete or error); if not, its next request is on its way."""
        attempt = task.attempt
        if attempt.status == "new":
            self.recorder.start(attempt, write=False)  # the report's batch lines say what is under way
        with failing_alone(attempt):
            route = self.routes[attempt.model]
            attempt.backend = route.backend
            params, model_args = task.lve.request_args(attempt.args)
            # An environment's state lives in this process only: each round makes the attempt's calls
            # again, on a new state, from the answers so far (its tools are deterministic).
            environment = self.recorder.environment(task, params) if task.lve.environment else None
            steps = conversation_steps(task.lve, params, environment.answer if environment else None)
            asked = next(steps)
            while True:
                ids = [custom_id(attempt.id, step.key) for step in asked]
                answers = [self.answers.get(request_id) for request_id in ids]
                missing = [
                    (step, request_id, answer)
                    for step, request_id, answer in zip(asked, ids, answers, strict=True)
                    if not isinstance(answer, Completion)
                ]
                for step, request_id, answer in missing:
                    asking = Request(task, request_id, step.messages, model_args, attempt.model)
                    if not self._send(asking, route, answer, files, live):
                        raise LvegitError(self._why(request_id, answer))
                if missing:
                    if environment is not None:
                        environment.record()  # the session ends: the next round starts a new one
                    return False
                completions = [answer for answer in answers if isinstance(answer, Completion)]
                attempt.resolved_model = completions[-1].model or route.model
                attempt.backend_details = completions[-1].run_info
                try:
                    asked = steps.send(completions)
                except StopIteration as finished:
                    pairs: list[Pair] = finished.value
                    break
            if environment is not None:
                attempt.environment = environment.record()
            judgement = None
            if needs_of(task.lve.checker_name).judge_argument is not None:  # its judge answers next rounds
                judgement = self._judgement(task, pairs, files, live)
                if judgement is None:
                    return False
            self.recorder.judge(task, pairs, judgement)
            attempt.status = "complete"
        return True

    def _judgement(
        self, task: Task, pairs: list[Pair], files: RequestFiles, live: list[Request]
    ) -> Judgement | None:
        """An LLM judge's judgement of the finished conversation once its answers are in; until then
        (None) its requests are on their way, to the judge's route, as the model's were."""
        checker = self.recorder.checker(task)
        assert isinstance(checker, ModelJudge)
        params, _model_args = task.lve.split_args(task.attempt.args)
        messages = checker.judge_messages([conversation for _prompt, conversation in pairs], params)
        ids = [custom_id(task.attempt.id, f"judge.{sample}") for sample in range(checker.samples)]
        answers = [self.answers.get(request_id) for request_id in ids]
        route = self.routes[checker.judge]
        waiting = False
        for request_id, answer in zip(ids, answers, strict=True):
            if isinstance(answer, Completion):
                continue
            waiting = True
            asking = Request(task, request_id, messages, checker.request_args, checker.judge)
            if not self._send(asking, route, answer, files, live):
                raise LvegitError(f"its judge {checker.judge}: {self._why(request_id, answer)}")
        if waiting:
            return None
        return checker.judgement([answer.text for answer in answers if isinstance(answer, Completion)])

    def _send(
        self,
        asking: Request,
        route: Route,
        failure: Failure | None,
        files: RequestFiles,
        live: list[Request],
    ) -> bool:
        """Whether the request goes out again (in this round's batch to `route`, or live); False: it failed
        for good, or there is nowhere to send it."""
        if failure is not None and self.fallback_live and failure.live:
            live.append(asking)
            return True
        if failure is not None and not (
            failure.batch and self.answers.failures[asking.request_id] < self.policy.attempts
        ):
            return False
        file = files(route)
        if file is None:
            return False
        attempt = asking.task.attempt
        if file.add(asking.request_id, chat_body(route.model, asking.messages, asking.model_args)):
            if asking.for_judge:
                attempt.judge_requests += 1
            else:
                attempt.requests += 1
            attempt.retries += failure is not None
        return True

    def _why(self, request_id: str, failure: Failure | None) -> str:
        if failure is None:
            return f"no answer to its request {request_id} in the batch output"
        tries = self.answers.failures[request_id]
        if failure.batch and tries >= self.policy.attempts:
            return f"gave up after {count(tries, 'batch', 'batches')}: {failure.message}"
        return failure.message
