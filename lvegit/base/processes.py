"""Starting processes: the one way lvegit starts another process.

A repository lvegit works on is hostile input (a pull request may commit a `lvegit/` folder, a
`sitecustomize.py` or a `.pth` file at its root), and lvegit's own environment may hold secrets. So every
process lvegit starts
- runs lvegit's own code: Python in isolated mode (`-I`: neither the working directory nor PYTHON*
  variables nor the user's site-packages reach `sys.path`),
- starts outside any repository (working directory `/`, unless the caller names another on purpose, as
  git's must be the repository),
- gets an environment built from an allow-list, plus exactly the variables that process needs (a model key
  only to the process that calls the model),
- has no controlling terminal (a new session) and reads nothing from ours (stdin is /dev/null unless the
  caller gives it a channel), and inherits no descriptor it was not given.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

# What any process may see of ours: where programs are, how to print text, the time zone.
ENVIRONMENT_ALLOWLIST = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ")
NEUTRAL_FOLDER = "/"  # no repository holds it, so nothing found relative to it is a pull request's

_Stream = int | IO[Any] | None


def environment(passing: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment from the allow-list: ENVIRONMENT_ALLOWLIST and the `passing` names as this
    process has them, then `extra` (values of lvegit's choosing)."""
    names = (*ENVIRONMENT_ALLOWLIST, *passing)
    built = {name: os.environ[name] for name in names if name in os.environ}
    built.update(extra or {})
    return built


def lvegit_command(module: str, *arguments: str) -> list[str]:
    """The command line that runs one of lvegit's modules in this interpreter, isolated."""
    return [sys.executable, "-I", "-m", module, *arguments]


def start(
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: str = NEUTRAL_FOLDER,
    stdin: _Stream = subprocess.DEVNULL,
    stdout: _Stream = None,
    stderr: _Stream = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start `command` as this module's docstring says: `env` is the whole environment (build it with
    `environment`), `cwd` outside any repository unless the process must work in one."""
    return subprocess.Popen(
        list(command),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
    )


def run(
    command: Sequence[str], env: Mapping[str, str], *, cwd: str = NEUTRAL_FOLDER, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`start`, waited for, with its output captured (`input`, where given, is its stdin)."""
    stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
    with start(command, env, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        try:
            out, err = process.communicate(input)
        except BaseException:  # interrupted: the process goes too, as subprocess.run does
            process.kill()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)
