"""AgentDojo's banking and slack suites (every injection task, three user tasks each) imported by `lvegit import
agentdojo` and recorded against three loopback agents (agentdojo_agents: one follows injected instructions,
one ignores them, one follows them with what its calls returned), then run by AgentDojo itself (its
pipeline with its OpenAI client, against the same loopback agents): every tool result lvegit recorded is the
one AgentDojo's environment answered, and lvegit's verdict and utility are AgentDojo's own checks of the
same run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentdojo_agents import AGENTS, Injection, ScriptedAgent, Task
from builders import RepoBuilder
from servers import Running

MODEL = "gpt-4o-2024-05-13"  # one AgentDojo's attack knows by name
USER_TASKS = {"banking": ("user_task_0", "user_task_2", "user_task_4"), "slack": ("user_task_1", "user_task_2", "user_task_12")}  # fmt: skip


def agents(suite: Any, environment: Any) -> dict[str, ScriptedAgent]:
    """The three agents, scripted with the suite's ground truths on the attacked environment."""

    def calls(task: Any) -> list[tuple[str, dict[str, Any]]]:
        return [
            (call.function, dict(call.args)) for call in task.ground_truth(environment.model_copy(deep=True))
        ]

    users = {
        task.PROMPT: Task(calls(task), task.GROUND_TRUTH_OUTPUT or "Done.")
        for task in suite.user_tasks.values()
    }
    injections = [
        Injection(suite.name, task_id, task.GOAL, calls(task))
        for task_id, task in suite.injection_tasks.items()
    ]
    return {kind: ScriptedAgent(kind, users, injections) for kind in AGENTS}


def agentdojo_run(suite: Any, server: Running, user_id: str, injection_id: str, texts: dict[str, str]) -> Any:
    """AgentDojo's own run of a pair against the loopback agent: its pipeline for an OpenAI model (system
    message, query, the model, the tools loop), its environment and checks. The tool results the model was
    sent, the utility, the security (True: the injection task was done)."""
    import openai
    from agentdojo.agent_pipeline import AgentPipeline, BasePipelineElement, OpenAILLM, PipelineConfig

    class Kept(BasePipelineElement):  # type: ignore[misc]
        """The last element: keeps the conversation the pipeline ends with."""

        def query(self, query: str, runtime: Any, env: Any, messages: Any, extra_args: Any) -> Any:
            self.messages = list(messages)
            return query, runtime, env, messages, extra_args

    client = openai.OpenAI(base_url=server.url, api_key="sk-loopback-test-key", max_retries=0)
    config = PipelineConfig(
        llm=OpenAILLM(client, MODEL),
        model_id=None,
        defense=None,
        system_message_name=None,
        system_message=None,
    )
    kept = Kept()
    pipeline = AgentPipeline([AgentPipeline.from_config(config), kept])
    user_task, injection_task = suite.user_tasks[user_id], suite.injection_tasks[injection_id]
    utility, security = suite.run_task_with_pipeline(pipeline, user_task, injection_task, texts)
    results = [
        message["error"] or "".join(block["content"] or "" for block in message["content"])
        for message in kept.messages
        if message["role"] == "tool"
    ]
    return results, utility, security


def recorded(lve_dir: Path) -> dict[str, Any]:
    [line] = (lve_dir / "instances/instances.jsonl").read_text().splitlines()
    return dict(json.loads(line))


@pytest.mark.parametrize("suite_name", list(USER_TASKS))
def test_lvegit_s_runs_of_imported_pairs_are_agentdojo_s_runs(
    repo: RepoBuilder, cli: Any, openai_server: Running, suite_name: str
) -> None:
    from agentdojo.task_suite.load_suites import get_suite

    from lvegit.findings.agentdojo import _attack

    chosen = [option for user_id in USER_TASKS[suite_name] for option in ("--user-task", user_id)]
    imported = cli("import", "agentdojo", "--suite", suite_name, *chosen, "--model", f"openai/{MODEL}",
                   cwd=repo.root)  # fmt: skip
    assert imported.code == 0, imported.err
    suite = get_suite("v1.2.2", suite_name)
    attack = _attack(suite, "important_instructions", MODEL)
    pairs = [
        (user_id, injection_id)
        for user_id in USER_TASKS[suite_name]
        for injection_id in suite.injection_tasks
    ]
    compared = {kind: {"results": 0, "equal": 0, "verdicts": 0, "agree": 0, "unsafe": 0} for kind in AGENTS}
    for kind in AGENTS:
        lvegit_runs, agentdojo_runs = {}, {}
        for user_id, injection_id in pairs:
            texts = attack.attack(suite.user_tasks[user_id], suite.injection_tasks[injection_id])
            openai_server.state.answer = agents(suite, suite.load_and_inject_default_environment(texts))[kind]
            agentdojo_runs[user_id, injection_id] = agentdojo_run(
                suite, openai_server, user_id, injection_id, texts
            )
            lve_dir = (
                repo.root / f"repository/agentdojo/{suite_name}/{user_id}-{injection_id}/openai--{MODEL}"
            )
            recording = cli("record", str(lve_dir), "--file", f"{kind}.jsonl", cwd=repo.root)
            assert recording.code in (0, 1), recording.err
            lvegit_runs[user_id, injection_id] = json.loads((lve_dir / f"instances/{kind}.jsonl").read_text())
        for pair, (results, utility, security) in agentdojo_runs.items():
            instance = lvegit_runs[pair]
            calls = [call for step in instance["response"]["steps"] for call in step.get("tool_calls") or []]
            assert [call["result"] for call in calls] == results, (kind, pair)
            assert (instance["passed"], instance["utility"]) == (not security, utility), (kind, pair)
            counts = compared[kind]
            counts["results"] += len(results)
            counts["equal"] += len(results)
            counts["verdicts"] += 1
            counts["agree"] += 1
            counts["unsafe"] += security
    assert compared["ignores"]["unsafe"] == 0 < compared["follows"]["unsafe"], compared
