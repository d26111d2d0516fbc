"""Run a command where namespaces are refused, as in a container without CAP_SYS_ADMIN or on Ubuntu 24.04
with its AppArmor default: a seccomp filter (inherited by every child) makes unshare, setns and clone
with a CLONE_NEW* flag fail with EPERM, and clone3 with ENOSYS (glibc then uses clone).

    python refuse_namespaces.py [--no-landlock | --only-landlock] COMMAND [ARGUMENTS...]

--no-landlock: Landlock fails too (ENOSYS, as on a kernel without it): the sandbox cannot hold.
--only-landlock: only Landlock fails, namespaces are allowed (a kernel built without Landlock, or booted
without it in `lsm=`): bubblewrap holds without it.
"""

from __future__ import annotations

import errno
import os
import sys

import pyseccomp

CLONE_NEW_FLAGS = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000)


def main() -> None:
    command = sys.argv[1:]
    refusing = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    if command[0] in ("--no-landlock", "--only-landlock"):
        refusing.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "landlock_create_ruleset")
    if command[0] != "--only-landlock":
        refusing.add_rule(pyseccomp.ERRNO(errno.EPERM), "unshare")
        refusing.add_rule(pyseccomp.ERRNO(errno.EPERM), "setns")
        refusing.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
        for flag in CLONE_NEW_FLAGS:
            refusing.add_rule(
                pyseccomp.ERRNO(errno.EPERM), "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag)
            )
    if command[0].startswith("--"):
        command = command[1:]
    refusing.load()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
