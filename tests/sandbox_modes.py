"""The modes the sandbox's tests run lvegit in: as root or as an unprivileged user (nobody), and with
namespaces or Landlock refused by a seccomp wrapper (sandbox/refuse_namespaces.py), as a container, an old
kernel or Ubuntu's AppArmor default refuses them."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from lvegit.sandbox import view

REFUSE_NAMESPACES = str(Path(__file__).parent / "sandbox" / "refuse_namespaces.py")
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the machine's root only")


def as_nobody(groups: str = "--clear-groups") -> list[str]:
    """A command prefix that runs as nobody, with no groups, in a view where the interpreter and lvegit
    are reachable (they may live under /root or in a 0700 folder, as CI's venv does): every folder above
    them that nobody cannot pass is covered by an empty one and the paths bound back (bubblewrap as root,
    without namespaces of its own besides the mount one)."""
    program = shutil.which("setpriv")
    if program is None:
        pytest.skip("setpriv (util-linux) is not installed")
    from lvegit.sandbox import bwrap

    bwrap_program = bwrap.executable()
    assert bwrap_program is not None
    needed = sorted(
        {os.path.realpath(p) for p in [*view.import_paths(), sys.executable] if os.path.exists(p)}
    )
    closed = set()
    for path in needed:
        for folder in Path(path).parents:
            if str(folder) != "/" and not os.stat(folder).st_mode & stat.S_IXOTH:
                closed.add(str(folder))
    arguments = [bwrap_program, "--dev-bind", "/", "/"]
    for folder in sorted(closed):
        arguments += ["--perms", "0755", "--tmpfs", folder]
    made = set(closed)
    for path in needed:
        if any(path.startswith(folder + "/") for folder in closed):
            for folder in reversed(Path(path).parents):  # bubblewrap would make them 0700
                if str(folder) not in made and any(str(folder).startswith(c + "/") for c in closed):
                    made.add(str(folder))
                    arguments += ["--perms", "0755", "--dir", str(folder)]
            arguments += ["--ro-bind", path, path]
    return [*arguments, "--", program, "--reuid=65534", "--regid=65534", groups]
