"""The process that runs contributed checker code: a child of the launcher `python -m
lvegit.checkers.worker` (see lvegit.checkers.launcher), which imports this code once and forks one worker
per LVE.

A worker confines itself (see lvegit.checkers.confine) before it reads the first request, then answers
one JSON line per request on the descriptor that was its stdout; what checker code prints goes to
/dev/null. The launcher starts with an environment that holds no secrets.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import selectors
import signal
import socket
import sys
from pathlib import Path
from typing import IO, Any

from lvegit.base.errors import CheckerError, CheckerUnavailable
from lvegit.checkers import confine
from lvegit.checkers.base import BaseChecker, MultiRunBaseChecker
from lvegit.checkers.channel import receive, send
from lvegit.checkers.custom import load_custom_checker, read_checker_sources
from lvegit.checkers.hub import HubRequests
from lvegit.lve.prompt import Message


def _messages(data: list[dict[str, Any]]) -> list[Message]:
    return [Message.from_json(message) for message in data]


def limit_reached(exc: BaseException, limits: confine.Limits) -> str | None:
    """Which of the worker's own limits an exception means it ran into, in words."""
    if isinstance(exc, MemoryError):
        return limits.memory
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:  # Python ignores SIGXFSZ
        return limits.file_size
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        return limits.files
    return None


class Server:
    """Answers requests about one LVE's custom checker, whose sources were read before confinement
    (the scratch tmpfs may hide the LVE's folder afterwards)."""

    def __init__(self, lve_dir: Path, sources: dict[str, str] | CheckerError, limits: confine.Limits) -> None:
        self.lve_dir = lve_dir
        self.sources = sources
        self.limits = limits
        self.checkers: list[BaseChecker] = []
        self.hub = HubRequests()
        self.hub.install()  # before any contributed code runs

    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        if isinstance(self.sources, CheckerError):
            raise self.sources
        cls = load_custom_checker(self.lve_dir, request["class_name"], self.sources)
        self.checkers.append(cls(**request["args"]))
        return {"id": len(self.checkers) - 1, "multi_run": isinstance(self.checkers[-1], MultiRunBaseChecker)}

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        checker = self.checkers[request["id"]]
        if request.get("runs"):
            assert isinstance(checker, MultiRunBaseChecker)
            prompts_in = [_messages(p) for p in request["prompt_in"]]
            prompts_out = [_messages(p) for p in request["prompt_out"]]
            return {"verdict": checker.invoke_check_runs(prompts_in, prompts_out, request["params"])}
        verdict = checker.invoke_check(
            _messages(request["prompt_in"]), _messages(request["prompt_out"]), request["params"]
        )
        return {"verdict": verdict}

    def postprocess(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"response": self.checkers[request["id"]].postprocess_response(request["response"])}

    def skip_reason(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"reason": self.checkers[request["id"]].replay_skip_reason(request["response"])}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        return {**self._answer(request), **({"hub_models": self.hub.asked} if self.hub.asked else {})}

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = getattr(self, request["op"])(request)
        except CheckerUnavailable as exc:
            return {"ok": False, "kind": "unavailable", "message": str(exc), "module": exc.module}
        except (Exception, SystemExit) as exc:  # the checker's failure is reported, the worker lives on
            limit = limit_reached(exc, self.limits)
            if limit is not None:
                return {"ok": False, "kind": "error", "message": f"the checker reached its {limit}"}
            if self.hub.missing:  # it failed for want of a model the hub cache does not hold
                model = self.hub.missing[0]
                message = (
                    f"this checker needs the hub model '{model}', which is not in the local Hugging Face "
                    "cache: download it outside the sandbox with lvegit models --download"
                )
                return {"ok": False, "kind": "unavailable", "message": message, "model": model}
            return {"ok": False, "kind": "error", "message": f"{type(exc).__name__}: {exc}"}
        return {"ok": True, **answer}


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    try:
        line = json.dumps(message)
    except (TypeError, ValueError) as exc:
        line = json.dumps(
            {"ok": False, "kind": "error", "message": f"the checker returned data that is not JSON: {exc}"}
        )
    channel.write(line + "\n")
    channel.flush()


def import_paths() -> list[str]:
    """What imports read from: the interpreter's prefixes and every sys.path entry (site-packages, the
    lvegit package), which must stay visible inside the sandbox wherever they live."""
    working = os.getcwd()  # `python -m` puts it on sys.path; it is scratch space, not an installation
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *sys.path]
    return [path for path in candidates if path and os.path.abspath(path) != working]


def hub_cache_path() -> list[str]:
    """The local Hugging Face cache the parent named (HF_HUB_CACHE), which stays visible, read-only."""
    found = os.environ.get("HF_HUB_CACHE")
    return [found] if found else []


