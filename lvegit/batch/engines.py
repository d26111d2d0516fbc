"""`lvegit run --batch`, `--batch-out` and `--batch-in`: a run's requests handed to batch engines.

With --batch, rounds go through the Batch API of each model's OpenAI-compatible endpoint: a round's
input files are uploaded, one batch per route (split at the API's limits), each batch's id goes into the
report at once, and lvegit waits for them and reads their output and error files. Requests that failed
go out again in the next round's batch, or live with --batch-fallback live. A resumed run waits for the
batches its report names instead of creating them again, and adopts a batch it created but had no time
to write down (found by the run id in the batch's metadata).

With --batch-out and --batch-in, one round per invocation: the answers come from output files written by
an offline engine (`vllm run-batch`) or downloaded by hand, and the next round's requests go to a file.

Downloaded outputs hold unredacted responses: they live in a temporary folder that is removed at the end.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.base.loop import run_loop
from lvegit.base.output import count
from lvegit.batch.api import BatchAPI, Polling
from lvegit.batch.files import MAX_BYTES, MAX_REQUESTS, Failure, RequestFile
from lvegit.batch.rounds import Rounds
from lvegit.models.openai_backend import OpenAIModel
from lvegit.models.routing import ModelPool, Route
from lvegit.run.attempt import Report

BATCH_BACKENDS = ("openai", "azure")  # the routes whose endpoint has a Batch API
FILE_BACKENDS = ("openai", "azure", "transformers")  # a model an offline engine can serve by its name


@dataclass(frozen=True)
class BatchOptions:
    api: bool = False  # --batch
    inputs: tuple[Path, ...] = ()  # --batch-in
    output: Path | None = None  # --batch-out
    fallback_live: bool = False
    polling: Polling = field(default_factory=Polling)

    @property
    def mode(self) -> str | None:
        """What the report's settings record: a run resumes only in the same mode."""
        if self.api:
            return "api"
        return "files" if self.inputs or self.output else None


def check_routes(routes: dict[str, Route], options: BatchOptions) -> None:
    """Refuse a selection the chosen engine cannot run, before anything is sent or written."""
    allowed = BATCH_BACKENDS if options.api else FILE_BACKENDS
    for model_id, route in sorted(routes.items()):
        if route.backend not in allowed:
            engine = "the Batch API" if options.api else "an offline batch engine"
            raise UsageError(
                f"model '{model_id}' is routed to the {route.backend} backend, which {engine} cannot serve; "
                f"batch runs take models served by {' or '.join(allowed)} routes"
            )
    names = sorted({route.model for route in routes.values()})
    if options.output is not None and len(names) > 1:
        raise UsageError(
            f"--batch-out: the selection asks {len(names)} models ({', '.join(names)}); an offline engine "
            "serves one at a time: narrow the selection or pass --model"
        )


async def run_files(
    rounds: Rounds, pool: ModelPool, options: BatchOptions, concurrency: int, command: list[str]
) -> str:
    """One round over the --batch-in answers; the next requests go to --batch-out. Returns what to do
    next; `command`: this command line, to say how to continue."""
    for path in options.inputs:
        rounds.answers.read(path, {"batch_output": path.name})
    output = RequestFile(options.output) if options.output is not None else None
    try:
        live = rounds.drive(lambda _route: output)
        while live:
            await rounds.go_live(pool, live, concurrency)
            live = rounds.drive(lambda _route: output)
    finally:
        if output is not None:
            output.close()
    if output is None:
        return ""
    if not output.count:
        return "every attempt has ended: no requests are left to send"
    quoted = shlex.quote(str(output.path))
    [model] = {route.model for route in rounds.routes.values()}  # check_routes: one, for --batch-out
    return (
        f"wrote {count(output.count, 'request')} to {output.path}; run them through the engine,\n"
        f"for example:  vllm run-batch -i {quoted} -o OUTPUT.jsonl --model {shlex.quote(model)}\n"
        f"then continue with:\n  {next_round(command, output.path)}"
    )


def next_round(command: list[str], output: Path) -> str:
    """The command line of the next round: the engine's output added as a --batch-in, the next requests
    written beside this round's (round-1.jsonl, round-2.jsonl; else a suffix)."""
    words, skip = [], False
    for word in command:
        if skip or word.startswith("--batch-out="):
            skip = False
            continue
        if word == "--batch-out":
            skip = True
            continue
        words.append(word)
    stem = output.stem
    digits = len(stem) - len(stem.rstrip("0123456789"))
    following = f"{stem[:-digits]}{int(stem[-digits:]) + 1}" if digits else f"{stem}-next"
    upcoming = output.with_name(f"{following}{output.suffix}")
    return shlex.join(["lvegit", *words, "--batch-in", "OUTPUT.jsonl", "--batch-out", str(upcoming)])


def run_batches(
    rounds: Rounds,
    pool: ModelPool,
    options: BatchOptions,
    report: Report | None,
    concurrency: int,
    say: Callable[[str], None],
    command: list[str],
) -> str:
    """Run the rounds in the chosen engine; returns what is left to do (for the user, or ""). `command`:
    this command line, to say how to continue."""

    async def go() -> str:
        try:
            if not options.api:
                return await run_files(rounds, pool, options, concurrency, command)
            assert report is not None  # the command asks for it
            await ApiRounds(rounds, pool, report, options, concurrency, say).run()
            return ""
        finally:
            rounds.answers.close()
            rounds.recorder.close()
            await pool.close()

    return run_loop(go())


