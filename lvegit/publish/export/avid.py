"""AVID reports, built with the avidtools package's models: one report per LVE that has unsafe attempts. It
names the model as the affected artifact (its developer from the model id); the problem is an LLM
evaluation with the LVE's description; its metrics are the share of unsafe attempts and, where the model
was run live, the reproduction rate with its 95% interval; its reference is the LVE's path. Its impact is
the LVE's AVID tags (`{"name": "avid", "value": "S0403"}`): their SEP view entries, the risk domains those
belong to (Security, Ethics, Performance) and the lifecycle stage an LVE is found in (L05: Evaluation)."""

from __future__ import annotations

import datetime
import json
import warnings
from typing import Any

from lvegit.base.escape import mask
from lvegit.lve.repo import Repository
from lvegit.publish.export import by_lve, lve_at
from lvegit.run.attempt import Attempt
from lvegit.run.rerun import wilson_interval


def _rate(attempts: list[Attempt]) -> dict[str, Any]:
    judged = [a for a in attempts if a.status == "complete" and a.verdict is not None]
    unsafe = sum(not a.verdict for a in judged)
    low, high = wilson_interval(unsafe, len(judged))
    share = unsafe / len(judged) if judged else None
    return {
        "unsafe": unsafe,
        "judged": len(judged),
        "share": share,
        "interval_95": [round(low, 4), round(high, 4)],
    }


# The risk domain of a SEP view entry, by its first letter, as AVID's taxonomy groups them.
RISK_DOMAINS = {"S": "Security", "E": "Ethics", "P": "Performance"}
TAXONOMY_VERSION = "0.2"


def _impact(tags: list[dict[str, Any]]) -> dict[str, Any]:
    """AVID's impact fields for an LVE's avid tags, as the Report's keyword (none without such a tag; one
    the taxonomy does not know was refused when the LVE was validated, and is passed over here)."""
    from avidtools.datamodels.components import AvidTaxonomy, Impact
    from avidtools.datamodels.enums import LifecycleEnum, SepEnum

    entries = {entry.value.split(":")[0]: entry for entry in SepEnum}
    values = [tag.get("value") for tag in tags if tag.get("name") == "avid"]
    found = list(dict.fromkeys(entries[value] for value in values if value in entries))
    if not found:
        return {}
    view = AvidTaxonomy(
        vuln_id=None,  # a report is no vulnerability record of AVID's
        risk_domain=list(dict.fromkeys(RISK_DOMAINS[entry.value[0]] for entry in found)),
        sep_view=found,
        lifecycle_view=[LifecycleEnum("L05: Evaluation")],
        taxonomy_version=TAXONOMY_VERSION,
    )
    return {"impact": Impact(avid=view)}


def avid_reports(attempts: list[Attempt], repo: Repository, source: str | None) -> list[dict[str, Any]]:
    """The reports as JSON objects (what avidtools' Report writes), in LVE order. `source`: where the LVE
    repository is published (the .lverepo URL), for the references."""
    with warnings.catch_warnings():  # avidtools' models are written for pydantic 1: v2 warns as they load
        warnings.simplefilter("ignore")
        from avidtools.datamodels.components import (
            Affects,
            Artifact,
            Detection,
            LangValue,
            Metric,
            Problemtype,
            Reference,
        )
        from avidtools.datamodels.enums import ArtifactTypeEnum, ClassEnum, MethodEnum, TypeEnum
        from avidtools.datamodels.report import Report, ReportMetadata

    reports = []
    for lve_path, group in by_lve(attempts).items():
        recorded = _rate(group)
        if not recorded["unsafe"]:
            continue
        lve = lve_at(repo, lve_path)
        model = group[0].model or (lve.model if lve is not None else "")
        description = lve.description if lve is not None else lve_path
        checker = lve.checker_name if lve is not None else "checker"
        live = [a for a in group if a.backend != "replay"]
        metrics = [
            Metric(
                name="unsafe share",
                detection_method=Detection(type=MethodEnum.thres, name=f"lvegit {checker}"),
                results=recorded,
            )
        ]
        if live:
            metrics.append(
                Metric(
                    name="live reproduction rate",
                    detection_method=Detection(type=MethodEnum.thres, name=f"lvegit {checker}"),
                    results=_rate(live),
                )
            )
        finished = [a.finished_at for a in group if a.finished_at is not None]
        # When the newest attempt finished; a replay report has no times, and the field is left out.
        newest = datetime.datetime.fromtimestamp(max(finished), datetime.UTC).date() if finished else None
        dated = {"reported_date": newest} if newest else {}
        url = f"{source.rstrip('/').removesuffix('.git')}/tree/main/{lve_path}" if source else lve_path
        report = Report(
            data_version="0.2",
            metadata=ReportMetadata(report_id=f"lvegit:{lve_path}"),
            affects=Affects(
                developer=[model.split("/")[0]] if "/" in model else [],
                deployer=[],
                artifacts=[Artifact(type=ArtifactTypeEnum.model, name=model)],
            ),
            problemtype=Problemtype(
                classof=ClassEnum.llm,
                type=TypeEnum.detection,
                description=LangValue(lang="eng", value=mask(description)),
            ),
            metrics=metrics,
            references=[Reference(type="source", label=lve_path, url=url)],
            description=LangValue(lang="eng", value=mask(f"{lve_path}: {description}")),
            **dated,
            **_impact(lve.tags if lve is not None else []),
        )
        written = json.loads(report.model_dump_json(exclude_none=True))  # unset fields left out
        if "impact" in written:  # but this null: avidtools' model reads it as required under pydantic 2
            written["impact"]["avid"]["vuln_id"] = None
        reports.append(written)
    return reports
