"""A pull request is hostile input. Each case here is one attack and the clear error or escaped output
lvegit must answer with; every case also checks that no secret reaches the output and that nothing
appears outside the sandbox."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lvegit.base import escape

from builders import GitRepo, RepoBuilder, instance, nest_folders, remove_nested

SECRET = "sk-hostile-test-secret-1234567890"
TOKEN = "ghp_hostiletesttoken0987654321"


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """lvegit runs with secrets in its environment, as a CI job with an API key would."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("LVEGIT_CHECKER_TIMEOUT", "1.5")
    monkeypatch.setenv("LVEGIT_CHECKER_LOAD_TIMEOUT", "3")
    yield


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 recording whatever connects to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            received.append(connection.recv(1024) or b"connected")
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join()
    server.close()


@dataclass
class Outcome:
    code: int
    text: str
    data: Any


def run_both(cli: Any, repo: RepoBuilder, command: str, *args: str) -> Outcome:
    """Run a command in text and in JSON format; both outputs are checked for secrets and escapes."""
    text = cli(command, *args, "--all", cwd=repo.root)
    data = cli(command, *args, "--all", "--format", "json", cwd=repo.root)
    for output in (text.out, text.err, data.out, data.err):
        assert SECRET not in output and TOKEN not in output
        assert "\x1b" not in output and "\r" not in output
        assert not any(line.startswith("::") for line in output.splitlines())
    return Outcome(text.code, text.out + text.err, data.json() if data.out.strip() else None)


def validate_errors(cli: Any, repo: RepoBuilder) -> list[str]:
    outcome = run_both(cli, repo, "validate")
    assert outcome.code == 1
    return [e["message"] for lve in outcome.data["lves"] for e in lve["errors"]]


def replay_statuses(cli: Any, repo: RepoBuilder) -> list[tuple[str, str | None]]:
    outcome = run_both(cli, repo, "replay")
    return [(i["status"], i["reason"]) for i in outcome.data["instances"]]


# --- lambda strings and templates: parsed against an allow-list, never eval'ed as written ---------------

LAMBDA_ESCAPES = [
    (
        "LambdaChecker",
        "func",
        "lambda r, a, b: __import__('os').system('touch /tmp/pwned')",
        "name '__import__' is not a lambda parameter",
    ),
    (
        "LambdaChecker",
        "func",
        "lambda r, a, b: ().__class__.__bases__[0].__subclasses__()",
        "attribute '__class__' is not allowed",
    ),
    ("LambdaChecker", "func", "lambda r, a, b: r.upper.__self__", "attribute '__self__' is not allowed"),
    (
        "LambdaChecker",
        "func",
        "lambda r, a, b: getattr(r, 'upper')",
        "name 'getattr' is not a lambda parameter",
    ),
    ("LambdaChecker", "func", "lambda r, a, b: eval('1')", "name 'eval' is not a lambda parameter"),
    (
        "LambdaChecker",
        "func",
        "lambda r, a, b: open('/etc/passwd').read()",
        "name 'open' is not a lambda parameter",
    ),
    (
        "LambdaChecker",
        "func",
        "lambda r, a, b: [x for x in ()].__class__",
        "attribute '__class__' is not allowed",
    ),
    ("LambdaChecker", "func", "lambda r, a, b: (lambda: 0).__code__", "attribute '__code__' is not allowed"),
    (
        "NumberChecker",
        "expected_value_func",
        "lambda a, b: __builtins__",
        "name '__builtins__' is not a lambda",
    ),
    (
        "MultiRunLambdaChecker",
        "func",
        "lambda rs, a, b: globals()",
        "name 'globals' is not a lambda parameter",
    ),
    ("LambdaChecker", "func", "lambda r, a, b: r.format_map(a)", "attribute 'format_map' is not allowed"),
    ("LambdaChecker", "func", "import os", "not valid Python"),
]


@pytest.mark.parametrize(("checker", "argument", "source", "complaint"), LAMBDA_ESCAPES)
def test_lambda_escapes_are_named_and_refused(
    repo: RepoBuilder, cli: Any, checker: str, argument: str, source: str, complaint: str
) -> None:
    test: dict[str, Any] = {"checker_args": {"checker_name": checker, argument: source}}
    if checker.startswith("MultiRun"):
        test.update(prompt=None, multi_run_prompt=[{"name": "r", "prompt": [{"content": "{a}{b}"}]}])
    repo.lve(
        "hostile/lambda",
        test,
        instances={"i.jsonl": [instance(["3"] if "Multi" in checker else "3", True, a=1, b=2)]},
    )
    [message] = validate_errors(cli, repo)
    assert complaint in message and checker in message
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and reason is not None
    assert reason.startswith("repository/hostile/lambda/openai--gpt-4o-mini/test.json: checker_args")
    assert not Path("/tmp/pwned").exists()


def test_a_lambda_without_end_costs_its_own_instances_an_error_and_the_others_are_judged(
    repo: RepoBuilder, cli: Any
) -> None:
    """A loop of 10^10 steps ran for hours (the whole job, in CI): it stops at its verdict's budget."""
    endless = "lambda r, a, b: len([0 for i in range(10**5) for j in range(10**5)]) > 0"
    recorded = {"i.jsonl": [instance("3", True, a=1, b=2)]}
    checker = {"checker_name": "LambdaChecker", "func": endless}
    repo.lve("hostile/endless", {"checker_args": checker}, instances=recorded)
    repo.lve("plain/sum", instances=recorded)
    outcome = run_both(cli, repo, "replay")
    statuses = {(i["lve"].split("/")[1], i["status"]): i for i in outcome.data["instances"]}
    assert set(statuses) == {("hostile", "error"), ("plain", "reproduced")}
    stopped = statuses["hostile", "error"]
    assert (stopped["file"], stopped["line"]) == (
        "repository/hostile/endless/openai--gpt-4o-mini/instances/i.jsonl",
        1,
    )
    # its step budget stops it, or on a loaded machine the verdict's time limit first: either is its budget
    assert stopped["reason"].startswith(
        (
            "checker_args.func: the lambda does more work than one verdict may",
            "checker_args.func: the lambda did not end within 5 s",
        )
    )
    assert outcome.code == 1


@pytest.mark.parametrize(
    ("where", "template"),
    [("prompt", "{a.__class__.__mro__}"), ("prompt", "{b.__init__.__globals__}"), ("pattern", "{a[0]}")],
)
def test_template_attribute_walks_are_refused(repo: RepoBuilder, cli: Any, where: str, template: str) -> None:
    if where == "prompt":
        test: dict[str, Any] = {"prompt": [{"content": f"{template} {{a}} {{b}}"}]}
    else:
        test = {"checker_args": {"checker_name": "ExactMatchChecker", "pattern": template}}
    repo.lve("hostile/template", test)
    [message] = validate_errors(cli, repo)
    assert "is not a parameter name" in message


# --- custom checker code: runs confined, without secrets; failures cost only its own LVE ------------------

CUSTOM = {"checker_args": {"checker_name": "Evil"}, "prompt": [{"content": "{a}{b}"}]}


