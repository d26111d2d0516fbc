"""The launcher of sandboxed checker workers and the workers it forks (see lvegit.checkers.launcher, which
starts `python -I -m lvegit.checkers.worker MODE`, inside bubblewrap where the machine allows).

The launcher imports this code once, builds the seccomp filter once, says hello on its channel (stdin, a
SOCK_SEQPACKET socket: {"ready": true, "seccomp": null or why it is missing}) and then forks one worker
per request. A worker confines itself before it answers anything: as root, a uid of its own; inside
bubblewrap, user and mount namespaces of its own (apart from its siblings); every capability and group
gone (checked); resource limits; not dumpable; Landlock; the seccomp filter (see lvegit.sandbox). It
then answers one JSON line per request on the descriptor that was its stdout; what checker code prints
goes to /dev/null.

Worker protocol, one JSON object per line each way:
- first the worker says {"ready": true, "isolation": [one line per layer], "confined": bool}; a worker
  that is not confined (and not told that unconfined code is accepted) refuses every request that would
  run contributed code;
- then each request {"op": NAME, ...} is answered {"ok": true, ...} or {"ok": false, "kind": "error" |
  "unavailable", "message": ...}. Ops: "build" (class_name, args, sources: the checker files' text,
  read by lvegit: the repository is not in the sandbox's view) -> id, multi_run; "check" (id, prompt_in,
  prompt_out, params, runs) -> verdict; "postprocess" (id, response) -> response; "skip_reason" (id,
  response) -> reason; "probe" (targets) -> what each attack did (lvegit.sandbox.probe: `lvegit sandbox`);
  "plant" -> sibling: the files an honest worker kept, for a probe's sibling attacks; "unplant" removes
  them;
  the LVE's environment (lvegit.checkers.environment_server): "environment" (sources) -> functions, checks;
  "start" (session, state) -> state; "tool" (session, name, arguments) -> result, error; "end" (session)
  -> state; "judge_state" (check, output, before, after, calls) -> value. The launcher itself takes
  {"load": "environments"} (answered {"loaded": true}): it imports the environments' module (pydantic) once,
  for every worker it forks after.
A request with "server": "lambdas" makes a lambda worker instead (lvegit.checkers.lambda_server), confined
the same way.
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
from typing import IO, TYPE_CHECKING, Any

from lvegit.base.errors import CheckerError, CheckerUnavailable
from lvegit.checkers import lambda_server
from lvegit.checkers.channel import receive, send
from lvegit.sandbox import apart, landlock, privileges, probe, seccomp, view
from lvegit.sandbox.privileges import Limits

if TYPE_CHECKING:
    from lvegit.checkers import environment_server
    from lvegit.checkers.base import BaseChecker
    from lvegit.lve.prompt import Message


def load_checker_machinery() -> None:
    """What a custom checker's worker runs on (loading checker code, the hub's guard), imported by the
    launcher when it forks the first such worker, for it and every later one: a run of lvegit's own
    checkers (lambda workers only) never pays for it. A forked worker finds it loaded (what it may import
    once confined is not for it to find out)."""
    from lvegit.checkers import base, custom, hub  # noqa: F401


def _messages(data: list[dict[str, Any]]) -> list[Message]:
    from lvegit.lve.prompt import Message  # loaded: load_checker_machinery

    return [Message.from_json(message) for message in data]


def limit_reached(exc: BaseException, limits: Limits) -> str | None:
    """Which of the worker's own limits an exception means it ran into, in words."""
    if isinstance(exc, MemoryError):
        return limits.memory
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:  # Python ignores SIGXFSZ
        return limits.file_size
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        return limits.files
    return None


