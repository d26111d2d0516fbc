"""The routing file's local-model settings and the command line's overrides of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lvegit.base.errors import UsageError
from lvegit.models.routing import ModelPool, Route, load_routes


def routes(tmp_path: Path, entry: str) -> dict[str, Route]:
    (tmp_path / "lvegit.toml").write_text(f'[models."local/m"]\n{entry}\n')
    return load_routes(tmp_path)


def test_local_settings_are_read_with_defaults(tmp_path: Path) -> None:
    route = routes(
        tmp_path, 'backend = "transformers"\nmodel = "/models/m"\ndevice = "cuda:1"\nbatch_size = 4'
    )
    assert (route["local/m"].device, route["local/m"].dtype, route["local/m"].batch_size) == (
        "cuda:1",
        "auto",
        4,
    )
    default = routes(tmp_path, 'backend = "transformers"')["local/m"]
    assert (default.device, default.dtype, default.batch_size) == ("auto", "auto", 32)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            'backend = "transformers"\ndevice = "tpu"',
            "device 'tpu' is not one of auto, cuda, mps, cpu or cuda:N",
        ),
        (
            'backend = "transformers"\ndtype = "int4"',
            "dtype 'int4' is not one of auto, bfloat16, float16, float32",
        ),
        ('backend = "transformers"\nbatch_size = "8"', "batch_size must be a whole number of at least 1"),
        ('backend = "transformers"\nbatch_size = 0', "batch_size must be a whole number of at least 1"),
        ('backend = "openai"\nbatch_size = 8', 'batch_size only apply to backend = "transformers"'),
        *(
            (f'api_key_env = "{name}"', f"api_key_env: '{name}' is not a model key variable")
            for name in (
                "GITHUB_TOKEN",
                "INPUT_GITHUB-TOKEN",
                "GITHUB_API_KEY",
                "ACTIONS_RUNTIME_TOKEN",
                "HOME",
            )
        ),
        (
            'api_key_env = ["OPENAI_API_KEY"]',
            "api_key_env: \"['OPENAI_API_KEY']\" is not a model key variable",
        ),
    ],
)
def test_bad_local_settings_name_the_entry(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(UsageError) as error:
        routes(tmp_path, entry)
    assert str(error.value).startswith('lvegit.toml: models."local/m"') and message in str(error.value)


def test_device_and_dtype_from_the_command_line_override_local_routes_only(tmp_path: Path) -> None:
    (tmp_path / "lvegit.toml").write_text(
        '[models."local/m"]\nbackend = "transformers"\ndevice = "cuda"\ndtype = "float16"\n'
        '[models."api/m"]\nbackend = "offline"\nmodel = "echo"\n'
    )
    pool = ModelPool(tmp_path, device="cpu")
    local, _model = pool.get("local/m")
    assert (local.device, local.dtype) == ("cpu", "float16")
    assert pool.get("api/m")[0] == Route("offline", "echo")


@pytest.mark.parametrize(
    "name", ["OPENAI_API_KEY", "VLLM_API_KEY", "INPUT_OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"]
)
def test_a_route_may_name_a_model_key_variable(tmp_path: Path, name: str) -> None:
    assert routes(tmp_path, f'api_key_env = "{name}"')["local/m"].api_key_env == name
