"""Device and precision choice, with the devices present or absent as torch reports them (mocked there)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lvegit.base.errors import UsageError
from lvegit.models.placement import Placement, choose

torch = pytest.importorskip("torch")

GIB = 1 << 30


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Make torch report a machine: `gpus` CUDA GPUs (bf16-capable or not, with `free` bytes) or MPS."""

    def make(gpus: int = 0, bf16: bool = True, mps: bool = False, free: int = 80 * GIB) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: bf16)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *args: (free, 80 * GIB))
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    return make


def test_auto_prefers_cuda_then_mps_then_cpu(machine: Callable[..., None]) -> None:
    machine(gpus=1)
    assert choose(torch) == Placement("cuda", "bfloat16")
    machine(gpus=1, bf16=False)
    assert choose(torch) == Placement("cuda", "float16")
    machine(mps=True)
    assert choose(torch) == Placement("mps", "float16")
    machine()
    assert choose(torch) == Placement("cpu", "float32")


def test_explicit_device_and_dtype_win(machine: Callable[..., None]) -> None:
    machine(gpus=2)
    assert choose(torch, "cpu") == Placement("cpu", "float32")
    assert choose(torch, "cuda:1", "float32") == Placement("cuda:1", "float32")
    assert choose(torch, "cpu", "bfloat16") == Placement("cpu", "bfloat16")


@pytest.mark.parametrize(
    ("gpus", "device", "dtype", "message"),
    [
        (0, "cuda", "auto", "sees no CUDA GPU here"),
        (1, "cuda:1", "auto", "this machine has 1 CUDA GPU(s)"),
        (0, "mps", "auto", "MPS) is not available"),
        (0, "cpu", "float16", "float16 needs a GPU"),
    ],
)
def test_a_device_that_is_not_there_is_a_clear_error(
    machine: Callable[..., None], gpus: int, device: str, dtype: str, message: str
) -> None:
    machine(gpus=gpus)
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        choose(torch, device, dtype)


def test_a_model_larger_than_the_gpu_is_spread_by_accelerate(machine: Callable[..., None]) -> None:
    machine(gpus=2, free=20 * GIB)
    asked = []

    def size(dtype: str) -> int:
        asked.append(dtype)
        return 30 * GIB

    spread = choose(torch, model_bytes=size, accelerate=True)
    assert spread == Placement("cuda:0", "bfloat16", device_map="auto") and asked == ["bfloat16"]
    assert spread.run_info() == {"device": "cuda:0", "dtype": "bfloat16", "device_map": "auto"}
    # Without accelerate there is nothing to spread with; a named device is taken as it is.
    assert choose(torch, model_bytes=size, accelerate=False) == Placement("cuda", "bfloat16")
    assert choose(torch, "cuda", model_bytes=size, accelerate=True) == Placement("cuda", "bfloat16")
    # A model that fits stays on one GPU.
    assert choose(torch, model_bytes=lambda _dtype: 2 * GIB, accelerate=True) == Placement("cuda", "bfloat16")


def test_the_model_size_is_not_estimated_without_a_gpu(machine: Callable[..., None]) -> None:
    machine()

    def size(_dtype: str) -> int:
        raise AssertionError("estimated without a GPU")

    assert choose(torch, model_bytes=size, accelerate=True) == Placement("cpu", "float32")
