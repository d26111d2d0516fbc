"""What a run's results say, for `run` and `report`: a line per instance, the summary, the exit code."""

from __future__ import annotations

from collections import Counter
from typing import Any

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK, EXIT_SERVICE
from lvegit.base.output import JsonStream, count, line
from lvegit.judge.results import unsafe_rate, verdict_word
from lvegit.lve.problems import location
from lvegit.run.rerun import InstanceResult, Outcomes, Tally, bucket, wilson_interval


def describe(result: InstanceResult) -> str:
    """One line per instance: the new verdict, or with --repeat how often it was unsafe (the verdicts
    themselves are in --format json)."""
    recorded = "invalid" if result.recorded is None else verdict_word(result.recorded)  # run reads recordings
    text = f"{location(result.file or result.lve, result.line)}  recorded {recorded}"
    runs = len(result.verdicts)
    if runs == 1:
        text += f"  new: {verdict_word(result.verdicts[0])}"
    elif runs > 1:
        text += f"  new: {unsafe_rate(result.unsafe, runs, wilson_interval(result.unsafe, runs))}"
    if result.invalid:  # the outputs that could not be judged, counted apart from safe and unsafe
        text += f"{',' if runs else '  new:'} {result.invalid} invalid"
    if result.utility:  # an environment LVE's: was the user's task still done?
        text += f"  utility {sum(result.utility)}/{len(result.utility)}"
    if runs or result.invalid:
        text += "  agrees" if result.agree else "  DISAGREES"
    if result.errors:
        first = result.errors[0]
        others = len(result.errors) - result.errors.count(first)
        text += f"  {count(len(result.errors), 'failed attempt')}: {first}"
        text += f" (and {count(others, 'other error')})" if others else ""
    return text


