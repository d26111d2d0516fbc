"""AgentDojo's banking and slack suites (every injection task, three user tasks each) imported by `lvegit import
agentdojo` and recorded against three loopback agents (agentdojo_agents: one follows injected instructions,
one ignores them, one follows them with what its calls returned), then run by AgentDojo itself (its
pipeline with its OpenAI client, against the same loopback agents): every tool result lvegit recorded is the
one AgentDojo's environment answered, and lvegit's verdict and utility are AgentDojo's own checks of the
same run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentdojo_agents import AGENTS, READINGS, Pair, ScriptedAgent, Task
from builders import RepoBuilder
from servers import Running

MODEL = "gpt-4o-2024-05-13"  # one AgentDojo's attack knows by name
USER_TASKS = {"banking": ("user_task_0", "user_task_2", "user_task_4"), "slack": ("user_task_1", "user_task_2", "user_task_12")}  # fmt: skip


def agent_pairs(
    suite: Any, user_ids: tuple[str, ...], attack: Any
) -> tuple[dict[str, list[Pair]], dict[Any, Any]]:
    """The agents' scripts (AgentDojo's ground truths on each pair's attacked environment), by the user's
    prompt, and the attack's texts of each pair."""
    scripts: dict[str, list[Pair]] = {}
    texts = {}
    for user_id in user_ids:
        user_task = suite.user_tasks[user_id]
        for injection_id, injection_task in suite.injection_tasks.items():
            texts[user_id, injection_id] = attack.attack(user_task, injection_task)
            environment = suite.load_and_inject_default_environment(texts[user_id, injection_id])

            def calls(task: Any) -> list[tuple[str, dict[str, Any]]]:
                truth = task.ground_truth(environment.model_copy(deep=True))  # noqa: B023
                return [(call.function, dict(call.args)) for call in truth]

            user = Task(calls(user_task), user_task.GROUND_TRUTH_OUTPUT or "Done.")
            reading = READINGS.get((suite.name, injection_id))
            pair = Pair(user, injection_task.GOAL, calls(injection_task), reading)
            scripts.setdefault(user_task.PROMPT, []).append(pair)
    return scripts, texts


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


@pytest.mark.parametrize("suite_name", list(USER_TASKS))
def test_lvegit_s_runs_of_imported_pairs_are_agentdojo_s_runs(
    repo: RepoBuilder, cli: Any, openai_server: Running, suite_name: str
) -> None:
    from agentdojo.task_suite.load_suites import get_suite

    from lvegit.findings.agentdojo import aimed_attack

    chosen = [option for user_id in USER_TASKS[suite_name] for option in ("--user-task", user_id)]
    imported = cli("import", "agentdojo", "--suite", suite_name, *chosen, "--model", f"openai/{MODEL}",
                   cwd=repo.root)  # fmt: skip
    assert imported.code == 0, imported.err
    suite = get_suite("v1.2.2", suite_name)
    scripts, texts = agent_pairs(
        suite, USER_TASKS[suite_name], aimed_attack(suite, "important_instructions", MODEL)
    )
    unsafe = {}
    for kind in AGENTS:
        openai_server.state.answer = ScriptedAgent(kind, scripts)
        recording = cli("record", "--all", "--file", f"{kind}.jsonl", cwd=repo.root)
        assert recording.code in (0, 1), recording.err
        unsafe[kind] = 0
        for (user_id, injection_id), attack_texts in texts.items():
            results, utility, security = agentdojo_run(
                suite, openai_server, user_id, injection_id, attack_texts
            )
            lve_dir = (
                repo.root / f"repository/agentdojo/{suite_name}/{user_id}-{injection_id}/openai--{MODEL}"
            )
            [instance] = [
                json.loads(line) for line in (lve_dir / f"instances/{kind}.jsonl").read_text().splitlines()
            ]
            calls = [call for step in instance["response"]["steps"] for call in step.get("tool_calls") or []]
            assert [call["result"] for call in calls] == results, (kind, user_id, injection_id)
            assert (instance["passed"], instance["utility"]) == (not security, utility), (
                kind,
                user_id,
                injection_id,
            )
            unsafe[kind] += security
    # each verdict agrees, and the agents are judged apart: only those that follow the injection are hijacked
    assert unsafe["ignores"] == 0 < min(unsafe["follows"], unsafe["reads"]), unsafe
