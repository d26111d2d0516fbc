from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from lvegit.base.output import line, note, print_json
from lvegit.checkers.launcher import launcher
from lvegit.checkers.sandbox import CheckerWorker, SandboxSettings
from lvegit.commands.catalog import short_help
from lvegit.commands.options import format_option
from lvegit.sandbox.probe import LANDLOCK_LIMITS
from lvegit.sandbox.refusal import ways_out


@contextlib.contextmanager
def _targets() -> Iterator[dict[str, Any]]:
    """What a worker's attacks aim at, set up outside it: a secret file and a folder that its uid could
    read and write but for the sandbox, listening TCP, unix and abstract sockets, this process."""
    with tempfile.TemporaryDirectory(prefix="lvegit-probe-") as outside:
        os.chmod(outside, 0o777)
        secret = Path(outside, "netrc")
        secret.write_text("machine example.org password not-for-checkers\n")
        secret.chmod(0o644)
        with contextlib.suppress(OSError):  # where the filesystem keeps user attributes
            os.setxattr(secret, "user.lvegit", b"not-for-checkers")
        Path(outside, "netrc-link").symlink_to(secret)
        with (
            socket.create_server(("127.0.0.1", 0)) as tcp,
            socket.socket(socket.AF_UNIX) as unix,
            socket.socket(socket.AF_UNIX) as abstract,
        ):
            unix.bind(os.path.join(outside, "socket"))
            os.chmod(os.path.join(outside, "socket"), 0o777)
            unix.listen()
            abstract_name = f"lvegit-probe-{os.getpid()}"
            abstract.bind("\0" + abstract_name)
            abstract.listen()
            yield {
                "secret_file": str(secret),
                "secret_link": os.path.join(outside, "netrc-link"),
                "outside_folder": outside,
                "tcp_port": tcp.getsockname()[1],
                "unix_socket": os.path.join(outside, "socket"),
                "abstract_socket": abstract_name,
                "lvegit_pid": os.getpid(),
            }


def probe_sandbox() -> tuple[str, list[str], dict[str, str]]:
    """Start two real workers (allowed to start even where the sandbox does not hold, to show why): the
    first keeps files where it can, as an honest checker would; the second tries every attack, on lvegit
    and on the first. Say which mode holds."""
    settings = SandboxSettings(allow_unconfined=True)
    with tempfile.TemporaryDirectory() as empty_lve, _targets() as targets:
        sibling = CheckerWorker("sandbox", Path(empty_lve), settings)
        try:
            targets["sibling"] = sibling.call({"op": "plant"})["sibling"]
            worker = CheckerWorker("sandbox", Path(empty_lve), settings)
            try:
                reply = worker.call({"op": "probe", "targets": targets})
            finally:
                worker.close()
                sibling.call({"op": "unplant"})  # unconfined, it wrote in the machine's /tmp
        finally:
            sibling.close()
    probes = {str(name): str(outcome) for name, outcome in dict(reply["probes"]).items()}
    return sandbox_mode(worker.confined, launcher().namespaces, worker.isolation), worker.isolation, probes


def sandbox_mode(confined: bool, namespaces: bool, isolation: list[str]) -> str:
    """namespaces (bubblewrap, each worker apart in namespaces of its own, Landlock and seccomp),
    namespaces-without-landlock (the same but Landlock), landlock (Landlock and seccomp) or refused."""
    if not confined:
        return "refused"
    if not namespaces:
        return "landlock"
    landlocked = any(layer.startswith("landlock: ABI") for layer in isolation)
    return "namespaces" if landlocked else "namespaces-without-landlock"


def _held(name: str, outcome: str, mode: str) -> str:
    if outcome.startswith("blocked"):
        return "held"
    if mode == "landlock" and name in LANDLOCK_LIMITS:
        return "NOT HELD: a known limit of landlock mode, see docs/security.md"
    return "NOT HELD"


@click.command("sandbox", short_help=short_help("sandbox"))
@format_option
def sandbox_command(output_format: str) -> int:
    """Show how custom checker code (checker/checker.py) is confined on this machine, tested.

    lvegit runs contributed checker code only in a sandboxed worker process. This starts one, lets it try
    what hostile code would (read a file outside, write outside its scratch folder, connect to TCP, unix
    and abstract sockets, use io_uring, open the terminal, signal lvegit or set its limits or priority,
    change a file's mode, make a set-uid file, start processes and programs, read another process's
    environment, hold groups, capabilities or uid 0) and reports what held.

    A second worker keeps files where an honest checker would, and the first tries to read and rewrite
    them, open its memory or bubblewrap's, and list the processes it can see.

    The mode is namespaces (bubblewrap + each worker in user and mount namespaces of its own + Landlock +
    seccomp), namespaces-without-landlock (a kernel without Landlock: the same but Landlock), landlock
    (namespaces refused: Landlock + seccomp; a worker can stat paths it names) or refused (contributed code
    is not run here: exit code 1, with the step that fixes it).

    \b
    Examples:
      lvegit sandbox
      lvegit sandbox --format json
    """
    mode, isolation, probes = probe_sandbox()
    if output_format == "json":
        from lvegit.publish.documents import sandbox_document  # pydantic: only for the JSON document

        print_json(sandbox_document(mode, isolation, probes))
        return 1 if mode == "refused" else 0
    line(f"Custom checker code: {mode}")
    for layer in isolation:
        line(f"  {layer}")
    line("Tried from inside a worker:")
    for name, outcome in probes.items():
        line(f"  {name}: {_held(name, outcome, mode)} ({outcome})")
    if mode == "refused":  # a finding: pull requests' checkers, lambdas and environments would not run
        note(f"contributed code would be refused here. To run it: {ways_out(isolation)}")
        return 1
    return 0