class Server:
    """Answers requests about one LVE's custom checker. `refusal`: why contributed code may not run here
    (the worker is not confined); lvegit's own probe still runs."""

    def __init__(self, lve_dir: Path, limits: Limits, refusal: str | None) -> None:
        self.lve_dir = lve_dir
        self.limits = limits
        self.refusal = refusal
        self.checkers: list[BaseChecker] = []
        self.world: environment_server.Environment | None = None
        self.planted: dict[str, Any] = {"files": []}
        from lvegit.checkers.hub import HubRequests  # the launcher loaded it (load_checker_machinery)

        self.hub = HubRequests()
        self.hub.install()  # before any contributed code runs

    def build(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.refusal is not None:
            raise CheckerError(self.refusal)
        sources = {str(name): str(text) for name, text in dict(request["sources"]).items()}
        from lvegit.checkers.custom import load_custom_checker  # loaded: load_checker_machinery

        cls = load_custom_checker(self.lve_dir, request["class_name"], sources)
        self.checkers.append(cls(**request["args"]))
        from lvegit.checkers.base import MultiRunBaseChecker  # loaded: load_checker_machinery

        return {"id": len(self.checkers) - 1, "multi_run": isinstance(self.checkers[-1], MultiRunBaseChecker)}

    def environment(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.refusal is not None:
            raise CheckerError(self.refusal)
        # the launcher loaded it once asked (Launcher.load_environments), before it forked this worker
        from lvegit.checkers import environment_server

        sources = {str(name): str(text) for name, text in dict(request["sources"]).items()}
        self.world = environment_server.Environment(sources)
        return self.world.described()

    def _world(self) -> environment_server.Environment:
        if self.world is None:
            raise CheckerError("the environment was not loaded")
        return self.world

    def start(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"state": self._world().start(str(request["session"]), request["state"])}

    def tool(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._world().call(str(request["session"]), str(request["name"]), dict(request["arguments"]))

    def end(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"state": self._world().end(str(request["session"]))}

    def judge_state(self, request: dict[str, Any]) -> dict[str, Any]:
        world = self._world()
        value = world.check(
            str(request["check"]), request["output"], request["before"], request["after"], request["calls"]
        )
        return {"value": value}

    def probe(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"probes": probe.attempt_all(request["targets"])}

    def plant(self, _request: dict[str, Any]) -> dict[str, Any]:
        self.planted = probe.plant()
        return {"sibling": self.planted}

    def unplant(self, _request: dict[str, Any]) -> dict[str, Any]:
        """Remove what `plant` wrote: where the sandbox does not hold, that is the machine's /tmp."""
        probe.unplant(self.planted)
        return {}

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        checker = self.checkers[request["id"]]
        if request.get("runs"):
            from lvegit.checkers.base import MultiRunBaseChecker  # loaded: load_checker_machinery

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


def confine_self(limits: Limits, namespaces: bool, seccomp_filter: Any) -> tuple[list[str], bool]:
    """Apply every inner layer; returns one line per layer and whether the worker is confined: no
    privilege held, seccomp loaded, and Landlock or its own namespaces (lvegit.sandbox.apart) holding it
    apart. A layer that fails is reported, never skipped silently."""
    as_root = os.geteuid() == 0
    report = [
        "namespaces: bubblewrap: own PID, network, IPC and UTS namespaces; a read-only view of the "
        "interpreter and libraries only"
        if namespaces
        else "namespaces: none (refused on this machine)"
    ]
    uid = privileges.new_worker_uid() if as_root else None
    try:
        if uid is not None:
            privileges.become(uid, os.getcwd())
        # uid and groups read back before the worker's own user namespace, where a uid it could not map
        # (AppArmor's restriction of user namespaces denies the mapping) reads as the overflow uid
        held = privileges.held_privileges(uid)
        separated = _separate() if namespaces and not held else None
        held = held or privileges.held_privileges(None)  # the capabilities that namespace gave, dropped
    except OSError as exc:
        held, separated = [f"uid change failed ({exc.strerror})"], None
    who = f"uid {uid} of its own" if uid is not None else "the invoking user's uid"
    groups = privileges.kept_groups()
    kept = f", the user's groups {groups} (no socket or file of theirs in reach)" if groups else ", no groups"
    report.append(
        f"privileges: {who}{kept}, no capabilities"
        if not held
        else f"privileges: still held: {', '.join(held)}"
    )
    if separated is not None:
        report.append(separated)
    own_uid = (uid is not None and not held) or (namespaces and not as_root)
    report.append(privileges.set_limits(limits, own_uid))
    privileges.set_dumpable(False)
    try:
        read_only = [*view.SYSTEM_PATHS, *view.import_paths(), *hub_cache_path()]
        abi = landlock.restrict(read_only, os.getcwd())
        report.append(
            f"landlock: ABI {abi}: files readable beneath the import paths only, writable in its scratch "
            "folder only; no TCP; no abstract sockets or signals outside the worker"
        )
        landlocked = True
    except Exception as exc:
        report.append(f"landlock: unavailable ({exc})")
        landlocked = False
    if seccomp_filter is None:
        report.append("seccomp: unavailable (libseccomp could not be loaded)")
    else:
        try:
            seccomp.load(seccomp_filter)
            report.append(
                "seccomp: allow-list: no processes, programs, sockets, io_uring, ptrace, mounts or terminal "
                "ioctls"
            )
        except OSError as exc:
            report.append(f"seccomp: unavailable ({exc.strerror})")
            seccomp_filter = None
    apart_held = separated == APART
    return report, not held and seccomp_filter is not None and (landlocked or apart_held)


APART = (
    "apart: own user and mount namespaces: no other worker's scratch folder, no other process in /proc "
    "or within ptrace's reach"
)


def _separate() -> str:
    """This worker apart from the launcher, bubblewrap and its siblings (lvegit.sandbox.apart): APART, or
    why not (without Landlock the worker is then not confined)."""
    try:
        apart.separate(os.getcwd())
    except OSError as exc:
        return f"apart: unavailable ({exc})"
    finally:
        privileges.clear_capabilities()  # those a new user namespace gave, even where a mount failed
    return APART


def hub_cache_path() -> list[str]:
    """The local Hugging Face cache the parent named (HF_HUB_CACHE), which stays visible, read-only."""
    found = os.environ.get("HF_HUB_CACHE")
    return [found] if found else []


def serve(request: dict[str, Any], namespaces: bool, seccomp_filter: Any) -> None:
    """Confine this process, then answer requests until stdin closes."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    limits = Limits(**request["limits"])
    report, confined = confine_self(limits, namespaces, seccomp_filter)  # a failure leaves its trace
    os.dup2(devnull, 2)
    refusal = None if confined or request["allow_unconfined"] else "the sandbox does not hold on this machine"
    server = Server(Path(request["lve_dir"]), limits, refusal)
    _send(channel, {"ready": True, "isolation": report, "confined": confined})
    for line in sys.stdin:
        _send(channel, server.handle(json.loads(line)))


def become_worker(
    request: dict[str, Any], descriptors: list[int], namespaces: bool, seccomp_filter: Any
) -> None:
    """In a child that the launcher forked: the passed descriptors become stdin, stdout and stderr, the
    request's folder the working directory, HOME and TMPDIR (the launcher's environment holds no secrets)."""
    os.setsid()  # its own process group, which killing it ends whole
    privileges.die_with_parent()
    for target, descriptor in enumerate(descriptors):
        os.dup2(descriptor, target)
        os.close(descriptor)
    workdir = request["workdir"]
    os.chdir(workdir)
    os.environ.update(HOME=workdir, TMPDIR=workdir)
    if "hub_cache" in request:  # a custom checker may load cached hub models; lambdas load none
        os.environ["HF_HUB_CACHE"] = request["hub_cache"]
    if request.get("server") == "lambdas":  # lambdas are contributed code too: the same layers
        limits = Limits(**request["limits"])
        report, confined = confine_self(limits, namespaces, seccomp_filter)
        lambda_server.serve(report, confined or bool(request["allow_unconfined"]))
        return
    serve(request, namespaces, seccomp_filter)


def _fork_worker(
    request: dict[str, Any],
    descriptors: list[int],
    keep_out: list[int],
    namespaces: bool,
    seccomp_filter: Any,
) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for descriptor in keep_out:
                os.close(descriptor)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            become_worker(request, descriptors, namespaces, seccomp_filter)
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


def launch(namespaces: bool) -> None:
    """The launcher (see lvegit.checkers.launcher): stdin is its channel to lvegit; it forks one worker
    per request and reports each one's end, until the channel closes: when lvegit ends, however it ends,
    the kernel closes its end. (PR_SET_PDEATHSIG would follow the thread that started the launcher, and
    lvegit starts it from whichever thread needs it first.) Each worker dies with the launcher.
    `namespaces`: whether bubblewrap started it (in new namespaces)."""
    privileges.set_dumpable(False)
    control = socket.socket(fileno=os.dup(0))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    landlock.abi()  # imports landlockpy once, for every worker
    try:  # once: every worker loads a copy of it
        seccomp_filter, missing = seccomp.build(), None
    except (ImportError, OSError, RuntimeError) as exc:  # pyseccomp raises RuntimeError without libseccomp
        seccomp_filter, missing = None, str(exc)
    send(control, {"ready": True, "seccomp": missing})
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
                if message.get("load") == "environments":
                    from lvegit.checkers import environment_server  # noqa: F401 - for every later worker

                    send(control, {"loaded": True})
                elif "kill" in message:
                    if message["kill"] in children:  # not reaped yet: the pid is still that child
                        with contextlib.suppress(OSError):
                            os.killpg(message["kill"], signal.SIGKILL)
                elif len(descriptors) != 3:
                    send(control, {"error": f"expected 3 descriptors, got {len(descriptors)}"})
                else:
                    if message.get("server") != "lambdas":
                        load_checker_machinery()
                    keep_out = [control.fileno(), wake_read, wake_write, selector.fileno()]
                    pid = _fork_worker(message, descriptors, keep_out, namespaces, seccomp_filter)
                    children.add(pid)
                    send(control, {"pid": pid})


if __name__ == "__main__":
    launch(sys.argv[1:] == ["namespaces"])
