"""The optional parts of lvegit (pyproject's extras): how to install one, as true for the lvegit installed
here (a release from PyPI; anything else from the repository), and the check made where one is needed."""

from __future__ import annotations

import importlib.util

from lvegit import __version__
from lvegit.base.errors import MissingExtra
from lvegit.base.versions import is_release

REPOSITORY = "https://github.com/lvegit/lvegit"
# An unpinned torch from the default index is the CUDA build with gigabytes of CUDA packages.
TORCH_FIRST = (
    "install torch for your machine first: without a GPU "
    "`pip install --index-url https://download.pytorch.org/whl/cpu torch`, "
    "with one the build for your CUDA version (https://pytorch.org/get-started/locally/)"
)


def install_command(extra: str) -> str:
    """The command that installs `extra` for this lvegit: the same release from PyPI, or from the
    repository while lvegit is not a release."""
    if is_release(__version__):
        return f"pip install 'lvegit[{extra}]=={__version__}'"
    return f'pip install "lvegit[{extra}] @ git+{REPOSITORY}"'


def install_hint(extra: str) -> str:
    """`install_command`, with what must come before it."""
    command = install_command(extra)
    return f"{command} ({TORCH_FIRST})" if extra == "transformers" else command


def missing(what: str, extra: str, module: str) -> MissingExtra:
    """The error for `what` (a part of lvegit), which needs `module` of `extra`, not installed."""
    return MissingExtra(f"{what} needs {module}: {install_hint(extra)}")


def require(what: str, extra: str, *modules: str) -> None:
    """Raise `missing` for the first of `modules` that cannot be imported here, before any work starts."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise missing(what, extra, module)
