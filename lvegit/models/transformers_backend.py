"""Local causal language models with transformers (a hub id or a local directory).

Each model loads once per process and generates one request at a time (in a thread, so the event loop
keeps serving other backends). The tokenizer's chat template formats the conversation when it has one;
otherwise a plain `role: content` transcript ending in `assistant:` is used.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from lvegit.models.base import Completion, ModelError, clean_model_args
from lvegit.prompt import Message

DEFAULT_MAX_NEW_TOKENS = 256
_LOADED: dict[str, tuple[Any, Any]] = {}
_LOAD_LOCK = threading.Lock()


def load(model_id: str) -> tuple[Any, Any]:
    """(model, tokenizer), loaded on first use and shared by every caller in this process."""
    with _LOAD_LOCK:
        if model_id not in _LOADED:
            try:
                from transformers import AutoModelForCausalLM, AutoTokenizer
            except ImportError:
                raise ModelError(
                    "the transformers backend needs: pip install 'lvegit[transformers]'"
                ) from None
            try:
                tokenizer = AutoTokenizer.from_pretrained(model_id)
                model = AutoModelForCausalLM.from_pretrained(model_id)
            except (OSError, ValueError) as exc:
                raise ModelError(f"cannot load transformers model '{model_id}': {exc}") from None
            model.eval()  # type: ignore[no-untyped-call]
            _LOADED[model_id] = (model, tokenizer)
        return _LOADED[model_id]


def prompt_text(tokenizer: Any, messages: list[Message]) -> str:
    conversation = [{"role": m.role.value, "content": m.content or ""} for m in messages]
    if getattr(tokenizer, "chat_template", None):
        return str(tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True))
    return "".join(f"{m['role']}: {m['content']}\n" for m in conversation) + "assistant:"


class TransformersModel:
    backend = "transformers"

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = asyncio.Lock()

    def _generate(self, messages: list[Message], model_args: dict[str, Any]) -> Completion:
        import torch

        model, tokenizer = load(self.name)
        args = clean_model_args(model_args)
        inputs = tokenizer(prompt_text(tokenizer, messages), return_tensors="pt")
        temperature = float(args.get("temperature", 0.0))
        options: dict[str, Any] = {
            "max_new_tokens": int(args.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS),
            "do_sample": temperature > 0,
            "pad_token_id": tokenizer.pad_token_id
            if tokenizer.pad_token_id is not None
            else tokenizer.eos_token_id,
        }
        if temperature > 0:
            options["temperature"] = temperature
            if args.get("top_p") is not None:
                options["top_p"] = float(args["top_p"])
        if "seed" in args:
            torch.manual_seed(int(args["seed"]))
        with torch.no_grad():
            output = model.generate(**inputs, **options)
        new_tokens = output[0][inputs["input_ids"].shape[1] :]
        return Completion(tokenizer.decode(new_tokens, skip_special_tokens=True), self.name)

    async def complete(self, messages: list[Message], model_args: dict[str, Any]) -> Completion:
        async with self._lock:
            return await asyncio.to_thread(self._generate, messages, model_args)

    async def close(self) -> None:
        return None