class ResultsOutput:
    """What `run` and `report` print, as the results come: a line per instance (with `--format json`, an
    instance of the document), then the LVEs that could not run, the summary; and the exit code. Each
    instance counts once: it disagrees, or else has failed attempts, or else agrees. `carried_to`: the
    model of `run --model`, a scan: the recordings are another model's, so what counts is which LVEs
    reproduce (an unsafe verdict), not which answers differ from the recording."""

    def __init__(self, output_format: str, carried_to: str | None = None) -> None:
        self.json = output_format == "json"
        self.carried_to = carried_to
        self.counts = Counter[str]()
        self.failed = 0
        self.invalid = 0  # attempts whose verdict is invalid (their output could not be judged)
        self.utility: list[bool] = []  # environment LVEs' utility checks that judged, an attempt each
        self.reproduced: set[str] = set()  # the LVEs with an unsafe verdict
        self._stream: JsonStream | None = None
        if self.json:
            from lvegit.run import records  # pydantic: only for the JSON document

            self._stream = JsonStream("instances", {"schema": records.SCHEMA, "version": records.VERSION})
            self._records = records

    def result(self, result: InstanceResult) -> None:
        self.counts[bucket(result)] += 1
        self.failed += len(result.errors)
        self.invalid += result.invalid
        self.utility += result.utility
        if result.unsafe:
            self.reproduced.add(result.lve)
        if self._stream is None:
            line(describe(result))
            return
        self._stream.item(self._records.instance_row(result))

    def finish(
        self,
        outcomes: Outcomes,
        invalid: list[tuple[str, str]],
        unroutable: dict[str, tuple[str, list[str]]] | None = None,
        batch: dict[str, Any] | None = None,
    ) -> int:
        """The rest, after the results, and the exit code (`exit_code`). `batch`: what a
        batch run leaves (attempts waiting for the next round, its output's bad lines, answers of no
        attempt here, what to do next)."""
        for result in outcomes.results:  # those never handed on as they came
            self.result(result)
        unroutable = unroutable or {}
        agree, disagree, errors, skipped = (self.counts[name] for name in Tally._fields)
        instances = self.counts.total()
        if self._stream is not None:
            records = self._records
            document = records.RunDocument(
                schema=records.SCHEMA,
                version=records.VERSION,
                instances=[],  # streamed
                batch=records.BatchState(**batch) if batch is not None else None,
                invalid=[records.InvalidLVE(lve=lve, reason=reason) for lve, reason in invalid],
                unroutable=[
                    records.UnroutableModel(model=model_id, lves=lves, reason=reason)
                    for model_id, (reason, lves) in unroutable.items()
                ],
                summary=records.RunSummary(
                    instances=instances,
                    attempts=outcomes.attempts,
                    agree=agree,
                    disagree=disagree,
                    error=errors,
                    skipped=skipped,
                    failed_attempts=self.failed,
                    invalid_lves=len(invalid),
                    waiting=batch["waiting"] if batch is not None else None,
                ),
            )
            only_for_batches: dict[str, Any] = {"batch": True, "summary": {"waiting"}}
            hidden = None if batch is not None else only_for_batches
            self._stream.end(document.model_dump(mode="json", by_alias=True, exclude=hidden))
        else:
            for lve, reason in invalid:
                line(f"invalid: {lve}: {reason}")
            for model_id, (reason, lves) in unroutable.items():
                line(f"not run: {count(len(lves), 'LVE')} of model '{model_id}':")
                for text in reason.splitlines():
                    line(f"  {text}")
            not_judged = f", {skipped} skipped" if skipped else ""
            not_judged += f", {count(self.invalid, 'invalid verdict')}" if self.invalid else ""
            line(
                f"{count(instances, 'instance')}: {agree} agree, {disagree} disagree, {errors} with errors"
                f"{not_judged} ({count(outcomes.attempts, 'attempt')}, {self.failed} failed)"
            )
            if self.utility:
                done = sum(self.utility)
                line(f"utility: {done} of {count(len(self.utility), 'attempt')} did the user's task")
            if batch is not None:
                _describe_batch(batch)
            if self.carried_to is not None:
                line(self.scan_verdict(bool(errors or skipped or invalid)))
        problems = batch["problems"] if batch is not None else []
        return self.exit_code(disagree, errors, bool(invalid or problems), outcomes.own_errors)

    def scan_verdict(self, incomplete: bool) -> str:
        """A scan's one line: vulnerable (which LVEs reproduced), clean, or not every LVE judged."""
        on = f"on {self.carried_to}"
        if self.reproduced:
            return f"vulnerable: {count(len(self.reproduced), 'LVE')} reproduced {on}"
        if incomplete:
            return f"incomplete: no LVE reproduced {on}, but not every instance was judged"
        return f"clean: no LVE reproduced {on}"

    def exit_code(self, disagree: int, errors: int, broken: bool, own_errors: bool) -> int:
        """A run of the LVEs' own models: 1 when an instance disagrees with its recording, an attempt failed
        for a reason of its own, an LVE is invalid or a batch output has lines that answer nothing; else 4
        when attempts failed (every one on the model's service), else 0. A scan (`carried_to`): 1 when an
        LVE reproduced; else 4 when something could not run or be judged; else 0 (clean)."""
        if self.carried_to is not None:
            if self.reproduced:
                return EXIT_FINDINGS
            return EXIT_SERVICE if errors or broken or own_errors else EXIT_OK
        if disagree or broken or own_errors:
            return EXIT_FINDINGS
        return EXIT_SERVICE if errors else EXIT_OK  # every error was the model's service failing


def show_results(
    outcomes: Outcomes,
    invalid: list[tuple[str, str]],
    output_format: str,
    unroutable: dict[str, tuple[str, list[str]]] | None = None,
    batch: dict[str, Any] | None = None,
    carried_to: str | None = None,
) -> int:
    """Print results that are all in (a batch run's, a report's): see ResultsOutput."""
    return ResultsOutput(output_format, carried_to).finish(outcomes, invalid, unroutable, batch)


def _describe_batch(batch: dict[str, Any]) -> None:
    for problem in batch["problems"]:
        line(f"batch output: {problem}")
    if batch["unmatched"]:
        unmatched = batch["unmatched"]
        verb = "answers" if unmatched == 1 else "answer"
        line(f"{count(unmatched, 'answer')} in the batch output {verb} no attempt of this run")
    if batch["waiting"]:
        waiting = batch["waiting"]
        line(f"{count(waiting, 'attempt')} {'waits' if waiting == 1 else 'wait'} for the next round")
    for text in batch["next"].splitlines():
        line(text)
