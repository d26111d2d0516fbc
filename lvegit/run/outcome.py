"""What a run's results say, for `run` and `report`: a line per instance, the summary, the exit code."""

from __future__ import annotations

from typing import Any

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK, EXIT_SERVICE
from lvegit.base.output import count, line, print_json_streaming
from lvegit.judge.results import unsafe_rate, verdict_word
from lvegit.lve.problems import location
from lvegit.run.rerun import InstanceResult, Outcomes, tally, wilson_interval


def describe(result: InstanceResult) -> str:
    """One line per instance: the new verdict, or with --repeat how often it was unsafe (the verdicts
    themselves are in --format json)."""
    text = f"{location(result.file or result.lve, result.line)}  recorded {verdict_word(result.recorded)}"
    runs = len(result.verdicts)
    if runs == 1:
        text += f"  new: {verdict_word(result.verdicts[0])}"
    elif runs > 1:
        text += f"  new: {unsafe_rate(result.unsafe, runs, wilson_interval(result.unsafe, runs))}"
    if runs:
        text += "  agrees" if result.agree else "  DISAGREES"
    if result.errors:
        first = result.errors[0]
        others = len(result.errors) - result.errors.count(first)
        text += f"  {count(len(result.errors), 'failed attempt')}: {first}"
        text += f" (and {count(others, 'other error')})" if others else ""
    return text


def show_results(
    outcomes: Outcomes,
    invalid: list[tuple[str, str]],
    output_format: str,
    unroutable: dict[str, tuple[str, list[str]]] | None = None,
    batch: dict[str, Any] | None = None,
) -> int:
    """Per instance: recorded and new verdicts; exit 1 when one differs or an attempt failed, or a batch
    output has lines that answer nothing. Each instance counts once: it disagrees, or else has failed
    attempts, or else agrees. `batch`: what a batch run leaves (attempts waiting for the next round, its
    output's bad lines, answers of no attempt here, what to do next)."""
    results = outcomes.results
    agree, disagree, errors, skipped = tally(results)
    failed = sum(len(r.errors) for r in results)
    unroutable = unroutable or {}
    if output_format == "json":
        from lvegit.run import records  # pydantic: only for the JSON document

        document = records.RunDocument(
            schema=records.SCHEMA,
            version=records.VERSION,
            instances=[],  # streamed below
            batch=records.BatchState(**batch) if batch is not None else None,
            invalid=[records.InvalidLVE(lve=lve, reason=reason) for lve, reason in invalid],
            unroutable=[
                records.UnroutableModel(model=model_id, lves=lves, reason=reason)
                for model_id, (reason, lves) in unroutable.items()
            ],
            summary=records.RunSummary(
                instances=len(results),
                attempts=outcomes.attempts,
                agree=agree,
                disagree=disagree,
                error=errors,
                skipped=skipped,
                failed_attempts=failed,
                invalid_lves=len(invalid),
                waiting=batch["waiting"] if batch is not None else None,
            ),
        )
        only_for_batches: dict[str, Any] = {"batch": True, "summary": {"waiting"}}
        hidden = None if batch is not None else only_for_batches
        data = document.model_dump(mode="json", by_alias=True, exclude=hidden)
        print_json_streaming(data, "instances", map(records.instance_row, results))
    else:
        for result in results:
            line(describe(result))
        for lve, reason in invalid:
            line(f"invalid: {lve}: {reason}")
        for model_id, (reason, lves) in unroutable.items():
            line(f"not run: {count(len(lves), 'LVE')} of model '{model_id}':")
            for text in reason.splitlines():
                line(f"  {text}")
        not_judged = f", {skipped} skipped" if skipped else ""
        line(
            f"{count(len(results), 'instance')}: {agree} agree, {disagree} disagree, {errors} with errors"
            f"{not_judged} ({count(outcomes.attempts, 'attempt')}, {failed} failed)"
        )
        if batch is not None:
            _describe_batch(batch)
    problems = batch["problems"] if batch is not None else []
    if disagree or invalid or problems or outcomes.own_errors:
        return EXIT_FINDINGS
    return EXIT_SERVICE if errors else EXIT_OK  # every error was the model's service failing


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
