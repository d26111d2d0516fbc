"""The Landlock ruleset of a sandboxed worker (through landlockpy), at the best ABI the kernel offers.

Filesystem: reading (files and folders) beneath the given read-only paths, everything but executing
beneath the worker's own scratch folder, nothing anywhere else: no /proc (no other process's environment
or memory), no /dev but /dev/null and /dev/urandom, no home. Network (ABI 4): no TCP bind or connect, no
UDP (ABI 8+: the rights the running kernel handles). Scopes (ABI 6): no abstract unix socket and no signal
outside the worker's own domain (lvegit, the launcher and sibling workers each live outside it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

# Devices a worker may use: /dev/null (its stdout), /dev/urandom (libraries that read it directly).
DEVICES = (("/dev/null", True), ("/dev/urandom", False), ("/dev/random", False))


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none."""
    try:
        import landlockpy
    except ImportError:  # not Linux
        return 0
    return landlockpy.abi_version()


def restrict(read_only: Iterable[str], writable: str) -> int:
    """Restrict this (single-threaded) process for good; returns the ABI used. Raises OSError (or
    landlockpy's errors) when the kernel refuses."""
    import landlockpy
    from landlockpy import AccessFS, Scope

    everything = landlockpy.fs_for_abi(landlockpy.abi_version())
    with landlockpy.Ruleset(
        handled_fs=everything,
        handled_net=landlockpy.net_for_abi(landlockpy.abi_version()),
        scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL,
    ) as ruleset:
        for path in read_only:
            if os.path.isdir(path):
                ruleset.allow_path(path, AccessFS.READ_FILE | AccessFS.READ_DIR)
            elif os.path.exists(path):
                ruleset.allow_path(path, AccessFS.READ_FILE)
        for device, write in DEVICES:
            if os.path.exists(device):
                ruleset.allow_path(
                    device, AccessFS.READ_FILE | (AccessFS.WRITE_FILE if write else AccessFS.NONE)
                )
        # No executing, no device files, no ioctl on devices, even in its own folder.
        devices = AccessFS.EXECUTE | AccessFS.IOCTL_DEV | AccessFS.MAKE_CHAR | AccessFS.MAKE_BLOCK
        ruleset.allow_path(writable, everything & ~devices)
        ruleset.restrict()
        return ruleset.abi_version
