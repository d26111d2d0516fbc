"""Local-model throughput, side by side in one run: `python benchmarks/local_model.py [--size 1b]`.

A randomly initialised Llama-architecture model is built here (no download) and saved; every row then
generates the same prompts (greedy, a fixed number of new tokens: the model has no end token, so every
request generates exactly that many) and reports tokens per second:

- the backend as it was before batching and device placement: CPU, float32, one request at a time;
- the backend one request at a time, on the best device present;
- the backend with the requests in flight together (batched), as `lvegit run` sends them;
- the ceiling: the same prompts in one left-padded `model.generate` call on the same model, no lvegit.

Load time and first-use costs are left out of every row: each row makes one untimed pass first. The two
fast rows are timed in `--repeats` interleaved passes (median, min and max shown), the slow ones once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402

from lvegit.lve.prompt import Message, Role  # noqa: E402
from lvegit.lve.repo import Repository  # noqa: E402
from lvegit.models import transformers_backend  # noqa: E402
from lvegit.models.routing import ModelPool  # noqa: E402
from lvegit.models.transformers_backend import LocalModels, TransformersModel  # noqa: E402
from lvegit.run.rerun import plan_reruns  # noqa: E402
from lvegit.run.runner import Runner  # noqa: E402

from builders import RepoBuilder, instance  # noqa: E402

# Llama shapes: tiny for a quick CPU run, 1b like TinyLlama (about 1.2B parameters with its embeddings).
SIZES = {
    "tiny": {"hidden_size": 128, "intermediate_size": 352, "num_hidden_layers": 4, "num_attention_heads": 4},
    "1b": {
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
    },
}
VOCABULARY = 32000


def build_model(folder: Path, size: str) -> int:
    """A random model of `size` and a word-level tokenizer over its vocabulary, saved to `folder`;
    returns the number of parameters."""
    words = [f"w{i}" for i in range(VOCABULARY - 2)]
    vocabulary = {token: index for index, token in enumerate(["<pad>", "<unk>", *words])}
    word_level = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="<unk>"))
    word_level.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=word_level, pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.save_pretrained(folder)
    config = transformers.LlamaConfig(
        vocab_size=VOCABULARY,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        pad_token_id=0,
        bos_token_id=None,
        eos_token_id=None,  # no end token: every request generates exactly max_new_tokens
        **SIZES[size],
    )
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # random init is fast on a GPU
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = None
    model.save_pretrained(folder)
    return sum(parameter.numel() for parameter in model.parameters())


def prompts(count: int) -> list[str]:
    """Prompts of different lengths (8 to 71 words), so that batches need padding."""
    return [" ".join(f"w{(7 * i + j) % 5000}" for j in range(8 + (i * 13) % 64)) for i in range(count)]


def conversation(text: str) -> list[Message]:
    return [Message(text, Role.user)]


@dataclass
class Row:
    label: str
    prompts: int
    run: Callable[[], list[int]]  # one pass: generates the row's prompts, returns its batch sizes
    new_tokens: int
    seconds: list[float] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)

    def time(self) -> None:
        started = time.perf_counter()
        self.batches = self.run()
        self.seconds.append(time.perf_counter() - started)

    def rate(self) -> float:
        return self.prompts * self.new_tokens / statistics.median(self.seconds)


MODELS = LocalModels()  # the passes share each loaded model, as one `lvegit run` does


def backend_pass(folder: Path, texts: list[str], new_tokens: int, **settings: Any) -> Callable[[], list[int]]:
    """The backend with `settings`, all requests in flight at once (as `lvegit run` sends them)."""
    args = {"temperature": 0, "max_tokens": new_tokens}
    device, dtype = settings.pop("device", "auto"), settings.pop("dtype", "auto")
    weights = MODELS.get(str(folder), device, dtype)  # loaded once for every pass on this placement
    model = TransformersModel(str(folder), device, dtype, weights=weights, **settings)

    async def complete_all() -> None:
        await asyncio.gather(*(model.complete(conversation(text), args) for text in texts))

    def run() -> list[int]:
        model.batcher.sizes.clear()
        asyncio.run(complete_all())
        return list(model.batcher.sizes)

    return run


def runner_pass(folder: Path, texts: list[str], new_tokens: int, scratch: Path) -> Callable[[], list[int]]:
    """`lvegit run` of an LVE whose instances are `texts`, in process: the runner, its concurrency per
    model, the prompt template and the checker included."""
    builder = RepoBuilder(scratch / "lves")
    (builder.root / "lvegit.toml").write_text(
        f'[models."local/random"]\nbackend = "transformers"\nmodel = "{folder}"\nbatch_size = {len(texts)}\n'
    )
    test = {
        "model": "local/random",
        "prompt": [{"role": "user", "content": "{text}"}],
        "prompt_parameters": ["text"],
        "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r, text: len(r) > 0"},
        "default_model_args": {"temperature": 0.0, "max_tokens": new_tokens},
    }
    rows = [instance("recorded", True, text=text) for text in texts]
    lve_dir = builder.lve("speed/random", test, folder="local--random", instances={"i.jsonl": rows})
    repo = Repository.discover(builder.root)

    def run() -> list[int]:
        pool = ModelPool(repo.root, local_models=MODELS)  # the model stays loaded between runs
        _route, model = pool.get("local/random")
        attempts = Runner(pool).run(plan_reruns(repo, [lve_dir], None, 1, False).tasks)
        assert all(attempt.status == "complete" for attempt in attempts), attempts[0].error
        assert isinstance(model, TransformersModel)
        return model.batcher.sizes

    return run


def ceiling_pass(folder: Path, texts: list[str], new_tokens: int) -> Callable[[], list[int]]:
    """One left-padded `generate` call on the model the backend loaded, without lvegit."""
    loaded = MODELS.get(str(folder)).get()
    tokenizer, model = loaded.tokenizer, loaded.model
    chat = [transformers_backend.prompt_text(tokenizer, conversation(text)) for text in texts]

    def run() -> list[int]:
        inputs = tokenizer(chat, return_tensors="pt", padding=True, return_token_type_ids=False)
        inputs = inputs.to(model.device)
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
        generated = int((output[:, inputs["input_ids"].shape[1] :] != 0).sum())
        assert generated == len(texts) * new_tokens, "every prompt generates max_new_tokens tokens"
        return [len(texts)]

    return run


def device_name() -> str:
    if torch.cuda.is_available():
        return str(torch.cuda.get_device_name(0))
    return f"CPU only ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument(
        "--before-prompts",
        type=int,
        default=4,
        help="Prompts for the row of the backend as it was (slow on CPU: a few give its rate).",
    )
    parser.add_argument("--repeats", type=int, default=5, help="Timed passes of the batched rows.")
    options = parser.parse_args()
    texts = prompts(options.prompts)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "model"
        parameters = build_model(folder, options.size)
        accelerator = "cpu" if not torch.cuda.is_available() else "cuda"
        before = texts[: options.before_prompts]
        slow = [
            Row(
                "backend as before: CPU, float32, one request at a time",
                len(before),
                backend_pass(folder, before, options.new_tokens, device="cpu", dtype="float32", batch_size=1),
                options.new_tokens,
            ),
            Row(
                f"backend on {accelerator}, one request at a time",
                len(texts),
                backend_pass(folder, texts, options.new_tokens, batch_size=1),
                options.new_tokens,
            ),
        ]
        fast = [
            Row(
                f"backend on {accelerator}, batched (requests in flight together)",
                len(texts),
                backend_pass(folder, texts, options.new_tokens, batch_size=len(texts)),
                options.new_tokens,
            ),
            Row(
                f"lvegit run of {len(texts)} instances (runner and checker included)",
                len(texts),
                runner_pass(folder, texts, options.new_tokens, Path(scratch)),
                options.new_tokens,
            ),
            Row(
                f"ceiling: one left-padded generate call on {accelerator}",
                len(texts),
                ceiling_pass(folder, texts, options.new_tokens),
                options.new_tokens,
            ),
        ]
        for row in slow + fast:  # warm-up: loads, first kernels for these shapes
            row.run()
        for row in slow:
            row.time()
        for _ in range(options.repeats):  # interleaved: both see the device in the same state
            for row in fast:
                row.time()
        placement = MODELS.get(str(folder)).get().placement
    print(
        f"model: random Llama, {parameters / 1e6:.0f}M parameters, {placement.describe()}; "
        f"{options.new_tokens} new tokens per prompt, greedy; device: {device_name()}; "
        f"torch {torch.__version__}, transformers {transformers.__version__}"
    )
    ceiling, first = fast[-1].rate(), slow[0].rate()
    print("| row | prompts | batches | seconds (median, min-max) | tokens/s | of ceiling | vs before |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in slow + fast:
        sizes = row.batches
        batches = f"{len(sizes)} of {max(sizes)}" if len(set(sizes)) == 1 else "+".join(map(str, sizes))
        seconds = f"{statistics.median(row.seconds):.2f} ({min(row.seconds):.2f}-{max(row.seconds):.2f})"
        shares = f"{row.rate() / ceiling:.0%} | {row.rate() / first:.1f}x"
        print(f"| {row.label} | {row.prompts} | {batches} | {seconds} | {row.rate():.0f} | {shares} |")


if __name__ == "__main__":
    main()
