"""Which models a plan's tasks ask can run here: each model id's route, resolved when a task first asks
for it, and the models that cannot run (no route, no key) with the LVEs that needed them."""

from __future__ import annotations

from dataclasses import dataclass, field

from lvegit.base.errors import UsageError
from lvegit.models.routing import ModelPool, Route, resolve
from lvegit.run.runner import Task


@dataclass
class Routing:
    """The route of every model the plan asks (by model id), resolved when a task first asks for it, and
    the models that cannot run here (no route, no key) with their LVEs: their tasks do not run. An offline
    engine's batch files (`files`) need no key, so nothing is built for them."""

    pool: ModelPool
    files: bool = False
    routes: dict[str, Route] = field(default_factory=dict)
    unroutable: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def runs(self, task: Task) -> bool:
        """Whether every model the task asks can run here."""
        runs = True
        for model_id in task.models:
            if model_id not in self.routes and model_id not in self.unroutable:
                try:
                    self.routes[model_id] = (
                        resolve(model_id, self.pool.routes) if self.files else self.pool.get(model_id)[0]
                    )
                except UsageError as exc:
                    self.unroutable[model_id] = (str(exc), [])
            if model_id in self.unroutable:
                lves = self.unroutable[model_id][1]
                if task.lve.rel not in lves[-1:]:  # tasks come LVE by LVE
                    lves.append(task.lve.rel)
                runs = False
        return runs

    def finish(self, invalid: list[tuple[str, str]]) -> dict[str, tuple[str, list[str]]]:
        """The models that could not run, each of their LVEs reported in `invalid`; when no model could
        run, a usage error naming them all."""
        if self.unroutable and not self.routes:
            raise UsageError("\n".join(reason for reason, _lves in self.unroutable.values()))
        for model_id, (_reason, lves) in self.unroutable.items():
            lves[:] = sorted(set(lves))
            invalid.extend((lve, f"model '{model_id}' cannot run here (see below)") for lve in lves)
        return self.unroutable