class ApiRounds:
    """Rounds through the Batch API of each route's endpoint."""

    def __init__(
        self,
        rounds: Rounds,
        pool: ModelPool,
        report: Report,
        options: BatchOptions,
        concurrency: int,
        say: Callable[[str], None],
    ) -> None:
        self.rounds = rounds
        self.pool = pool
        self.report = report
        self.options = options
        self.concurrency = concurrency
        self.say = say
        self.apis: dict[Route, BatchAPI] = {}  # one per route, on its live model's client
        self.model_ids: dict[Route, str] = {}  # a model id routed there, for the report's batch lines
        for model_id, route in rounds.routes.items():
            if route not in self.apis:
                model = pool.get(model_id)[1]
                assert isinstance(model, OpenAIModel)  # check_routes let only OpenAI-compatible routes by
                azure = route.backend == "azure"
                self.apis[route] = BatchAPI(model.client, azure, rounds.policy, options.polling, say)
                self.model_ids[route] = model_id

    async def run(self) -> None:
        with tempfile.TemporaryDirectory(prefix="lvegit-batch-") as folder:
            downloads = Path(folder)
            number = 0
            for record in list(self.report.batches.values()):  # the batches of the run being resumed
                number = max(number, record["round"])
                if record["status"] not in ("failed", "cancelled"):  # their requests go out again
                    await self._collect(downloads, record, None)
            while await self._round(number + 1, downloads):
                number += 1

    async def _round(self, number: int, downloads: Path) -> bool:
        """Drive the attempts, send what they ask for, wait for the answers; False when nothing was left
        to send."""
        files: dict[Route, RequestFile] = {}

        def file_of(route: Route) -> RequestFile:
            if route not in files:
                path = downloads / f"round-{number}-{len(files) + 1}.jsonl"
                files[route] = RequestFile(path, self.apis[route].endpoint, MAX_REQUESTS, MAX_BYTES)
            return files[route]

        live = self.rounds.drive(file_of)
        for file in files.values():
            file.close()
        submitted = [
            await self._submit(number, route, path, ids)
            for route, file in files.items()
            for path, ids in zip(file.paths, file.ids, strict=True)
        ]
        if live:
            self.say(f"round {number}: {count(len(live), 'failed request')} made live")
            await self.rounds.go_live(self.pool, live, self.concurrency)
        for record, ids in submitted:
            await self._collect(downloads, record, ids)
        return bool(submitted or live)

    async def _submit(
        self, number: int, route: Route, path: Path, ids: set[str]
    ) -> tuple[dict[str, Any], set[str]]:
        api, report = self.apis[route], self.report
        key = f"{number}/{path.name}"
        batch = None
        if report.resumed and report.run_id is not None and report.started is not None:
            batch = await api.find(report.run_id, key, report.started - 60)  # a minute for clock skew
        adopted = batch is not None
        if batch is None:
            batch = await api.submit(path, report.run_id or "", key)
        record = {
            "key": key,
            "id": batch.id,
            "round": number,
            "model": self.model_ids[route],
            "requests": len(ids),
            "status": batch.status,
        }
        report.write_batch(record)
        what = "found again" if adopted else "created"
        self.say(f"round {number}: batch {batch.id} {what}, {count(len(ids), 'request')} to {route.model}")
        return record, ids

    async def _collect(self, downloads: Path, record: dict[str, Any], ids: set[str] | None) -> None:
        """Wait for a batch, write the state it ended in, read its output and error files; the requests it
        sent but did not answer fail with the batch's reason (`ids`: unknown for a resumed run's batches,
        whose unanswered requests simply go out again)."""
        model_id = str(record.get("model"))
        if model_id not in self.rounds.routes:  # its model was routable when the batch was created
            raise UsageError(
                f"--resume: batch {record['id']} is for model '{model_id}', which cannot run here"
            )
        api = self.apis[self.rounds.routes[model_id]]
        batch = await api.wait(record["id"])
        if batch.status != record["status"]:
            self.report.write_batch({**record, "status": batch.status})
        run_info = {"batch": batch.id}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                path = await api.download(file_id, downloads / f"{file_id}.jsonl")
                self.rounds.answers.read(path, run_info)
        if ids is None:
            return
        failure = _unanswered(batch)
        for request_id in ids - self.rounds.answers.ids:
            self.rounds.answers.fail(request_id, failure)


def _unanswered(batch: Any) -> Failure:
    """Why a batch's request has no answer, by the state the batch ended in."""
    if batch.status == "expired":
        return Failure.transient(f"batch {batch.id} expired before answering it")
    if batch.status == "cancelled":
        return Failure(f"batch {batch.id} was cancelled")
    if batch.status == "failed":
        errors = getattr(batch.errors, "data", None) or []
        reasons = "; ".join(f"{error.code}: {error.message}" for error in errors[:3]) or "no reason given"
        return Failure(f"batch {batch.id} failed ({reasons})", live=True)
    return Failure.transient(f"batch {batch.id} ended without answering it")
