"""Local causal language models with transformers (a hub id or a local directory).

Each model loads once per run (see LocalWeights), on the device `placement.choose` picks (the best one
present unless the routing file or `--device` / `--dtype` say otherwise). Concurrent requests with the same
generation arguments are generated together as one left-padded batch (see `batching`); each request gets its
own completion, without padding or prompt. Seeded sampling runs alone, so that a seed gives the same text as
it would in a run of its own. The tokenizer's chat template formats the conversation when it has one;
otherwise a plain `role: content` transcript ending in `assistant:` is used.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from lvegit.base.extras import install_hint
from lvegit.base.output import note
from lvegit.lve.prompt import Message
from lvegit.models import placement
from lvegit.models.base import Completion, ModelError, clean_model_args
from lvegit.models.batching import Batcher
from lvegit.models.tool_text import parse_tool_calls, template_messages

DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class LoadedModel:
    model: Any
    tokenizer: Any
    placement: placement.Placement
    eos_ids: frozenset[int]
    pad_id: int | None  # None: the tokenizer has neither a pad nor an end token, so nothing batches

    def generate(self, prompts: list[str], options: dict[str, Any], seed: int | None) -> list[str]:
        """The completions of `prompts`, generated as one left-padded batch (one by one where the
        tokenizer has no token to pad with)."""
        import torch

        if self.pad_id is None and len(prompts) > 1:
            return [text for prompt in prompts for text in self.generate([prompt], options, seed)]

        inputs = self.tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False).to(
            self.model.device
        )
        gpus = list(range(torch.cuda.device_count())) if self.model.device.type == "cuda" else []
        with torch.inference_mode(), torch.random.fork_rng(devices=gpus):
            if seed is not None:  # a seed of its own, the process's random state left as it was
                torch.manual_seed(seed)
            output = self.model.generate(**inputs, **options, pad_token_id=self.pad_id)
        new_tokens = output[:, inputs["input_ids"].shape[1] :].tolist()
        return [self.tokenizer.decode(self._until_end(row), skip_special_tokens=True) for row in new_tokens]

    def _until_end(self, tokens: list[int]) -> list[int]:
        """A row up to its first end token: what follows in a batch is padding."""
        for index, token in enumerate(tokens):
            if token in self.eos_ids:
                return tokens[:index]
        return tokens


class LocalWeights:
    """One model on one device in one precision: loaded on first use, and the one thread that loads it
    and runs all its batches, so that they never overlap and the thread keeps what CUDA set up for the
    shapes it has met. A run's ModelPool owns one per model, shared by every route to that model."""

    def __init__(self, model_id: str, device: str = "auto", dtype: str = "auto") -> None:
        self.model_id, self.device, self.dtype = model_id, device, dtype
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="lvegit-generate")
        self._loaded: LoadedModel | None = None
        self._lock = threading.Lock()

    def get(self) -> LoadedModel:
        with self._lock:
            if self._loaded is None:
                self._loaded = _load(self.model_id, self.device, self.dtype)
            return self._loaded

    def close(self) -> None:
        self.thread.shutdown(wait=False)


class LocalModels:
    """The local models of a run, by (model, device, dtype): every route to one model shares its weights.
    A run's ModelPool makes its own; a caller that runs several times over one model (a benchmark) keeps
    one across them."""

    def __init__(self) -> None:
        self._weights: dict[tuple[str, str, str], LocalWeights] = {}

    def get(self, model_id: str, device: str = "auto", dtype: str = "auto") -> LocalWeights:
        key = (model_id, device, dtype)
        if key not in self._weights:
            self._weights[key] = LocalWeights(*key)
        return self._weights[key]

    def close(self) -> None:
        for weights in self._weights.values():
            weights.close()
        self._weights.clear()


def _load(model_id: str, device: str, dtype: str) -> LoadedModel:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ModelError(f"the transformers backend needs: {install_hint('transformers')}") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        chosen = placement.choose(
            torch,
            device,
            dtype,
            model_bytes=lambda precision: _weights_bytes(model_id, precision),
            accelerate=placement.accelerate_installed(),
        )
        options: dict[str, Any] = {"dtype": getattr(torch, chosen.dtype)}
        if chosen.device_map:
            options["device_map"] = chosen.device_map
        model: Any = AutoModelForCausalLM.from_pretrained(model_id, **options)
        if not chosen.device_map:
            model.to(chosen.device)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load transformers model '{model_id}': {exc}") from None
    except torch.OutOfMemoryError:
        hint = "" if chosen.device_map else ": pip install accelerate to spread it over GPUs and CPU"
        raise ModelError(
            f"transformers model '{model_id}' does not fit {chosen.describe()}{hint}, "
            "or choose another --device or --dtype"
        ) from None
    model.eval()
    tokenizer.padding_side = "left"  # generation continues every row from its end
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    eos = model.generation_config.eos_token_id
    eos_ids = {eos} if isinstance(eos, int) else set(eos or ())
    if tokenizer.eos_token_id is not None:
        eos_ids.add(tokenizer.eos_token_id)
    note(f"local model {model_id} {chosen.describe()}")
    return LoadedModel(model, tokenizer, chosen, frozenset(eos_ids), tokenizer.pad_token_id)


