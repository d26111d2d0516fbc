"""garak's report JSONL, so garak users can load an lvegit run with their tools: a `start_run setup` and an
`init` entry, an `attempt` entry for each judged attempt, an `eval` entry per LVE, and a `completion` entry.

The fields follow garak's own (garak.attempt.Attempt.as_dict, garak.command.start_run and end_run, and the
evaluators' eval entries): an attempt has status 2 (complete), its prompt as a conversation of turns, its
outputs, `detector_results` keyed by the LVE's checker (1.0 unsafe, 0.0 safe, as garak scores a hit) and
notes with the LVE's path. Each LVE is a probe `lvegit.<path>`. Ids are derived from the attempts' ids, so
the same reports give the same file."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from lvegit import __version__
from lvegit.lve.repo import Repository
from lvegit.publish.export import by_lve, lve_at
from lvegit.run.attempt import Attempt

ATTEMPT_COMPLETE = 2  # garak.attempt.ATTEMPT_COMPLETE
NAMESPACE = uuid.UUID("6f1d3c2a-52a4-4d5c-9b0e-6c7d8e9f0a1b")  # lvegit's, for garak uuids from attempt ids


def _message(text: Any) -> dict[str, Any]:
    return {
        "text": text if isinstance(text, str) or text is None else str(text),
        "lang": "*",
        "data_path": None,
        "data_type": None,
        "data_checksum": None,
        "notes": {},
    }


def _conversation(messages: list[dict[str, Any]]) -> dict[str, Any]:
    turns = [{"role": m.get("role", "user"), "content": _message(m.get("content"))} for m in messages]
    return {"turns": turns, "notes": {}}


def _iso(seconds: float | None) -> str | None:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat() if seconds is not None else None


def garak_report(attempts: list[Attempt], repo: Repository) -> list[dict[str, Any]]:
    run_id = str(uuid.uuid5(NAMESPACE, ",".join(a.id for a in attempts)))
    starts = [a.started_at for a in attempts if a.started_at is not None]
    ends = [a.finished_at for a in attempts if a.finished_at is not None]
    groups = by_lve(attempts)
    entries: list[dict[str, Any]] = [
        {
            "entry_type": "start_run setup",
            "_config.version": f"lvegit {__version__}",
            "transient.run_id": run_id,
            "plugins.probe_spec": ",".join(f"lvegit.{lve}" for lve in groups),
            "plugins.target_name": ",".join(sorted({a.model for a in attempts})),
        },
        {
            "entry_type": "init",
            "garak_version": f"lvegit {__version__}",
            "start_time": _iso(min(starts)) if starts else None,
            "run": run_id,
        },
    ]
    evals = []
    seq = 0
    for lve_path, group in groups.items():
        lve = lve_at(repo, lve_path)
        detector = f"lvegit.{lve.checker_name if lve is not None else 'checker'}"
        judged = [a for a in group if a.status == "complete" and a.verdict is not None]
        for attempt in judged:
            runs = attempt.conversation or [[{"role": "assistant", "content": attempt.response}]]
            conversations = [_conversation(run) for run in runs]
            first = runs[0]
            asked = next((i for i, m in enumerate(first) if m.get("role") == "assistant"), len(first))
            prompt = _conversation(first[:asked] or first[:1])  # what was sent before the model's turn
            outputs = [c["turns"][-1]["content"] for c in conversations if c["turns"]]
            entries.append(
                {
                    "entry_type": "attempt",
                    "uuid": str(uuid.uuid5(NAMESPACE, attempt.id)),
                    "previous_attempt_id": None,
                    "seq": seq,
                    "status": ATTEMPT_COMPLETE,
                    "probe_classname": f"lvegit.{lve_path}",
                    "probe_params": {},
                    "targets": [],
                    "prompt": prompt,
                    "outputs": outputs,
                    "detector_results": {detector: [0.0 if attempt.verdict else 1.0] * len(outputs)},
                    "notes": {
                        "lve": lve_path,
                        "source": f"{attempt.source_file}:{attempt.source_line}"
                        if attempt.source_file
                        else None,
                        "recorded_safe": attempt.recorded,
                        "args": attempt.args,
                        "backend": attempt.backend,
                    },
                    "goal": lve.description if lve is not None else lve_path,
                    "conversations": conversations,
                    "reverse_translation_outputs": [],
                    "intent": None,
                }
            )
            seq += 1
        unsafe = sum(not a.verdict for a in judged)
        evals.append(
            {
                "entry_type": "eval",
                "probe": f"lvegit.{lve_path}",
                "detector": detector,
                "passed": len(judged) - unsafe,
                "fails": unsafe,
                "nones": len(group) - len(judged),
                "total_evaluated": len(judged),
                "total_processed": len(group),
            }
        )
    entries += evals
    entries.append({"entry_type": "completion", "end_time": _iso(max(ends)) if ends else None, "run": run_id})
    return entries
