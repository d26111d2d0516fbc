"""Run a command where namespaces are refused, as in a container without CAP_SYS_ADMIN or on Ubuntu 24.04
with its AppArmor default: a seccomp filter (inherited by every child) makes unshare, setns and clone
with a CLONE_NEW* flag fail with EPERM, and clone3 with ENOSYS (glibc then uses clone).

    python refuse_namespaces.py [--no-landlock | --only-landlock | --only-landlock-and-users |
                                 --only-users] COMMAND...

--no-landlock: Landlock fails too (ENOSYS, as on a kernel without it): the sandbox cannot hold.
--only-landlock (or --no-landlock --keep-namespaces): only Landlock fails, namespaces are allowed (a
kernel built without Landlock, or booted without it in `lsm=`): bubblewrap holds without it.
--only-landlock-and-users: Landlock fails, and so does making a user namespace (a kernel without Landlock
whose user namespaces are off for every user but root): bubblewrap holds as root, without one.
--only-users: only making a user namespace fails (user namespaces off but for root, or Ubuntu 24.04's
AppArmor restriction): as root, bubblewrap and Landlock hold, a worker's own namespaces do not.
"""

from __future__ import annotations

import errno
import os
import sys

import pyseccomp

CLONE_NEWUSER = 0x10000000
CLONE_NEW_FLAGS = (0x00020000, 0x04000000, 0x08000000, CLONE_NEWUSER, 0x20000000, 0x40000000, 0x02000000)
OPTIONS = ("--no-landlock", "--only-landlock", "--only-landlock-and-users", "--only-users")


def _refuse_flags(refusing: pyseccomp.SyscallFilter, flags: tuple[int, ...]) -> None:
    """unshare and clone with any of `flags` fail with EPERM; clone3 with ENOSYS (its flags are out of a
    filter's reach)."""
    refusing.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in flags:
        for call in ("unshare", "clone"):
            refusing.add_rule(
                pyseccomp.ERRNO(errno.EPERM), call, pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag)
            )


def main() -> None:
    command = sys.argv[1:]
    option = command.pop(0) if command[0] in OPTIONS else None
    if option == "--no-landlock" and command[0] == "--keep-namespaces":  # another spelling
        command.pop(0)
        option = "--only-landlock"
    refusing = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    if option not in (None, "--only-users"):
        refusing.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "landlock_create_ruleset")
    if option in ("--only-landlock-and-users", "--only-users"):
        _refuse_flags(refusing, (CLONE_NEWUSER,))
    elif option != "--only-landlock":
        refusing.add_rule(pyseccomp.ERRNO(errno.EPERM), "unshare")
        refusing.add_rule(pyseccomp.ERRNO(errno.EPERM), "setns")
        _refuse_flags(refusing, CLONE_NEW_FLAGS)
    refusing.load()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