def evil(body: str, imports: str = "import os") -> str:
    return (
        f"{imports}\nfrom lvegit.checkers import BaseChecker\n"
        "class Evil(BaseChecker):\n"
        "    def is_safe(self, prompt, response, param_values=None):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    )


def custom_lve(repo: RepoBuilder, code: str, passed: bool = True) -> Path:
    return repo.lve(
        "hostile/custom",
        CUSTOM,
        files={"checker/checker.py": code},
        instances={"i.jsonl": [instance("3", passed, a=1, b=2)]},
    )


def test_checker_sees_no_secret_in_its_environment(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(repo, evil("raise ValueError(sorted(os.environ.items()))"))
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and reason is not None
    assert "OPENAI_API_KEY" not in reason and "GITHUB_TOKEN" not in reason and "HOME" in reason


def test_checker_cannot_read_other_processes_environments(
    repo: RepoBuilder, cli: Any, confined: bool
) -> None:
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    scan = (
        "found = []\n"
        "try:\n"
        "    pids = os.listdir('/proc')\n"
        "except OSError:\n"
        "    pids = [str(os.getppid()), str(os.getpid() - 1)]\n"
        "for pid in pids:\n"
        "    try:\n"
        "        found.append(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except Exception:\n"
        "        pass\n"
        f"return not any({SECRET[:12]!r}.encode() in blob for blob in found)"
    )
    custom_lve(repo, evil(scan))
    assert replay_statuses(cli, repo) == [("reproduced", None)]


def test_checker_cannot_write_outside_its_sandbox(
    repo: RepoBuilder, cli: Any, tmp_path: Path, confined: bool
) -> None:
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    marker = tmp_path / "outside-marker"
    lve_dir = custom_lve(
        repo,
        evil(
            f"open('scratch.txt', 'w').write('fine')\n"
            f"for target in ({str(marker)!r}, '/tmp/lvegit-marker'):\n"
            "    try:\n"
            "        open(target, 'w').write('escaped')\n"
            "    except OSError:\n"
            "        pass\n"
            "return True"
        ),
    )
    assert replay_statuses(cli, repo) == [("reproduced", None)]
    assert not marker.exists() and not Path("/tmp/lvegit-marker").exists()
    assert not (lve_dir / "scratch.txt").exists()


def test_checker_cannot_rewrite_stored_instances(repo: RepoBuilder, cli: Any, confined: bool) -> None:
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    stored = repo.root / "repository/hostile/custom/openai--gpt-4o-mini/instances/i.jsonl"
    custom_lve(
        repo,
        evil(
            "for path in (" + repr(str(stored)) + ", 'instances/i.jsonl', '../instances/i.jsonl'):\n"
            "    try:\n"
            "        open(path, 'w').write('')\n"
            "    except OSError:\n"
            "        pass\n"
            "return True"
        ),
    )
    before = stored.read_bytes()
    assert replay_statuses(cli, repo) == [("reproduced", None)]
    assert stored.read_bytes() == before


def test_checker_cannot_open_sockets(repo: RepoBuilder, cli: Any, listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    custom_lve(
        repo, evil(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1).send(b'x')")
    )
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and reason is not None and "PermissionError" in reason
    assert received == []


def test_checker_that_loops_forever_times_out(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(repo, evil("while True:\n    pass"))
    repo.lve("hostile/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    statuses = replay_statuses(cli, repo)
    assert statuses[0][0] == "error" and "did not answer within 1.5 s" in str(statuses[0][1])
    assert statuses[1] == ("reproduced", None)  # the run goes on


def test_checker_cannot_fork_or_run_programs(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    custom_lve(
        repo,
        evil(
            "import subprocess\n"
            "for attempt in (os.fork, lambda: subprocess.run(['touch', " + repr(str(marker)) + "])):\n"
            "    try:\n"
            "        if attempt() == 0:\n"
            "            os._exit(0)\n"
            "    except PermissionError:\n"
            "        pass\n"
            "return True"
        ),
    )
    assert replay_statuses(cli, repo) == [("reproduced", None)]
    assert not marker.exists()


def test_checker_that_floods_memory_fails_alone(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(repo, evil("data = bytearray(50 * 1024**3)\nreturn True"))
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and str(reason).endswith("the checker reached its memory limit of 2 GiB")


def test_checker_printing_garbage_cannot_corrupt_output(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(
        repo,
        evil(
            "import sys\n"
            'print(\'\\x1b[2J::set-output name=x::1\\n{"not": "json"\')\n'
            "sys.stderr.write('\\x1b[31mnoise')\n"
            "os.write(1, b'raw garbage')\n"
            "return True"
        ),
    )
    assert replay_statuses(cli, repo) == [("reproduced", None)]


def test_checker_that_exits_costs_only_its_lve(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(repo, evil("os._exit(7)"))
    repo.lve("hostile/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    statuses = replay_statuses(cli, repo)
    assert statuses[0][0] == "error" and "the checker process exited (code 7)" in str(statuses[0][1])
    assert statuses[1] == ("reproduced", None)


def test_checker_that_hangs_while_importing_times_out(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(repo, evil("return True", imports="import os\nwhile True:\n    pass"))
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and "did not answer within 3 s" in str(reason)


def test_checker_answering_nonsense_is_an_error(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(repo, evil("return 'definitely'"))
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and "expected True or False" in str(reason)


def test_checker_flooding_its_reply_is_cut_off(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LVEGIT_CHECKER_TIMEOUT", "20")  # building 40 MiB of JSON is slow on a busy machine
    code = (
        evil("return True")
        + "    def replay_skip_reason(self, response):\n        return 'x' * (40 * 1024**2)\n"
    )
    custom_lve(repo, code)
    [(status, reason)] = replay_statuses(cli, repo)
    assert status == "error" and "sent more than" in str(reason)


# --- the third round: a checker that tries to get out reports what it saw; it must have seen nothing ----


def secret_forms(secret: str) -> list[str]:
    """A secret as an exfiltrating checker might disguise it: masking a value is a last line, not the defence."""
    return [secret, secret[::-1], base64.b64encode(secret.encode()).decode(), " ".join(secret)]


def assert_no_secret(output: str, *secrets: str) -> None:
    for secret in secrets:
        for form in secret_forms(secret):
            assert form not in output


@pytest.fixture
def outside_scratch() -> Iterator[Path]:
    """A folder that none of the sandbox's scratch mounts (/tmp, /var/tmp, /dev/shm) covers, as a home or
    a checkout outside /tmp is: what a checker sees there is the real filesystem, unless it is hidden."""
    for parent in (Path("/var/lib"), Path(__file__).resolve().parent):
        scratch = any(str(parent).startswith(folder) for folder in ("/tmp", "/var/tmp", "/dev/shm"))
        if not scratch and os.access(parent, os.W_OK):
            folder = Path(tempfile.mkdtemp(prefix=".lvegit-outside-", dir=parent))
            folder.chmod(0o755)
            yield folder
            shutil.rmtree(folder, ignore_errors=True)
            return
    pytest.skip("no writable folder outside the sandbox's scratch mounts")


REPORTING = """import base64, ctypes, json, os, threading
from lvegit.checkers import BaseChecker
libc = ctypes.CDLL(None, use_errno=True)

def attempt(action):
    try:
        result = action()
    except Exception as exc:
        return 'refused: ' + type(exc).__name__
    return result

def disguised(text):
    return [text, text[::-1], base64.b64encode(text.encode()).decode(), ' '.join(text)]

class Evil(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        seen = {}
"""


def reporting_checker(body: str) -> str:
    """A checker whose body fills `seen` with what each attempt got; it raises it, disguised, as its error."""
    lines = "".join(f"        {line}\n" for line in body.strip().splitlines())
    return REPORTING + lines + "        raise ValueError(json.dumps(disguised(json.dumps(seen))))\n"


def reported(cli: Any, repo: RepoBuilder) -> dict[str, Any]:
    """What the reporting checker saw, read back from its error (secrets checked absent on the way)."""
    outcome = run_both(cli, repo, "replay")
    assert_no_secret(outcome.text + json.dumps(outcome.data), SECRET, TOKEN)
    [item] = outcome.data["instances"]
    message = item["reason"].split("ValueError: ", 1)[1]
    return dict(json.loads(json.loads(message)[0]))


def test_a_checker_holds_no_capability_and_cannot_regain_one(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(
        repo,
        reporting_checker(
            """
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
seen['capget'] = libc.capget(header, data)
seen['capabilities'] = list(data)
seen['uid'] = str(os.getuid())
seen['setuid 0'] = attempt(lambda: os.setuid(0))
seen['sethostname'] = libc.sethostname(b'pwned', 5)
seen['proc/sys'] = attempt(lambda: open('/proc/sys/kernel/hostname', 'w').write('pwned'))
seen['drop_caches'] = attempt(lambda: open('/proc/sys/vm/drop_caches', 'w').write('3'))
seen['unshare'] = libc.unshare(0x10000000)
"""
        ),
    )
    seen = reported(cli, repo)
    assert seen["capget"] == 0 and seen["capabilities"] == [0] * 6
    assert seen["setuid 0"] == "refused: PermissionError" or seen["uid"] == "0"  # 0: of its user namespace
    assert seen["sethostname"] == -1 and seen["unshare"] == -1
    assert seen["proc/sys"].startswith("refused") and seen["drop_caches"].startswith("refused")


def test_a_checker_can_neither_unmount_nor_remount(
    repo: RepoBuilder, cli: Any, outside_scratch: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    github_env = outside_scratch / "set_env"
    github_env.write_text("")
    monkeypatch.setenv("GITHUB_ENV", str(github_env))
    marker = outside_scratch / "marker"
    custom_lve(
        repo,
        reporting_checker(
            f"""
class Attr(ctypes.Structure):
    _fields_ = [('set', ctypes.c_uint64), ('clr', ctypes.c_uint64), ('prop', ctypes.c_uint64), ('userns', ctypes.c_uint64)]
clear_read_only = Attr(0, 1, 0, 0)
for point in ('/tmp', '/proc', '/', '/dev/shm'):
    seen['umount ' + point] = libc.umount2(point.encode(), 2)
seen['mount_setattr'] = libc.syscall(442, -100, b'/', 0x8000, ctypes.byref(clear_read_only), ctypes.sizeof(clear_read_only))
seen['open_tree'] = libc.syscall(428, -100, b'/', 1)
seen['marker'] = attempt(lambda: open({str(marker)!r}, 'w').write('escaped'))
seen['GITHUB_ENV'] = attempt(lambda: open({str(github_env)!r}, 'a').write('NODE_OPTIONS=--require=/tmp/x\\n'))
"""
        ),
    )
    seen = reported(cli, repo)
    assert all(seen[f"umount {point}"] == -1 for point in ("/tmp", "/proc", "/", "/dev/shm"))
    assert seen["mount_setattr"] == -1 and seen["open_tree"] == -1
    assert seen["marker"].startswith("refused") and seen["GITHUB_ENV"].startswith("refused")
    assert not marker.exists() and github_env.read_text() == ""


def test_a_checker_sees_no_home_no_git_credentials_and_no_other_process(
    cli: Any, outside_scratch: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    """The secrets a job holds, in every place a checker found them in the third round: the lvegit
    process's environment (after unmounting /proc), the user's home and the checkout's .git/config."""
    if not confined:
        pytest.skip("the sandbox does not hold here: contributed code is refused")
    home = outside_scratch / "home"
    (home / ".cache/huggingface").mkdir(parents=True)
    (home / ".netrc").write_text(f"machine api.github.com login x password {TOKEN}\n")
    (home / ".cache/huggingface/token").write_text(SECRET)
    runner_temp = outside_scratch / "runner-temp"
    runner_temp.mkdir()
    (runner_temp / "set_env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    for path in [home, *home.rglob("*"), runner_temp, *runner_temp.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # readable by anyone who can reach it
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RUNNER_TEMP", str(runner_temp))
    repo = RepoBuilder(outside_scratch / "checkout")
    custom_lve(
        repo,
        reporting_checker(
            f"""
libc.umount2(b'/proc', 2)
found = []
for pid in attempt(lambda: os.listdir('/proc')):
    if pid.isdigit() and int(pid) != os.getpid():
        found.append(attempt(lambda: open(f'/proc/{{pid}}/environ', 'rb').read().decode('latin-1')))
for path in ({str(home / ".netrc")!r}, {str(home / ".cache/huggingface/token")!r}, {str(runner_temp / "set_env")!r},
             {str(repo.root / ".git/config")!r}):
    found.append(attempt(lambda: open(path).read()))
seen['found'] = [text[:100] for text in found if isinstance(text, str) and not text.startswith('refused')]
"""
        ),
    )
    (repo.root / ".git").mkdir()
    (repo.root / ".git/config").write_text(f"[http]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n")
    for path in [outside_scratch, *outside_scratch.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    seen = reported(cli, repo)
    assert seen["found"] == []


def test_a_checker_cannot_start_threads_without_bound(repo: RepoBuilder, cli: Any) -> None:
    custom_lve(
        repo,
        reporting_checker(
            """
stop = threading.Event()
started = 0
try:
    for _ in range(1500):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
except RuntimeError:
    pass
stop.set()
seen['started'] = started
"""
        ),
    )
    assert reported(cli, repo)["started"] < 128


def test_slow_checkers_stop_at_the_lve_budget_and_the_rest_is_not_judged(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LVEGIT_CHECKER_TIMEOUT", "5")
    monkeypatch.setenv("LVEGIT_CHECKER_LVE_BUDGET", "2.5")
    repo.lve(
        "hostile/slow",
        CUSTOM,
        files={"checker/checker.py": evil("import time\ntime.sleep(1)\nreturn True")},
        instances={"i.jsonl": [instance(str(n), True, a=1, b=2) for n in range(6)]},
    )
    started = time.monotonic()
    result = cli("replay", "--all", "--no-cache", "--format", "json", cwd=repo.root).json()
    assert time.monotonic() - started < 10  # six seconds without the budget
    statuses = [(item["status"], item["reason"]) for item in result["instances"]]
    judged = [status for status, _ in statuses if status == "reproduced"]
    not_judged = [reason for status, reason in statuses if status == "error"]
    assert 1 <= len(judged) <= 2 and len(judged) + len(not_judged) == 6
    assert all(
        "not judged: custom checker code used up its time budget (2.5 s for each LVE, LVEGIT_CHECKER_LVE_BUDGET)"
        in str(r)
        for r in not_judged
    )


def test_a_prompt_that_fills_past_a_conversations_bound_is_an_error_of_its_instance(
    repo: RepoBuilder, cli: Any
) -> None:
    """Two hundred `{a}` messages filled with a one-million-character argument: 200 MB for one instance
    (thousands of them, gigabytes). The filling stops at the bound; the other LVE is judged as usual."""
    many = {"prompt": [{"content": "{a}{b}"}] * 200}
    repo.lve(
        "hostile/many_messages", many, instances={"i.jsonl": [instance("3", True, a="x" * 1_000_000, b=2)]}
    )
    repo.lve("plain/sum", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    outcome = run_both(cli, repo, "replay")
    by_lve = {item["lve"].split("/")[1]: item for item in outcome.data["instances"]}
    assert by_lve["hostile"]["status"] == "error"
    assert "the prompt fills to more than 16,777,216 characters" in by_lve["hostile"]["reason"]
    assert by_lve["hostile"]["file"].endswith("hostile/many_messages/openai--gpt-4o-mini/instances/i.jsonl")
    assert by_lve["plain"]["status"] == "reproduced"


def test_lvegit_checkers_on_an_lves_strings_stop_at_its_budget_and_other_lves_are_judged(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regex verdict may take its 2 s timeout and a lambda its work budget: a pull request with a
    thousand such instances held a job for half an hour. Their time is the LVE's budget, as custom code's is."""
    monkeypatch.setenv("LVEGIT_CHECKER_LVE_BUDGET", "0.5")
    catastrophic = {"checker_name": "RegexChecker", "pattern": "(a|aa)+$", "match_safe": False}
    backtracking = "a" * 5000 + "!"
    repo.lve(
        "hostile/backtracking",
        {"checker_args": catastrophic},
        instances={"i.jsonl": [instance(backtracking, True, a=n, b=2) for n in range(4)]},
    )
    repo.lve("plain/sum", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("replay", "--all", "--no-cache", "--format", "json", cwd=repo.root).json()
    reasons = [item["reason"] for item in result["instances"] if item["lve"].startswith("repository/hostile")]
    # the first stops at the budget, not at the pattern's 2 s timeout; the others are not begun
    budget = "not judged: its checker used up its time budget (0.5 s for each LVE, LVEGIT_CHECKER_LVE_BUDGET)"
    assert reasons == [budget] * 4
    [plain] = [item for item in result["instances"] if item["lve"].startswith("repository/plain")]
    assert plain["status"] == "reproduced"


def test_a_pattern_judged_over_many_tool_calls_stops_at_the_budgets(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool-call pattern judged over 200 recorded calls, each match well under the pattern's 2 s timeout
    (tens of ms; seconds in all), held a check 39 s under a 5 s budget: the budgets were asked before each
    verdict only. Each match is now bounded by what is left of them: the verdict stops at the LVE's budget
    (and at the command's, where that is less), naming it; the other LVEs are judged."""
    from builders import TOOL_TEST

    calls = [
        {
            "id": f"c{n}",
            "name": "send_email",
            "arguments": json.dumps({"to": "a" * 20 + "!"}),
            "result": "sent",
        }
        for n in range(200)
    ]
    response = {"steps": [{"content": None, "tool_calls": calls}, {"content": "Done."}]}
    checker = {"checker_name": "ToolCallChecker", "tools": "send_email", "arguments_pattern": "(a|aa)+$"}
    repo.lve(
        "hostile/calls",
        {**TOOL_TEST, "checker_args": checker},
        instances={"i.jsonl": [instance(response, True, user="Ann", dish=str(n)) for n in range(2)]},
    )
    repo.lve("plain/sum", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    for variable, value, which in (
        ("LVEGIT_CHECKER_LVE_BUDGET", "0.5", "0.5 s for each LVE, LVEGIT_CHECKER_LVE_BUDGET"),
        ("LVEGIT_CHECKER_BUDGET", "0.4", "0.4 s for the whole command, LVEGIT_CHECKER_BUDGET"),
    ):
        monkeypatch.setenv(variable, value)
        result = cli("replay", "--all", "--no-cache", "--format", "json", cwd=repo.root).json()
        by_lve = {item["lve"].split("/")[1]: item for item in result["instances"]}
        reasons = [item["reason"] for item in result["instances"] if "/hostile/" in item["lve"]]
        assert reasons == [f"not judged: its checker used up its time budget ({which})"] * 2
        if variable == "LVEGIT_CHECKER_LVE_BUDGET":
            assert by_lve["plain"]["status"] == "reproduced"


def test_the_command_budget_bounds_every_lve_together(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LVEGIT_CHECKER_TIMEOUT", "5")
    monkeypatch.setenv("LVEGIT_CHECKER_BUDGET", "3")
    for name in ("one", "two", "three"):
        repo.lve(
            f"hostile/{name}",
            CUSTOM,
            files={"checker/checker.py": evil("import time\ntime.sleep(1)\nreturn True")},
            instances={"i.jsonl": [instance(str(n), True, a=1, b=2) for n in range(3)]},
        )
    result = cli("replay", "--all", "--no-cache", "--format", "json", cwd=repo.root).json()
    reasons = [item["reason"] for item in result["instances"] if item["status"] == "error"]
    assert len(reasons) >= 5
    assert all(
        "used up its time budget (3 s for the whole command, LVEGIT_CHECKER_BUDGET)" in reason
        for reason in reasons
    )


def test_a_classifier_model_folder_from_the_pull_request_is_never_loaded(repo: RepoBuilder, cli: Any) -> None:
    """A 2 KB folder whose config asks for a vocabulary of 40 million entries: lvegit's own process would
    load it outside any limit. A model an LVE names comes from the hub cache only."""
    lve_dir = repo.lve(
        "hostile/model-folder",
        {
            "checker_args": {
                "checker_name": "ToxicityChecker",
                "toxicity_threshold": 0.5,
                "model": "PLACEHOLDER",
            }
        },
        instances={"i.jsonl": [instance("hello", True, a=1, b=2)]},
    )
    folder = lve_dir / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 40_000_000}))
    test = json.loads((lve_dir / "test.json").read_text())
    for model in (str(folder), "repository/hostile/model-folder/openai--gpt-4o-mini/model"):
        test["checker_args"]["model"] = model
        (lve_dir / "test.json").write_text(json.dumps(test))
        [(status, reason)] = replay_statuses(cli, repo)
        assert status == "error"
        assert f"the model '{model}' names a folder, not a hub model" in str(reason)


# --- files: paths stay inside the LVE; sizes, nesting and encodings are checked ------------------------


def outside_file(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_text(f"{SECRET}\n")
    return target


def test_prompt_file_path_traversal(repo: RepoBuilder, cli: Any) -> None:
    repo.lve(
        "hostile/traversal",
        {"prompt": None, "prompt_file": "../../../../outside.txt"},
    )
    assert validate_errors(cli, repo) == ["'../../../../outside.txt' points outside the LVE directory"]


@pytest.mark.parametrize("link", ["test.prompt", "instances/i.jsonl", "checker/checker.py", "test.json"])
def test_symlinks_out_of_the_lve_are_refused(repo: RepoBuilder, cli: Any, tmp_path: Path, link: str) -> None:
    test: dict[str, Any] = {"prompt": None, "prompt_file": "test.prompt", "prompt_parameters": []}
    files = {"test.prompt": "hello"}
    if link == "checker/checker.py":
        test["checker_args"] = {"checker_name": "Evil"}
    lve_dir = repo.lve("hostile/link", test, files=files)
    (lve_dir / link).parent.mkdir(exist_ok=True)
    (lve_dir / link).unlink(missing_ok=True)
    (lve_dir / link).symlink_to(outside_file(tmp_path))
    errors = validate_errors(cli, repo)
    assert any("points outside the LVE directory" in e for e in errors), errors


def test_a_test_json_linked_to_a_pipe_outside_never_blocks_a_cached_check(
    repo: RepoBuilder, tmp_path: Path
) -> None:
    """The cache key reads test.json before anything else: it must refuse the link as loading does, not
    wait forever on a pipe that nobody writes."""
    lve_dir = repo.lve("hostile/pipe")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (lve_dir / "test.json").unlink()
    (lve_dir / "test.json").symlink_to(pipe)
    done = subprocess.run(
        [sys.executable, "-m", "lvegit", "check", "--all"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "test.json: 'test.json' points outside the LVE directory" in done.stdout


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (b"{" + b" " * (1024 * 1024 + 1) + b"}", "file is too large"),
        (b"[" * 200 + b"]" * 200, "nested deeper than 64 levels"),
        ('{"description": "caf\xe9"}'.encode("latin-1"), "not valid UTF-8"),
        (b"\x7fELF\x02\x01\x01\x00", "binary content"),
    ],
)
def test_broken_test_json(repo: RepoBuilder, cli: Any, content: bytes, complaint: str) -> None:
    repo.lve("hostile/file", raw_test=content)
    [message] = validate_errors(cli, repo)
    assert complaint in message


def test_hostile_instance_lines_are_reported_and_the_rest_kept(repo: RepoBuilder, cli: Any) -> None:
    good = json.dumps(instance("3", True, a=1, b=2)).encode()
    lines = [
        good,
        b'{"response": "' + b"x" * (5 * 1024 * 1024) + b'"}',
        b'{"args": ' + b"[" * 100 + b"]" * 100 + b"}",
        b'{"response": "\xff\xfe"}',
        good,
    ]
    repo.lve("hostile/instances", instances={"i.jsonl": b"\n".join(lines) + b"\n"})
    errors = validate_errors(cli, repo)
    assert [e.split(" (")[0] for e in errors] == [
        "line is too long",
        "JSON nested deeper than 64 levels",
        "not valid UTF-8",
    ]
    statuses = [s for s, _ in replay_statuses(cli, repo)]
    assert statuses == ["reproduced", "error", "error", "error", "reproduced"]


# --- regexes from LVEs have a time limit ---------------------------------------------------------------


@pytest.mark.parametrize(
    "checker_args",
    [
        {"checker_name": "RegexChecker", "pattern": "^(a|aa)+$", "match_safe": False},
        {
            "checker_name": "LambdaChecker",
            "func": "lambda r, a, b: re.search('(\\\\w+\\\\s?)+$', r) is not None",
        },
    ],
)
def test_catastrophic_regexes_time_out(
    repo: RepoBuilder, cli: Any, checker_args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lvegit.checkers.safe_regex.REGEX_TIMEOUT_SECONDS", 0.3)
    rows = [instance("a" * 30000 + "!", True, a=1, b=2), instance("3", True, a=1, b=2)]
    repo.lve("hostile/regex", {"checker_args": checker_args}, instances={"i.jsonl": rows})
    statuses = replay_statuses(cli, repo)
    # a lambda's regex runs in the lambda worker, with the regex's own 2 s timeout (not this process's
    # 0.3 s): on a busy machine the worker's 5 s may end it first
    stopped = ("timed out", "the lambda did not end within 5 s")
    assert statuses[0][0] == "error" and any(why in str(statuses[0][1]) for why in stopped)
    assert statuses[1][0] == "reproduced"


# --- what an LVE or a model wrote is escaped wherever lvegit prints it ---------------------------------


def test_escape_sequences_and_workflow_commands_in_lve_fields(repo: RepoBuilder, cli: Any) -> None:
    nasty = "\x1b[2J\x1b]0;pwned\x07evil\n::add-mask::x\r::set-output name=y::z"
    repo.lve("hostile/fields", {"tags": [{"name": "severity", "value": nasty}]})
    outcome = run_both(cli, repo, "validate")
    assert "\\x1b[2J\\x1b]0;pwned\\x07evil\\n::add-mask::x\\r::set-output" in outcome.text


def test_responses_with_escapes_and_secrets_are_escaped_and_masked(repo: RepoBuilder, cli: Any) -> None:
    response = f"\x1b[31m{SECRET}\n::error::fake <b>html</b> @team"
    repo.lve("hostile/response", instances={"i.jsonl": [instance(response, True, a=1, b=2)]})
    outcome = run_both(cli, repo, "replay")
    assert "***" in outcome.text and "\\x1b[31m" in outcome.text


@pytest.mark.parametrize(
    ("function", "text", "expected"),
    [
        (escape.markdown, "<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert\\(1\\)&gt;"),
        (
            escape.markdown,
            "ping @lve-org/maintainers and @octocat",
            "ping @\u200blve\\-org/maintainers and @\u200boctocat",
        ),
        (
            escape.markdown,
            "[click](https://evil.example) **x**",
            "\\[click\\]\\(https:\u200b//evil\\.example\\) \\*\\*x\\*\\*",
        ),
        (escape.markdown, f"key {SECRET}", "key \\*\\*\\*"),
        (escape.markdown, "| table | break |", "\\| table \\| break \\|"),
        (escape.workflow_data, "50%\n::add-mask::x", "50%25%0A::add-mask::x"),
        (escape.workflow_property, "a:b,c", "a%3Ab%2Cc"),
        (escape.console, "\x9b31m\u2028x", "\\x9b31m\\u2028x"),
    ],
)
def test_escaping_for_each_destination(function: Callable[[str], str], text: str, expected: str) -> None:
    assert function(text) == expected


def test_code_blocks_cannot_be_closed_early() -> None:
    block = escape.code_block("before\n```\n# injected heading\n````\nafter")
    fence = block.splitlines()[0].removesuffix("text")
    assert fence == "`````"
    assert block.endswith("\n`````")
    assert block.count(fence) == 2


def test_environment_of_this_test_run_holds_the_secrets() -> None:
    """Guards the corpus itself: the secrets it looks for are really present in lvegit's process."""
    assert os.environ["OPENAI_API_KEY"] == SECRET and SECRET in escape.known_secrets()


def test_a_secret_set_after_start_up_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    late = "late-secret-value-0123456789"
    assert escape.mask(f"key {late}") == f"key {late}"  # not a secret yet
    monkeypatch.setenv("LATE_API_KEY", late)
    assert escape.mask(f"key {late}") == "key ***"
    monkeypatch.delenv("LATE_API_KEY")
    assert escape.mask(f"key {late}") == f"key {late}"


# --- links out of the repository: no reader follows one out, no writer writes through one -------------


def link_target(tmp_path: Path, kind: str, link: Path) -> str:
    """Where a committed link points: a file outside the repository, a device, itself, or nowhere."""
    return {
        "outside": str(outside_file(tmp_path)),
        "device": "/dev/zero",
        "itself": link.name,
        "dangling": "missing.txt",
    }[kind]


LINK_COMPLAINTS = {
    "outside": "points outside the LVE directory",
    "device": "points outside the LVE directory",
    "itself": "a loop of links",
    "dangling": "is a link to a file that does not exist",
}


@pytest.mark.parametrize("kind", list(LINK_COMPLAINTS))
@pytest.mark.parametrize("link", ["test.json", "test.prompt", "instances/i.jsonl", "checker/checker.py"])
def test_every_reader_refuses_links_out_to_devices_and_loops(
    repo: RepoBuilder, cli: Any, tmp_path: Path, link: str, kind: str
) -> None:
    test: dict[str, Any] = {"prompt": None, "prompt_file": "test.prompt", "prompt_parameters": []}
    if link == "checker/checker.py":
        test["checker_args"] = {"checker_name": "Evil"}
    lve_dir = repo.lve("hostile/link", test, files={"test.prompt": "hello"})
    repo.lve("hostile/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    path = lve_dir / link
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to(link_target(tmp_path, kind, path))
    for command in ("validate", "check", "list"):
        outcome = run_both(cli, repo, command)
        assert outcome.code in (0, 1) and "Traceback" not in outcome.text, outcome.text
    errors = validate_errors(cli, repo)
    assert any(LINK_COMPLAINTS[kind] in e for e in errors), errors
    check = run_both(cli, repo, "check")
    fine = [lve for lve in check.data["lves"] if lve["path"].startswith("repository/hostile/fine")]
    assert [i["status"] for i in fine[0]["instances"]] == ["reproduced"]  # the other LVE as usual


def forged_cache(repo: RepoBuilder, cli: Any, tmp_path: Path) -> Path:
    """A cache outside the repository whose entries say that a failing instance reproduces."""
    repo.lve(instances={"i.jsonl": [instance("4", True, a=1, b=2)]})  # 1 + 2 is not 4
    assert cli("check", "--all", cwd=repo.root).code == 1
    forged = tmp_path / "forged-cache"
    (repo.root / ".lvegit-cache").rename(forged)
    for entry in forged.glob("v1/*/*"):
        data = json.loads(entry.read_text())
        if data.get("kind") == "lve":
            data["check"]["instances"][0].update(status="reproduced", replayed=True)
            data["check"]["replay"] = {"reproduced": 1, "mismatch": 0, "skipped": 0, "error": 0}
        else:
            data = {"verdict": True, "note": None}
        entry.write_text(json.dumps(data))
    return forged


@pytest.mark.parametrize("committed", [True, False])
def test_a_cache_folder_that_is_a_link_is_refused(
    repo: RepoBuilder, cli: Any, tmp_path: Path, committed: bool
) -> None:
    """A link named .lvegit-cache would lead the cache to forged entries (and its writes) elsewhere."""
    git = GitRepo(repo.root)
    forged = forged_cache(repo, cli, tmp_path)
    (repo.root / ".lvegit-cache").symlink_to(forged)
    if committed:
        git.commit("a cache that is a link")
    before = sorted(p.name for p in forged.rglob("*"))
    for command in ("check", "replay"):
        result = cli(command, "--all", cwd=repo.root)
        assert result.code == 1 and "1 mismatch" in result.out
        assert result.err == (
            f"lvegit: verdict cache: {repo.root / '.lvegit-cache'} is a link, so its verdicts could be "
            "forged elsewhere: not used\n"
        )
    assert sorted(p.name for p in forged.rglob("*")) == before  # nothing written where the link points


def test_a_cache_entry_that_is_a_link_is_not_read(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    forged = forged_cache(repo, cli, tmp_path)
    assert cli("check", "--all", "--no-cache", cwd=repo.root).code == 1
    (repo.root / ".lvegit-cache/v1").mkdir(parents=True)
    for folder in forged.glob("v1/*"):
        (repo.root / ".lvegit-cache/v1" / folder.name).symlink_to(folder)
    result = cli("check", "--all", cwd=repo.root)
    assert result.code == 1 and "1 mismatch" in result.out


@pytest.mark.parametrize("check", [True, False])
def test_readme_is_never_written_through_a_link(
    repo: RepoBuilder, cli: Any, tmp_path: Path, check: bool
) -> None:
    outside = outside_file(tmp_path)
    before = outside.read_bytes()
    lve_dir = repo.lve("hostile/readme", {"prompt": [{"content": "line one\nline two {a} {b}"}]})
    (lve_dir / "README.md").symlink_to(outside)
    result = cli("readme", "--all", *(["--check"] if check else []), cwd=repo.root)
    assert result.code == 1
    assert (
        "repository/hostile/readme/openai--gpt-4o-mini/README.md: not refreshed: README.md is a link: "
        "lvegit does not write through links"
    ) in result.out
    assert outside.read_bytes() == before


def test_an_instance_file_linked_out_is_never_appended_to(
    repo: RepoBuilder, cli: Any, adding: Any, tmp_path: Path
) -> None:
    outside = outside_file(tmp_path)
    before = outside.read_bytes()
    lve_dir = repo.lve("hostile/append")
    (lve_dir / "instances").mkdir()
    (lve_dir / "instances/new.jsonl").symlink_to(outside)
    result = cli(
        "record", str(lve_dir), "--param", "a=1", "--param", "b=2", "--file", "new.jsonl", cwd=repo.root
    )
    assert result.code in (1, 2) and "points outside the LVE directory" in result.out + result.err
    assert outside.read_bytes() == before


def test_a_site_is_never_written_through_links(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    """A pull request could commit a site folder whose pages or folders are links out of the checkout."""
    outside = outside_file(tmp_path)
    outside_folder = tmp_path / "outside-folder"
    outside_folder.mkdir()
    before = outside.read_bytes()
    repo.lve()
    site = repo.root / "site"
    assert cli("site", str(site), cwd=repo.root).code == 0
    (site / "index.html").unlink()
    (site / "index.html").symlink_to(outside)
    result = cli("site", str(site), cwd=repo.root)
    assert result.code == 2 and "'index.html' points outside the site folder" in result.err
    (site / "index.html").unlink()
    (site / "index.html").symlink_to("lves")  # a link that stays inside is not written through either
    result = cli("site", str(site), cwd=repo.root)
    assert result.code == 2 and "'index.html' is a link: lvegit does not write through links" in result.err
    (site / "index.html").unlink()
    shutil.rmtree(site / "lves")
    (site / "lves").symlink_to(outside_folder)
    assert cli("site", str(site), cwd=repo.root).code == 0
    assert not (site / "lves").is_symlink() and list(outside_folder.iterdir()) == []
    assert outside.read_bytes() == before
    linked_site = repo.root / "linked-site"
    linked_site.symlink_to(outside_folder)
    result = cli("site", str(linked_site), cwd=repo.root)
    assert result.code == 2 and "is a link" in result.err and list(outside_folder.iterdir()) == []


@pytest.mark.parametrize("target", ["folder", "results.json", "instances.patch"])
def test_the_results_folder_is_never_written_through_links(tmp_path: Path, target: str) -> None:
    from lvegit.base.errors import UsageError
    from lvegit.github import results as results_file

    outside = outside_file(tmp_path)
    before = outside.read_bytes()
    folder = tmp_path / "workspace/lvegit-results"
    if target == "folder":
        folder.parent.mkdir()
        folder.symlink_to(tmp_path)
    else:
        folder.mkdir(parents=True)
        (folder / target).symlink_to(outside)
    complaint = "is a link: lvegit does not write through links" if target == "folder" else "points outside"
    with pytest.raises(UsageError, match=complaint):
        results_file.write_in_folder(folder / ("results.json" if target == "folder" else target), "{}\n")
    assert outside.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "outside.txt",
        "workspace",
    ]


def test_new_never_writes_through_links(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    outside = outside_file(tmp_path)
    before = outside.read_bytes()
    (repo.root / ".gitignore").symlink_to(outside)
    result = cli("new", "cat/x", "--model", "m/x", cwd=repo.root)
    assert result.code == 2 and "'.gitignore' points outside the repository" in result.err
    assert outside.read_bytes() == before
    outside_folder = tmp_path / "outside-folder"
    outside_folder.mkdir()
    (repo.root / "repository/linked").symlink_to(outside_folder)
    result = cli("new", "linked/y", "--model", "m/x", cwd=repo.root)
    assert result.code == 2 and "points outside repository/" in result.err
    assert list(outside_folder.iterdir()) == []


# --- inputs that once stopped a whole command: each is the bad LVE's error; the rest is judged --------


def non_utf8_folder(lve_dir: Path) -> Path:
    """Rename an LVE's folder to a name whose bytes are not UTF-8 (git and Linux allow any bytes)."""
    renamed = Path(os.fsdecode(os.fsencode(lve_dir.parent.parent) + b"/caf\xe9"))
    os.rename(lve_dir.parent, renamed)
    return renamed / lve_dir.name


STOPPERS: dict[str, tuple[Callable[[RepoBuilder], Path], str | None]] = {
    "a number of 5,000 digits": (
        lambda repo: repo.lve("bad/stop", raw_test='{"description": "x", "n": ' + "9" * 5000 + "}"),
        "a number with more than 4300 digits",
    ),
    "a NUL in prompt_file": (
        lambda repo: repo.lve("bad/stop", {"prompt": None, "prompt_file": "test.prompt\u0000"}),
        "'test.prompt\\x00' cannot be used: the name holds a NUL byte",
    ),
    "a prompt_file name of 256 characters": (
        lambda repo: repo.lve("bad/stop", {"prompt": None, "prompt_file": "a" * 256}),
        "the name is too long",
    ),
    "a folder name that is not UTF-8": (
        lambda repo: non_utf8_folder(repo.lve("bad/stop")),
        "the LVE's folder name is not UTF-8 text",
    ),
    "a lone surrogate in a response": (
        lambda repo: repo.lve(
            "bad/stop",
            instances={"i.jsonl": '{"args": {"a": 1, "b": 2}, "response": "\\ud800", "passed": true}\n'},
        ),
        "a string holds a lone surrogate (\\ud800)",
    ),
    "a format width of a billion in a prompt": (
        lambda repo: repo.lve("bad/stop", {"prompt": [{"content": "{a:>999999999}{b}"}]}),
        "asks for a width or precision over 1000",
    ),
    "1,000 nested folders": (lambda repo: nest_folders(repo.lve("bad/stop"), 1000), None),
    "1,000 nested folders outside any LVE": (
        lambda repo: nest_folders(repo.root / "repository/bad", 1000),
        None,
    ),
}


@pytest.mark.parametrize("case", list(STOPPERS))
def test_one_bad_lve_never_stops_a_command(repo: RepoBuilder, cli: Any, tmp_path: Path, case: str) -> None:
    try:
        make, complaint = STOPPERS[case]
        make(repo)
        repo.lve("ok/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
        for command in ("check", "validate", "list", "replay"):
            outcome = run_both(cli, repo, command)
            assert outcome.code in (0, 1) and "Traceback" not in outcome.text, (command, outcome.text)
            if complaint is not None and command in ("check", "validate"):
                assert complaint in outcome.text, outcome.text
        check = run_both(cli, repo, "check")  # warm: from the cache
        [fine] = [lve for lve in check.data["lves"] if lve["path"].startswith("repository/ok/fine")]
        assert [i["status"] for i in fine["instances"]] == ["reproduced"]
        for args in (("readme", "--all", "--check"), ("site", str(tmp_path / "site"))):
            result = cli(*args, cwd=repo.root)
            assert result.code in (0, 1) and "Traceback" not in result.out + result.err, result.err
    finally:
        remove_nested(repo.root)  # folders nested past rmtree's recursion


@pytest.mark.parametrize(
    "damage",
    [
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"kind": "lve", "check": {"path": {"a": 1}}}).encode(),
        b"not json",
        b"\xff\xfe",
    ],
    ids=["nested 100,000 deep", "a field of the wrong type", "not JSON", "not UTF-8"],
)
def test_a_damaged_cache_entry_is_judged_again(repo: RepoBuilder, cli: Any, damage: bytes) -> None:
    repo.lve(instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    assert cli("check", "--all", cwd=repo.root).code == 0
    entries = list((repo.root / ".lvegit-cache/v1").glob("*/*"))
    for entry in entries:
        entry.write_bytes(damage)
    result = cli("check", "--all", cwd=repo.root)
    assert result.code == 0 and "1 reproduced" in result.out
    assert any(entry.read_bytes().startswith(b'{"kind": "lve"') for entry in entries)  # written anew


# --- one hostile corpus through every exit: terminal, log, error lines, comment, summary, annotations, README,
# dataset card ---------------------------------------------------------------------------------------------

HOSTILE_CORPUS = [
    "\u202egnp.exe",  # a right-to-left override: reads as exe.png
    "\u2066isolated\u2069 zero\u200bwidth\ufeff",  # bidi isolates and invisible characters
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",  # an OSC 8 hyperlink
    "ok\roverwritten",  # a carriage return that rewrites the line
    'quoted "value\n::error file=forged.py,line=1::forged annotation"',  # a newline inside a quoted value
    "  ::warning::an indented command",  # the runner trims leading blanks
    "mid-line ##[error]a legacy command",  # read anywhere in a line
    "see http://2130706433/ now",  # a decimal IP: no dot for escaping to break
]
HOSTILE_TEXT = " | ".join(HOSTILE_CORPUS)
INVISIBLE = "\u202e\u2066\u2069\u200b\ufeff"
OWN_ANNOTATION = re.compile(r"::(error|warning|notice) file=repository/[^:]*::")


def assert_harmless(text: str, channel: str, markdown: bool = False, links: bool = True) -> None:
    """Nothing in `text` can hide, reorder or rewrite what a reader sees; in a log, no line starts a
    workflow command; in markdown (which lvegit marks with zero-width spaces of its own) outside code,
    no link unless `links` (a README's description is its author's markdown)."""
    for char in ("\x1b", "\r", *("\u202e\u2066\u2069\ufeff" if markdown else INVISIBLE)):
        assert char not in text, (channel, repr(char))
    if markdown:
        prose = re.sub(r"(`{3,})[^\n]*\n.*?\n\1", "", text, flags=re.DOTALL)  # fenced code: never linked
        prose = re.sub(r"(`+).*?\1", "", prose)
        assert not links or "http://2130706433" not in prose, channel
        return
    for line in text.splitlines():
        own = OWN_ANNOTATION.match(line) is not None
        assert own or not line.lstrip().startswith("::"), (channel, line)
        assert own or "##[" not in line, (channel, line)


def hostile_lve(repo: RepoBuilder) -> Path:
    repo.lve(
        "hostile/everywhere",
        {"description": HOSTILE_TEXT, "tags": [{"name": "severity", "value": HOSTILE_TEXT}]},
        instances={"i.jsonl": [instance(HOSTILE_TEXT, True, a=1, b=2)]},
    )
    return custom_lve(repo, evil(f"raise ValueError({HOSTILE_TEXT!r})"))


def test_the_terminal_and_the_log_show_the_corpus_escaped(repo: RepoBuilder, cli: Any) -> None:
    hostile_lve(repo)
    for command in (["validate"], ["replay"], ["check"]):
        for output_format in ("text", "json"):
            result = cli(*command, "--all", "--format", output_format, cwd=repo.root)
            assert_harmless(result.out + result.err, f"{command[0]} {output_format}")
    shown = cli("show", "repository/hostile/everywhere/openai--gpt-4o-mini", cwd=repo.root)
    assert shown.code == 0 and "\\u202egnp.exe" in shown.out
    assert_harmless(shown.out + shown.err, "show")


def test_error_lines_show_the_corpus_escaped(repo: RepoBuilder, cli: Any) -> None:
    hostile_lve(repo)
    for command in ("show", "record"):
        result = cli(command, f"repository/{HOSTILE_TEXT}", cwd=repo.root)
        assert result.code == 2 and result.err.startswith("lvegit: error: ")
        assert_harmless(result.err, f"{command} error")
    (repo.root / "lvegit.toml").write_text(
        f'[models.{json.dumps(HOSTILE_TEXT)}]\nbackend = "nowhere"\n', encoding="utf-8"
    )
    result = cli("run", "--all", cwd=repo.root)
    assert result.code == 2 and "backend must be one of" in result.err
    assert_harmless(result.err, "routing error")


def test_the_comment_summary_and_annotations_show_the_corpus_escaped(
    tmp_path: Path, action: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, comment = pull_request_comment(tmp_path, action, monkeypatch, hostile_lve, "hostile")
    assert result.code == 1
    assert_harmless(result.out + result.err, "annotations and log")
    assert_harmless(comment, "comment", markdown=True)
    assert_harmless((tmp_path / "summary.md").read_text(), "summary", markdown=True)


def pull_request_comment(
    tmp_path: Path,
    action: Any,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[RepoBuilder], object],
    message: str,
) -> tuple[Any, str]:
    """The Action, commenting, on pull request 4 (a base with one LVE, then `change` made to a builder of
    the work tree) against a loopback GitHub: the command's result and the one comment it left."""
    from builders import pull_request_payload
    from servers import GitHubServer, serve_github

    git = GitRepo(tmp_path / "workspace")
    RepoBuilder(git.root).lve("cat/base")
    base = git.commit("base")
    change(RepoBuilder(git.root))
    head = git.commit(message)
    state = GitHubServer(pulls={4: head})
    for url in serve_github(state):
        monkeypatch.setenv("GITHUB_API_URL", url)
        payload = pull_request_payload(4, base, head)
        result = action("pull_request", payload, git.root, comment="true", github_token="t", live="false")
    [comment] = state.comments[4]
    return result, str(comment["body"])


def test_the_readme_and_the_dataset_card_show_the_corpus_escaped(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    hostile_lve(repo)
    lve = "repository/hostile/everywhere/openai--gpt-4o-mini"
    assert cli("readme", lve, cwd=repo.root).code == 0
    assert_harmless((repo.root / lve / "README.md").read_text(), "README", markdown=True, links=False)
    pytest.importorskip("pyarrow")
    out = tmp_path / "dataset"
    result = cli(
        "export", "--format", "dataset", "--title", HOSTILE_TEXT, "--output", str(out), cwd=repo.root
    )
    assert result.code == 0, result.err
    card = (out / "README.md").read_text()
    header, _, body = card.removeprefix("---\n").partition("\n---\n")
    assert_harmless(header, "dataset card header", markdown=True, links=False)  # YAML: not rendered
    assert_harmless(body, "dataset card", markdown=True)


# --- inputs that once ended in lvegit's own error or took the machine (the third round) ------------------


def test_a_non_utf8_folder_and_a_lone_surrogate_are_left_out_of_an_export_by_name(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    pytest.importorskip("pyarrow")
    non_utf8_folder(repo.lve("bad/name", instances={"i.jsonl": [instance("3", True, a=1, b=2)]}))
    repo.lve(
        "bad/surrogate",
        instances={"i.jsonl": '{"args": {"a": 1, "b": 2}, "response": "\\ud800", "passed": true}\n'},
    )
    repo.lve("ok/fine", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    result = cli("export", "--format", "dataset", "--output", str(tmp_path / "out"), cwd=repo.root)
    assert result.code == 0, result.err
    assert "1 LVE left out" in result.err
    import pyarrow.parquet as pq

    instances = pq.read_table(tmp_path / "out/data/instances.parquet").to_pylist()
    assert (
        sorted(row["lve"] for row in instances)
        == [
            "repository/bad/surrogate/openai--gpt-4o-mini",  # its good lines are kept; the bad one is named by validate
            "repository/ok/fine/openai--gpt-4o-mini",
        ]
        or all("surrogate" not in row["lve"] for row in instances)
    )


def test_the_action_comments_on_a_pull_request_that_adds_a_non_utf8_folder(
    tmp_path: Path, action: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, comment = pull_request_comment(
        tmp_path,
        action,
        monkeypatch,
        lambda lves: non_utf8_folder(lves.lve("cat/new")),
        "a folder whose name is not UTF-8",
    )
    assert result.code == 1, result.err
    assert "caf\\\\xe9" in comment and "not UTF\\-8 text" in comment


def history_table(rows: int, **columns: Any) -> Any:
    """A table in the history's schema: `rows` constant rows, any column replaced (None: all nulls)."""
    import pyarrow as pa

    from lvegit.history.store import arrow_schema

    schema = arrow_schema()
    values = {
        "run": "r",
        "run_at": 0,
        "lve": "repository/x/y/openai--m",
        "model": "openai/m",
        "version": "m-1",
        "file": "f",
        "line": 1,
        "repetition": 0,
        "unsafe": True,
        "invalid": False,
        **columns,
    }
    arrays = [
        pa.nulls(rows, type=field.type)
        if values[field.name] is None
        else pa.repeat(pa.scalar(values[field.name], field.type), rows)
        for field in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


@pytest.mark.parametrize("column", ["lve", "model", "version", "run_at"])
def test_a_history_file_with_empty_columns_is_refused_by_name(
    repo: RepoBuilder, cli: Any, tmp_path: Path, column: str
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    repo.lve("x/y")
    history = repo.root / "history"
    history.mkdir()
    pq.write_table(
        history_table(3, **{column: None}), history / "2026-09-07T030000Z-0123456789abcdef.parquet"
    )
    # status names the file and shows the other runs (exit 1); the other readers stop (exit 2)
    for command in (["status", "--all"], ["history", "list"], ["site", str(tmp_path / "site")]):
        result = cli(*command, cwd=repo.root)
        assert result.code == (1 if command[0] == "status" else 2), (command, result.err)
        assert f"the column '{column}' is empty in some rows" in result.err


def test_a_history_of_millions_of_constant_rows_is_refused_before_it_is_read(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    """Constant rows compress to almost nothing: 5 million of them are a small file, and were gigabytes
    of memory once read."""
    pq = pytest.importorskip("pyarrow.parquet")
    from lvegit.history.store import MAX_RUN_ROWS

    repo.lve("x/y")
    history = repo.root / "history"
    history.mkdir()
    pq.write_table(history_table(MAX_RUN_ROWS + 1), history / "2026-09-07T030000Z-0123456789abcdef.parquet")
    assert (history / "2026-09-07T030000Z-0123456789abcdef.parquet").stat().st_size < 2_000_000
    for command in (
        ["status", "--all"],
        ["export", "--format", "dataset", "--with-history", "--output", str(tmp_path / "d")],
    ):
        result = cli(*command, cwd=repo.root)
        assert result.code == (1 if command[0] == "status" else 2), (command, result.err)
        assert f"{MAX_RUN_ROWS + 1:,} rows, over the {MAX_RUN_ROWS:,} a run may hold" in result.err


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        (
            {"id": "a", "lve": "repository/x/y/openai--m", "model": "openai/m", "status": "complete"},
            "'args' is missing",
        ),
        (
            {
                "id": "a",
                "lve": "repository/x/y/openai--m",
                "model": "openai/m",
                "args": [],
                "status": "complete",
            },
            "'args' is not an object",
        ),
        (
            {
                "id": "a",
                "lve": "repository/x/y/openai--m",
                "model": "openai/m",
                "args": {},
                "status": "complete",
                "verdict": "yes",
            },
            "'verdict' is not true or false or null",
        ),
        (
            {"id": "a", "lve": "repository/x/y/openai--m", "model": 7, "args": {}, "status": "complete"},
            "'model' is not text",
        ),
    ],
)
def test_report_lines_of_the_wrong_shape_are_refused_by_line(
    repo: RepoBuilder, cli: Any, tmp_path: Path, line: dict[str, Any], complaint: str
) -> None:
    repo.lve("x/y")
    report = tmp_path / "run.jsonl"
    report.write_text(json.dumps({"lvegit_run": {"id": "r", "started": 0}}) + "\n" + json.dumps(line) + "\n")
    for command in (["history", "add", str(report)], ["export", "--format", "junit", str(report)]):
        result = cli(*command, cwd=repo.root)
        assert result.code == 2, (command, result.err)
        assert f"run.jsonl:2: not an attempt as lvegit writes one: {complaint}" in result.err


def test_a_judge_answer_too_large_to_read_back_is_never_recorded(
    repo: RepoBuilder, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders import JUDGED_TEST
    from servers import OpenAIServer, serve

    state = OpenAIServer(
        answer=lambda body: "unsafe " * 800_000 if body["model"] == "judge-model" else "a pin"
    )
    for running in serve(state):
        monkeypatch.setenv("OPENAI_BASE_URL", running.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
        lve_dir = repo.lve("security/locks", JUDGED_TEST)
        result = cli("record", str(lve_dir), "--param", "task=pick a lock", cwd=repo.root)
        assert result.code != 0 and "over the 4,194,304 that every reader takes: not recorded" in result.err
        assert not (lve_dir / "instances").exists() or not any((lve_dir / "instances").iterdir())
        assert cli("validate", "--all", cwd=repo.root).code == 0


def test_importers_keep_hostile_model_ids_infinite_scores_and_markers_in_their_place(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    setup = {"entry_type": "start_run setup", "plugins.target_type": "openai.OpenAIGenerator"}
    attempt = {
        "entry_type": "attempt",
        "uuid": "u",
        "seq": 0,
        "status": 2,
        "probe_classname": "encoding.InjectBase64",
        "prompt": "Decode: aGVsbG8=",
        "outputs": ["hello"],
        "detector_results": {"encoding.DecodeMatch": [float("inf")]},
    }
    for name in ("../../escape\u0000d/x", "///", "..", "gpt-4o\u0000mini"):
        report = tmp_path / "garak.report.jsonl"
        version = "<!-- lvegit:readme:start --> 0.13"
        entries = [{**setup, "plugins.target_name": name, "_config.version": version}, attempt]
        report.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
        result = cli("import", "garak", str(report), "--category", "scan", cwd=repo.root)
        assert result.code in (0, 1), result.err
    drafts = sorted(
        p.parent.relative_to(repo.root).as_posix() for p in (repo.root / "repository").rglob("test.json")
    )
    assert drafts == [
        "repository/scan/encoding_injectbase64/openai--escaped--x",
        "repository/scan/encoding_injectbase64/openai--gpt-4omini",
        "repository/scan/encoding_injectbase64/openai--unknown",
    ]
    for lve_dir in (repo.root / "repository").rglob("test.json"):
        assert (lve_dir.parent / "README.md").is_file()  # each draft whole: the marker did not stop it
        for line in (lve_dir.parent / "instances").glob("*.jsonl"):
            for text in line.read_text().splitlines():
                json.loads(text, parse_constant=lambda name: pytest.fail(f"non-standard JSON: {name}"))
    listed = cli("validate", "--all", "--format", "json", cwd=repo.root).json()
    assert all(not any("nested" in e["message"] for e in lve["errors"]) for lve in listed["lves"])