def confine_self(limits: confine.Limits, hide: list[str]) -> tuple[list[str], bool]:
    """Apply every layer that this machine allows; returns what was applied, and whether the worker is
    confined at all: in namespaces, or at least under a uid of its own."""
    report = []
    confine.die_with_parent()
    uid = confine.worker_uid(os.getpid())  # this process's pid outside the PID namespace: unique
    try:
        keep = [*import_paths(), *hub_cache_path()]
        isolation = confine.enter_namespaces(os.getcwd(), limits, keep=keep, hide=hide)
    except OSError as exc:
        isolation = confine.Isolation.NONE
        report.append(f"namespaces failed ({exc.strerror})")
    if isolation != confine.Isolation.NONE:
        child = os.fork()
        if child:  # stays outside the new PID namespace, only to wait for pid 1 inside it
            _, status = os.waitpid(child, 0)
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)  # a signal as a shell reports it: 128 + number
        confine.die_with_parent()
        confine.finish_pid_namespace()
        report.append(
            "namespaces: read-only filesystem, homes and .git hidden, private scratch space, no network, "
            "own process tree"
        )
    elif not report:
        report.append("namespaces unavailable: filesystem and network are not isolated")
    # pid 1 of a PID namespace ignores SIGXCPU unless it handles it: end with the code that names it.
    signal.signal(signal.SIGXCPU, lambda *_: os._exit(128 + signal.SIGXCPU))
    try:
        privileges, own_uid = confine.drop_privileges(isolation, uid)
    except OSError as exc:
        if isolation != confine.Isolation.NONE:
            raise  # never run contributed code that holds a capability inside namespaces
        privileges, own_uid = f"privileges: could not change uid ({exc.strerror})", False
    report.append(privileges)
    report.append(confine.set_limits(limits, own_uid))
    report.append(confine.apply_seccomp())
    return report, isolation != confine.Isolation.NONE or own_uid


def serve(limits: confine.Limits, lve_dir: Path, hide: list[str]) -> None:
    """Read the checker's sources, confine this process, then answer requests until stdin closes."""
    try:
        sources: dict[str, str] | CheckerError = read_checker_sources(lve_dir)
    except CheckerError as exc:
        sources = exc
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    report, confined = confine_self(limits, hide)  # a failure leaves its trace on stderr for the parent
    os.dup2(devnull, 2)
    server = Server(lve_dir, sources, limits)
    _send(channel, {"ready": True, "isolation": report, "confined": confined})
    for line in sys.stdin:
        _send(channel, server.handle(json.loads(line)))


def become_worker(request: dict[str, Any], descriptors: list[int]) -> None:
    """In a child that the launcher forked: the passed descriptors become stdin, stdout and stderr, the
    request's folder the working directory, HOME and TMPDIR (the launcher's environment holds no secrets)."""
    os.setsid()  # its own process group, which killing it ends whole
    confine.allow_inspection()  # as after exec: confinement writes this process's /proc files
    for target, descriptor in enumerate(descriptors):
        os.dup2(descriptor, target)
        os.close(descriptor)
    workdir = request["workdir"]
    os.chdir(workdir)
    os.environ.update(HOME=workdir, TMPDIR=workdir, HF_HUB_CACHE=request["hub_cache"])
    serve(confine.Limits(**request["limits"]), Path(request["lve_dir"]), list(request["hide"]))


def _fork_worker(request: dict[str, Any], descriptors: list[int], keep_out: list[int]) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for descriptor in keep_out:
                os.close(descriptor)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            become_worker(request, descriptors)
        except BaseException:  # the trace goes to the worker's stderr, for the parent to show
            import traceback  # only on this path: every launcher would import it

            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)  # never back into the launcher's loop
    for descriptor in descriptors:
        os.close(descriptor)
    return pid


def _reap(control: socket.socket, children: set[int]) -> None:
    """Tell lvegit about every child that has ended, with its exit code and CPU seconds."""
    while children:
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            return
        children.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        send(control, {"ended": pid, "code": code, "cpu": usage.ru_utime + usage.ru_stime})


def launch() -> None:
    """The launcher (see lvegit.checkers.launcher): stdin is its channel to lvegit; it forks one worker
    per request and reports each one's end, until the channel closes: when lvegit ends, however it ends,
    the kernel closes its end. (PR_SET_PDEATHSIG would follow the thread that started the launcher, and
    lvegit starts it from whichever thread needs it first.) Each worker dies with the launcher."""
    confine.hide_environment_from_same_user()
    control = socket.socket(fileno=os.dup(0))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    working = os.getcwd()  # `python -m` put it on sys.path; workers have scratch folders of their own
    sys.path[:] = [path for path in sys.path if os.path.abspath(path) != working]
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    with selectors.DefaultSelector() as selector:
        selector.register(control, selectors.EVENT_READ)
        selector.register(wake_read, selectors.EVENT_READ)
        while True:
            for key, _events in selector.select():
                if key.fileobj is not control:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_read, 4096)
                    _reap(control, children)
                    continue
                message, descriptors = receive(control)
                if message is None:
                    for pid in children:
                        with contextlib.suppress(OSError):
                            os.killpg(pid, signal.SIGKILL)
                    return
                if "kill" in message:
                    if message["kill"] in children:  # not reaped yet: the pid is still that child
                        with contextlib.suppress(OSError):
                            os.killpg(message["kill"], signal.SIGKILL)
                elif len(descriptors) != 3:
                    send(control, {"error": f"expected 3 descriptors, got {len(descriptors)}"})
                else:
                    keep_out = [control.fileno(), wake_read, wake_write, selector.fileno()]
                    pid = _fork_worker(message, descriptors, keep_out)
                    children.add(pid)
                    send(control, {"pid": pid})


if __name__ == "__main__":
    launch()
