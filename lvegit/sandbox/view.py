"""What a sandboxed process may read: the interpreter and every folder lvegit imports from, the system's
libraries, and nothing else (no home, no repository). bwrap binds these read-only; Landlock allows reading
beneath them only."""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

import lvegit

# The system's libraries (Python's shared libraries, libseccomp) and the few files of /etc that the dynamic
# linker and the time functions read; the CPU list that os.cpu_count and torch read.
SYSTEM_PATHS = (
    "/usr",
    "/lib",
    "/lib64",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/localtime",
    "/sys/devices/system/cpu",
)


def import_paths(executable: str | None = None) -> list[str]:
    """The interpreter's prefixes, every sys.path entry and lvegit's own package folder (an editable
    install imports it through a finder, not sys.path). `executable`: an interpreter other than this
    one that will run (a virtual environment's), whose folder is added."""
    # Not what isolated mode (-I, how the launcher runs) leaves out of sys.path: the working directory,
    # PYTHONPATH and the user's site-packages. PYTHONPATH=$HOME put the home into the sandbox's view.
    left_out = {os.path.abspath(os.getcwd()), os.path.abspath(site.getusersitepackages())}
    left_out |= {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *sys.path]
    candidates.append(str(Path(lvegit.__file__).resolve().parent))
    if executable is not None:
        candidates.append(str(Path(executable).absolute().parent.parent))
    return [path for path in candidates if path and os.path.abspath(path) not in left_out]
