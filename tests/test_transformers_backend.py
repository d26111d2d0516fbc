"""The transformers backend on a tiny model and tokenizer built offline inside the test (no hub)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-model")
    fast = word_tokenizer(WORDS, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(fast),
        n_positions=128,
        n_embd=16,
        n_layer=1,
        n_head=2,
        eos_token_id=2,
        bos_token_id=2,
        pad_token_id=0,
    )
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def direct_generation(folder: Path, prompt: str, max_new_tokens: int) -> str:
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    inputs = tokenizer(prompt, return_tensors="pt")
    output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=0)
    return str(tokenizer.decode(output[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True))


def test_record_and_run_with_a_local_model(
    repo: RepoBuilder, cli: Any, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lvegit.models import transformers_backend

    transformers_backend._LOADED.clear()
    loads = []
    original = transformers.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(
        transformers.AutoModelForCausalLM,
        "from_pretrained",
        lambda *args, **kwargs: loads.append(args[0]) or original(*args, **kwargs),
    )
    (repo.root / "lvegit.toml").write_text(
        f'[models."local/tiny"]\nbackend = "transformers"\nmodel = "{tiny_model}"\n'
    )
    test = {
        "model": "local/tiny",
        "prompt": [{"role": "system", "content": "yes or no ."}, {"content": "what is {a} + {b} ?"}],
        "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, a, b: 'four' not in r"},
        "default_model_args": {"temperature": 0.0, "max_tokens": 6},
    }
    lve_dir = repo.lve("dummy/local", test, folder="local--tiny")
    recorded = cli(
        "record", str(lve_dir), "--param", "a=one", "--param", "b=three", "--format", "json", cwd=repo.root
    )
    assert recorded.code == 0, recorded.out
    response = recorded.json()["response"]
    expected = direct_generation(
        tiny_model, "system: yes or no .\nuser: what is one + three ?\nassistant:", 6
    )
    assert response == expected and response.strip()
    assert recorded.json()["backend"] == "transformers"

    rows = [json.loads(x) for x in (lve_dir / "instances/instances.jsonl").read_text().splitlines()]
    rows += [
        instance(response, "four" not in response, a="two", b="two"),
        instance("x", True, a="one", b="one"),
    ]
    (lve_dir / "instances/instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = cli("run", str(lve_dir), "--format", "json", cwd=repo.root).json()
    assert data["summary"]["error"] == 0 and data["summary"]["attempts"] == 3
    assert data["instances"][0]["agree"] is True  # greedy decoding reproduces the recording
    # One load by lvegit for the record and the run together (the other is this test's direct generation).
    assert loads == [str(tiny_model), tiny_model]


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
