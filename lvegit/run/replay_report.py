"""`lvegit replay --report FILE`: replay results as attempt records, the format `lvegit run --report` writes,
so that `lvegit export`, `lvegit report` and `lvegit site` read both alike. An instance that replays to
its recorded verdict is a complete attempt whose verdict is the replayed one; one replay could not judge
is skipped (with the reason) or an error."""

from __future__ import annotations

from pathlib import Path

from lvegit.base.errors import UsageError
from lvegit.judge.conversation import recorded_conversations
from lvegit.judge.results import ReplayResult
from lvegit.lve.instances import Instance
from lvegit.lve.repo import Repository
from lvegit.lve.spec import LVE, load_lve
from lvegit.run.attempt import Attempt, Report, attempt_id, load_report, started

SETTINGS = {"replay": True}  # the header of a replay report


def replay_attempts(repo: Repository, results: list[ReplayResult]) -> list[Attempt]:
    """An attempt for each replayed instance, with the LVE's model, the instance's args and response."""
    instances: dict[tuple[str, int | None], Instance] = {}
    lves: dict[str, LVE] = {}
    for lve_rel in dict.fromkeys(result.lve for result in results):
        lve, _problems, _text = load_lve(repo, repo.root / lve_rel)
        if lve is None:
            continue
        lves[lve_rel] = lve
        for recorded in lve.recorded():
            instances.update({(i.file, i.line): i for i in recorded.instances})
    attempts = []
    for result in results:
        instance = instances.get((result.file, result.line))
        lve = lves.get(result.lve)
        conversation = None
        if lve is not None and instance is not None:
            params, _model_args = lve.split_args(instance.args)
            conversation = recorded_conversations(lve, params, instance.response)
        status = {"reproduced": "complete", "mismatch": "complete"}.get(result.status, result.status)
        attempts.append(
            Attempt(
                id=attempt_id(result.lve, "replay", result.file, result.line),
                lve=result.lve,
                model=lve.model if lve is not None else "",
                args=instance.args if instance is not None else {},
                source_file=result.file,
                source_line=result.line,
                recorded=result.recorded,
                status=status,  # type: ignore[arg-type]  # skipped and error are statuses too
                backend="replay",
                response=instance.response if instance is not None else None,
                conversation=conversation or [],
                verdict=result.replayed,
                error=result.reason if result.status in ("skipped", "error") else None,
            )
        )
    return attempts


def check_replay_report(path: Path) -> None:
    """Before replaying: FILE may be new or an earlier replay report (a replay is cheap to repeat, so there
    is nothing to resume and it is replaced), never another file."""
    if started(path) and load_report(path).settings != SETTINGS:  # a UsageError too when no report at all
        raise UsageError(f"{path} is a run report, not a replay report: choose another --report file")


def write_replay_report(repo: Repository, results: list[ReplayResult], path: Path, command: str) -> None:
    path.unlink(missing_ok=True)
    report = Report(path, resume=False, settings=SETTINGS, command=command)
    for attempt in replay_attempts(repo, results):
        report.write(attempt)