def _weights_bytes(model_id: str, dtype: str) -> int:
    """The size of the model's weights in `dtype`, from its configuration (built on the meta device:
    nothing is allocated or read but the config)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        skeleton: Any = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_id))
    parameters = sum(int(parameter.numel()) for parameter in skeleton.parameters())
    return parameters * placement.DTYPE_BYTES[dtype]


def prompt_text(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> str:
    """The conversation as the model's chat template writes it (offering `tools` where given); without a
    template, `role: content` lines."""
    conversation = template_messages(messages)
    template = getattr(tokenizer, "chat_template", None)
    if tools and "tools" not in str(template or ""):
        raise ModelError(
            "the model's chat template takes no tools: choose a model made for tool use (its template "
            "offers `tools`)"
        )
    if template:
        offered = {"tools": tools} if tools else {}
        return str(
            tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True, **offered)
        )
    return "".join(f"{m['role']}: {m['content']}\n" for m in conversation) + "assistant:"


def generation_options(model_args: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """`generate` keyword arguments for the request's model arguments, and the seed of seeded sampling
    (greedy decoding needs none)."""
    args = clean_model_args(model_args)
    temperature = float(args.get("temperature", 0.0))
    options: dict[str, Any] = {
        "max_new_tokens": int(args.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS),
        "do_sample": temperature > 0,
    }
    if temperature <= 0:
        return options, None
    options["temperature"] = temperature
    if args.get("top_p") is not None:
        options["top_p"] = float(args["top_p"])
    return options, int(args["seed"]) if "seed" in args else None


def _is_out_of_memory(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.OutOfMemoryError)


@dataclass(frozen=True)
class BatchKey:
    """Requests batch together when their keys are equal."""

    options: tuple[tuple[str, Any], ...]
    seed: int | None
    alone: int = 0  # a request numbered here batches with no other
    tools: str = ""  # the tools offered (JSON): a template's tools are the same for a whole batch


class TransformersModel:
    backend = "transformers"

    def __init__(
        self,
        name: str,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = DEFAULT_BATCH_SIZE,
        weights: LocalWeights | None = None,  # None: weights of its own
    ) -> None:
        self.name = name
        self.weights = weights or LocalWeights(name, device, dtype)
        self.concurrency = batch_size  # requests worth having in flight: one full batch
        self.batcher: Batcher[list[Message], str] = Batcher(
            self._generate_batch, self.weights.thread, batch_size, _is_out_of_memory
        )
        self._alone = 0

    def _generate_batch(self, key: Hashable, conversations: list[list[Message]]) -> list[str]:
        """Runs in the batcher's thread: the first batch loads the model."""
        assert isinstance(key, BatchKey)
        loaded = self.weights.get()
        tools = json.loads(key.tools) if key.tools else None
        prompts = [prompt_text(loaded.tokenizer, messages, tools) for messages in conversations]
        return loaded.generate(prompts, dict(key.options), key.seed)

    async def complete(self, messages: list[Message], model_args: dict[str, Any]) -> Completion:
        import torch  # here, not at the top: lvegit imports no torch until a local model runs

        options, seed = generation_options(model_args)
        tools = model_args.get("tools")
        key = BatchKey(tuple(sorted(options.items())), seed, tools=json.dumps(tools) if tools else "")
        if seed is not None:
            # Sampled tokens depend on the batch around a request: a seeded one is a batch of its own.
            self._alone += 1
            key = replace(key, alone=self._alone)
        try:
            text = await self.batcher.submit(key, messages)
        except torch.OutOfMemoryError as exc:
            raise ModelError(f"out of memory generating with '{self.name}', even alone: {exc}") from None
        text, calls = parse_tool_calls(text) if tools else (text, ())
        return Completion(text, self.name, self.weights.get().placement.run_info(), calls)

    async def close(self) -> None:
        await self.batcher.close()
