"""Which of a plan's models can run here: each model's route is resolved once, when a task first asks for
it, and the LVEs of a model that cannot run are reported, not run."""

from __future__ import annotations

import pytest

from lvegit.base.errors import UsageError
from lvegit.lve.repo import Repository
from lvegit.models.routing import ModelPool
from lvegit.run.rerun import iter_tasks
from lvegit.run.routes import Routing

from builders import RepoBuilder, instance


def plan(repo: RepoBuilder) -> tuple[Repository, list[tuple[str, str]]]:
    for name in ("cat/llama1", "cat/llama2"):
        repo.lve(
            name,
            {"model": "meta/llama-3"},
            folder="meta--llama-3",
            instances={"i.jsonl": [instance("3", True, a=1, b=2), instance("3", True, a=2, b=1)]},
        )
    return Repository.discover(repo.root), []


def test_the_tasks_of_a_model_with_no_route_do_not_run_and_their_lves_are_reported(repo: RepoBuilder) -> None:
    repo.lve("cat/ok", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    lves, invalid = plan(repo)
    routing = Routing(ModelPool(lves.root), files=True)  # batch files: routes resolved, nothing built

    runs = [
        (task.lve.rel, routing.runs(task))
        for task in iter_tasks(lves, lves.lve_dirs(), None, 1, False, invalid)
    ]

    llama = ["repository/cat/llama1/meta--llama-3", "repository/cat/llama2/meta--llama-3"]
    assert sorted(runs) == sorted(
        [("repository/cat/ok/openai--gpt-4o-mini", True), *[(lve, False) for lve in llama for _ in range(2)]]
    )
    assert list(routing.routes) == ["openai/gpt-4o-mini"]
    unroutable = routing.finish(invalid)
    assert list(unroutable) == ["meta/llama-3"]
    reason, lves_of_model = unroutable["meta/llama-3"]
    assert "no backend for model 'meta/llama-3'" in reason
    assert lves_of_model == llama  # each LVE once, however many of its tasks asked
    assert invalid == [(lve, "model 'meta/llama-3' cannot run here (see below)") for lve in llama]


def test_when_no_model_can_run_the_plan_is_a_usage_error_naming_them(repo: RepoBuilder) -> None:
    lves, invalid = plan(repo)
    routing = Routing(ModelPool(lves.root), files=True)
    assert not any(routing.runs(task) for task in iter_tasks(lves, lves.lve_dirs(), None, 1, False, invalid))
    with pytest.raises(UsageError, match="no backend for model 'meta/llama-3'"):
        routing.finish(invalid)
