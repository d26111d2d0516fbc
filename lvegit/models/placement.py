"""Where a local model runs and in which precision: the best device present unless told otherwise.

`auto` picks CUDA, then Apple MPS, then the CPU; in bfloat16 on a GPU that supports it (float16 on older
GPUs and on MPS) and float32 on the CPU, where half precision is slow or unsupported. A model larger than
the GPU's free memory is spread over every GPU (and the CPU) with `device_map="auto"` when accelerate is
installed. The routing file (`device`, `dtype`) and `--device` / `--dtype` override the choice.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lvegit.base.errors import UsageError

DEVICES = ("auto", "cuda", "mps", "cpu")  # and cuda:N
DTYPES = ("auto", "bfloat16", "float16", "float32")
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
# Room left on the GPU beside the weights (activations, the KV cache of a batch, CUDA's own memory).
GPU_HEADROOM = 0.8


@dataclass(frozen=True)
class Placement:
    device: str  # cpu, mps, cuda, cuda:N; with device_map "auto", where the inputs go
    dtype: str
    device_map: str | None = None  # "auto": accelerate spreads the layers over the devices present

    def describe(self) -> str:
        where = "spread over the GPUs by accelerate" if self.device_map else f"on {self.device}"
        return f"{where} in {self.dtype}"

    def run_info(self) -> dict[str, str]:
        info = {"device": self.device, "dtype": self.dtype}
        return {**info, "device_map": self.device_map} if self.device_map else info


def check_device(value: str, where: str) -> str:
    if value not in DEVICES and not re.fullmatch(r"cuda:\d+", value):
        raise UsageError(f"{where}: device '{value}' is not one of {', '.join(DEVICES)} or cuda:N")
    return value


def check_dtype(value: str, where: str) -> str:
    if value not in DTYPES:
        raise UsageError(f"{where}: dtype '{value}' is not one of {', '.join(DTYPES)}")
    return value


def accelerate_installed() -> bool:
    return importlib.util.find_spec("accelerate") is not None


def choose(
    torch: Any,
    device: str = "auto",
    dtype: str = "auto",
    *,
    model_bytes: Callable[[str], int] | None = None,
    accelerate: bool = False,
) -> Placement:
    """The placement for a model. `model_bytes(dtype)` estimates its weights' size, asked only where
    spreading it over several devices is possible (CUDA with accelerate installed)."""
    chosen = _device(torch, device)
    precision = _dtype(torch, chosen) if dtype == "auto" else dtype
    if chosen == "cpu" and precision == "float16":
        raise UsageError("dtype float16 needs a GPU: on the CPU use bfloat16 or float32")
    if device == "auto" and chosen == "cuda" and accelerate and model_bytes is not None:
        free, _total = torch.cuda.mem_get_info(0)
        if model_bytes(precision) > free * GPU_HEADROOM:
            return Placement("cuda:0", precision, device_map="auto")
    return Placement(chosen, precision)


def _device(torch: Any, device: str) -> str:
    cuda = torch.cuda.is_available()
    mps = _mps_available(torch)
    if device == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if device.startswith("cuda"):
        if not cuda:
            raise UsageError(
                f"device {device}: torch {torch.__version__} sees no CUDA GPU here "
                "(a CPU-only torch build, or no driver); use --device auto or cpu"
            )
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise UsageError(f"device {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s)")
    if device == "mps" and not mps:
        raise UsageError("device mps: Apple's Metal (MPS) is not available to torch here")
    return device


def _mps_available(torch: Any) -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def _dtype(torch: Any, device: str) -> str:
    if device.startswith("cuda"):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device == "mps":
        return "float16"
    return "float32"
