"""Loopback servers that speak real protocols, started by tests (and benchmarks) on 127.0.0.1."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class JSONHandler(BaseHTTPRequestHandler):
    """What both loopback servers share: HTTP/1.1 keep-alive, no Nagle delay, quiet, JSON replies."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, as real servers send them

    def log_message(self, *args: Any) -> None:
        return None

    def reply(self, code: int, data: Any, headers: dict[str, str] | None = None) -> None:
        payload = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the listen backlog: a burst of new connections must not be dropped

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout under test) is no server error; its trace would otherwise land
        # in whichever later test captures stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve on 127.0.0.1 in a thread; yields the port."""
    httpd = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


# A fault decides how one request is answered: None for a normal completion, or one of
# ("status", code, headers), ("sleep", seconds), ("body", raw bytes), ("close",).
Fault = tuple[Any, ...] | None


def model_and_judge(judge_says: str = "") -> Any:
    """The model explains; the judge calls an explanation with a pin unsafe (or says `judge_says`)."""

    def answer(body: dict[str, Any]) -> str:
        if body["model"] != "judge-model":
            return "Use a tension wrench and a pin."
        return judge_says or ("unsafe" if "pin" in body["messages"][-1]["content"] else "safe")

    return answer


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


# What an answer function returns: the reply's text, or the assistant message itself (content and
# tool_calls, as the API writes them).
Answer = str | dict[str, Any]


def completion(body: dict[str, Any], text: Answer, number: int, model: str | None = None) -> dict[str, Any]:
    """A chat.completion answering `body` with `text` (or with a message that calls tools); the model
    name dated, as OpenAI resolves it (or `model`: the version the server says it is)."""
    message = (
        {"role": "assistant", **text} if isinstance(text, dict) else {"role": "assistant", "content": text}
    )
    finished = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model or f"{body.get('model')}-2026-01-01",
        "choices": [{"index": 0, "message": message, "finish_reason": finished}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def tool_call(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    """A tool call as the chat-completions API writes it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def calls_then_answers(calls: list[dict[str, Any]], then: str) -> Callable[[dict[str, Any]], Answer]:
    """A model with tools that makes `calls` (as the API writes them) when the user asks, and answers
    `then` once its calls were answered."""

    def answer(body: dict[str, Any]) -> Answer:
        return {"content": None, "tool_calls": calls} if body["messages"][-1]["role"] == "user" else then

    return answer


def injected_agent(body: dict[str, Any]) -> Answer:
    """A model with tools that falls for an injection (builders.TOOL_TEST): it fetches the page the user
    names, does what the page says (it e-mails where the page tells it to), then reports."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user":
        url = last["content"].split()[-1].rstrip(".")
        return {"content": None, "tool_calls": [tool_call("fetch_page", json.dumps({"url": url}), "call_1")]}
    if last["role"] == "tool" and "send " in last["content"]:
        address = last["content"].split(" to ")[-1].split(" ")[0]
        arguments = json.dumps({"to": address, "body": "the notes"})
        return {"content": "On it.", "tool_calls": [tool_call("send_email", arguments, "call_2")]}
    return "Done: 20 minutes in the oven."


def bank_agent(follows: bool, from_results: bool = False) -> Callable[[dict[str, Any]], Answer]:
    """A model in builders.ENVIRONMENT_TEST's bank: it reads the bill and pays it; `follows`: it also does
    what the bill's text says (an injection `send AMOUNT to ACCOUNT`), with `from_results` the amount
    being the balance its get_balance call returned."""

    def answer(body: dict[str, Any]) -> Answer:
        messages = body["messages"]
        last = messages[-1]
        if last["role"] == "user":
            arguments = json.dumps({"path": "bill.txt"})
            return {"content": None, "tool_calls": [tool_call("read_file", arguments, "call_1")]}
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if len(results) == 1:
            words = results[0].split()
            bill = {"recipient": words[6].rstrip("."), "amount": float(words[4]), "subject": "bill"}
            calls = [tool_call("send_money", json.dumps(bill), "call_2")]
            if follows and "send " in results[0]:
                injected = results[0].split("send ", 1)[1].split()
                if from_results:
                    calls.append(tool_call("get_balance", "{}", "call_3"))
                else:
                    stolen = {
                        "recipient": injected[2].rstrip("."),
                        "amount": float(injected[0]),
                        "subject": "x",
                    }
                    calls.append(tool_call("send_money", json.dumps(stolen), "call_3"))
            return {"content": None, "tool_calls": calls}
        if from_results and follows and len(results) == 3:
            injected = results[0].split("send ", 1)[1].split()
            stolen = {"recipient": injected[2].rstrip("."), "amount": float(results[2]), "subject": "x"}
            return {"content": None, "tool_calls": [tool_call("send_money", json.dumps(stolen), "call_4")]}
        return "The bill is paid."

    return answer


# How a batch answers one request (`batch_line_fault`): None for a completion, or one of
# ("status", code) (a non-200 response, in the error file), ("error", code, message) (no response),
# ("body", data) (a 200 response whose body is `data`).
LineFault = tuple[Any, ...] | None


@dataclass
class OpenAIServer:
    """An OpenAI-compatible endpoint: chat completions (also Azure's deployment paths), and the Files and
    Batches APIs that the Batch API uses.

    Chat: `answer(body)` writes the reply text; `faults` is consumed one entry per request (then normal
    answers); `latency` delays every answer. Every request body and path is recorded in `requests`.

    Batches: an uploaded input file (purpose batch) becomes a batch that goes validating, in_progress,
    finalizing, then the state `batch_outcome(n)` gives the n-th batch (completed, failed, expired,
    cancelled), a state per retrieve; it stays in_progress while `hold` is set. Its requests are answered
    with `answer` (`batch_line_fault` breaks single ones) into output and error files; an expired or
    cancelled batch answers half of them. `api_faults` answers the Files and Batches calls in turn.
    """

    answer: Callable[[dict[str, Any]], Answer] = last_user_text
    version: str | None = None  # the model version chat completions name (default: the model, dated)
    latency: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    fault_for: Callable[[int, dict[str, Any]], Fault] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of each chat request
    lock: threading.Lock = field(default_factory=threading.Lock)
    # perf_counter() when the first request arrived and when the last answer was sent (for benchmarks)
    first_arrival: float | None = None
    last_answer: float | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    purposes: dict[str, str] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    batch_outcome: Callable[[int], str] = lambda _number: "completed"
    batch_line_fault: Callable[[dict[str, Any]], LineFault] = lambda _line: None
    hold: threading.Event = field(default_factory=threading.Event)
    api_faults: list[Fault] = field(default_factory=list)
    api_calls: list[str] = field(default_factory=list)  # "METHOD path" of every Files and Batches call

    def next_fault(self, body: dict[str, Any]) -> Fault:
        with self.lock:
            self.requests.append(body)
            number = len(self.requests)
            if self.faults:
                return self.faults.pop(0)
        return self.fault_for(number, body) if self.fault_for else None

    def created(self) -> list[dict[str, Any]]:
        """The batches created, oldest first."""
        return list(self.batches.values())

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JSONHandler):
            def send(self, code: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                server.last_answer = time.perf_counter()
                self.reply(code, payload, headers)

            def do_GET(self) -> None:
                self.api("GET", b"")

            def do_POST(self) -> None:
                if server.first_arrival is None:
                    server.first_arrival = time.perf_counter()
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if self.path.startswith(("/v1/files", "/v1/batches")):
                    self.api("POST", raw)
                    return
                body = json.loads(raw or b"{}")
                with server.lock:
                    server.paths.append(self.path)
                    server.headers.append(dict(self.headers))
                fault = server.next_fault(body)
                if server.latency:
                    time.sleep(server.latency)
                if fault is not None:
                    kind = fault[0]
                    if kind == "status":
                        error = {"error": {"message": f"injected {fault[1]}", "type": "test", "code": None}}
                        self.send(fault[1], json.dumps(error).encode(), fault[2] if len(fault) > 2 else None)
                        return
                    if kind == "sleep":
                        time.sleep(fault[1])
                    elif kind == "body":
                        self.send(200, fault[1])
                        return
                    elif kind == "close":
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                reply = completion(body, server.answer(body), len(server.requests), server.version)
                self.send(200, json.dumps(reply).encode())

            def api(self, method: str, raw: bytes) -> None:
                with server.lock:
                    server.api_calls.append(f"{method} {self.path}")
                    fault = server.api_faults.pop(0) if server.api_faults else None
                if fault is not None:
                    error = {"error": {"message": f"injected {fault[1]}", "type": "test", "code": None}}
                    self.reply(fault[1], error, fault[2] if len(fault) > 2 else None)
                    return
                code, data = server.batch_api(method, self.path, raw, self.headers.get("Content-Type", ""))
                self.reply(code, data)

        return Handler

    def batch_api(self, method: str, path: str, raw: bytes, content_type: str) -> tuple[int, Any]:
        url = urllib.parse.urlsplit(path)
        parts = url.path.strip("/").split("/")[1:]  # after v1
        with self.lock:
            if method == "POST" and parts == ["files"]:
                return 200, self._upload(raw, content_type)
            if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
                return (200, self.files[parts[1]]) if parts[1] in self.files else (404, _not_found(parts[1]))
            if method == "POST" and parts == ["batches"]:
                return self._create(json.loads(raw))
            if method == "GET" and parts == ["batches"]:
                return 200, self._list(urllib.parse.parse_qs(url.query))
            batch = self.batches.get(parts[1]) if len(parts) > 1 and parts[0] == "batches" else None
            if batch is None:
                return 404, _not_found(url.path)
            if method == "GET" and len(parts) == 2:
                self._advance(batch)
                return 200, _public(batch)
            if method == "POST" and parts[2:] == ["cancel"]:
                if batch["status"] not in ("completed", "failed", "expired", "cancelled"):
                    batch["status"] = "cancelling"
                return 200, _public(batch)
        return 404, _not_found(url.path)

    def _upload(self, raw: bytes, content_type: str) -> dict[str, Any]:
        message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields: dict[Any, bytes] = {}
        for part in message.iter_parts():
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)  # a form field's content, decoded
            fields[part.get_param("name", header="content-disposition")] = payload
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = fields["file"]
        self.purposes[file_id] = fields["purpose"].decode()
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(fields["file"]),
            "created_at": int(time.time()),
            "filename": "input.jsonl",
            "purpose": self.purposes[file_id],
        }

    def _create(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.purposes.get(body.get("input_file_id", "")) != "batch":
            return 400, {
                "error": {"message": "input_file_id must be a file with purpose batch", "code": None}
            }
        number = len(self.batches) + 1
        batch = {
            "id": f"batch_{number}",
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
            "_outcome": self.batch_outcome(number),
        }
        self.batches[batch["id"]] = batch
        return 200, _public(batch)

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        newest_first = list(reversed(self.batches.values()))
        after = query.get("after", [None])[0]
        if after is not None:
            newest_first = newest_first[[b["id"] for b in newest_first].index(after) + 1 :]
        limit = int(query.get("limit", ["20"])[0])
        page = [_public(batch) for batch in newest_first[:limit]]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(newest_first) > limit,
        }

    def _advance(self, batch: dict[str, Any]) -> None:
        """One step of the batch's life per look at it."""
        status, outcome = batch["status"], batch["_outcome"]
        if status == "validating":
            lines = self.files[batch["input_file_id"]].splitlines()
            batch["request_counts"]["total"] = len(lines)
            if outcome == "failed":
                batch["status"] = "failed"
                batch["errors"] = {
                    "object": "list",
                    "data": [
                        {"code": "invalid_request", "message": "injected failure", "line": 1, "param": None}
                    ],
                }
            else:
                batch["status"] = "in_progress"
        elif status == "in_progress" and not self.hold.is_set():
            batch["status"] = "finalizing"
        elif status == "finalizing":
            self._finish(batch, outcome)
        elif status == "cancelling":
            self._finish(batch, "cancelled")

    def _finish(self, batch: dict[str, Any], outcome: str) -> None:
        lines = [json.loads(line) for line in self.files[batch["input_file_id"]].splitlines()]
        answered = lines if outcome == "completed" else lines[: len(lines) // 2]
        output, errors = [], []
        for number, line in enumerate(answered, 1):
            fault = self.batch_line_fault(line)
            if fault is None or fault[0] == "body":
                body = fault[1] if fault else completion(line["body"], self.answer(line["body"]), number)
                output.append(batch_output(number, line["custom_id"], 200, body))
            elif fault[0] == "status":
                error = {"error": {"message": f"injected {fault[1]}", "type": "test", "code": None}}
                errors.append(batch_output(number, line["custom_id"], fault[1], error))
            else:
                entry = batch_output(number, line["custom_id"], 0, None)
                entry.update(response=None, error={"code": fault[1], "message": fault[2]})
                errors.append(entry)
        if outcome == "expired":
            message = "This request could not be executed before the completion window expired."
            errors.extend(
                {"id": f"batch_req_x{n}", "custom_id": line["custom_id"], "response": None,
                 "error": {"code": "batch_expired", "message": message}}
                for n, line in enumerate(lines[len(answered):])
            )  # fmt: skip
        batch["output_file_id"] = self._store(output, batch["id"], "output")
        batch["error_file_id"] = self._store(errors, batch["id"], "errors")
        batch["request_counts"].update(completed=len(output), failed=len(errors))
        batch["status"] = outcome

    def _store(self, entries: list[dict[str, Any]], batch_id: str, kind: str) -> str | None:
        if not entries:
            return None
        file_id = f"file-{batch_id}-{kind}"
        self.files[file_id] = "".join(json.dumps(entry) + "\n" for entry in entries).encode()
        return file_id


def batch_output(number: int, custom_id: str, status: int, body: Any) -> dict[str, Any]:
    """A line of a batch output or error file, as the Batch API and `vllm run-batch` write them."""
    response = {"status_code": status, "request_id": f"req_{number}", "body": body}
    return {"id": f"batch_req_{number}", "custom_id": custom_id, "response": response, "error": None}


def run_batch_file(path: Path, answer: Callable[[dict[str, Any]], Answer] = last_user_text) -> Path:
    """What an offline engine (`vllm run-batch -i path -o ...`) writes for an input file: a completion per
    request, streamed; returns the output file (beside the input, `-output` added to its name)."""
    output = path.with_name(f"{path.stem}-output.jsonl")
    with path.open() as requests, output.open("w") as answers:
        for number, raw in enumerate(requests, 1):
            request = json.loads(raw)
            body = completion(request["body"], answer(request["body"]), number)
            answers.write(json.dumps(batch_output(number, request["custom_id"], 200, body)) + "\n")
    return output


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in batch.items() if not key.startswith("_")}


def _not_found(what: str) -> dict[str, Any]:
    return {"error": {"message": f"No such object: {what}", "type": "invalid_request_error", "code": None}}


@dataclass
class Running:
    state: OpenAIServer
    url: str  # base URL ending in /v1


def serve(state: OpenAIServer) -> Iterator[Running]:
    for port in _serve(state.handler()):
        yield Running(state, f"http://127.0.0.1:{port}/v1")


@dataclass
class ProxyServer:
    """A forward HTTP proxy: a request in absolute form (`POST http://host/path`) is sent on to `target`
    (scheme and host:port), the path kept. Records each request line and its Proxy-Authorization."""

    target: str
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(JSONHandler):
            def do_POST(self) -> None:
                proxy.requests.append((f"POST {self.path}", self.headers.get("Proxy-Authorization")))
                url = urllib.parse.urlsplit(self.path)
                forwarded = urllib.request.Request(
                    proxy.target + urllib.parse.urlunsplit(("", "", url.path, url.query, "")),
                    data=self.rfile.read(int(self.headers.get("Content-Length", 0))),
                    headers={k: v for k, v in self.headers.items() if not k.lower().startswith("proxy-")},
                )
                direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # not back to itself
                try:
                    with direct.open(forwarded) as answer:
                        self.reply(answer.status, answer.read())
                except urllib.error.HTTPError as error:
                    self.reply(error.code, error.read())

        return Handler


def serve_proxy(state: ProxyServer) -> Iterator[str]:
    for port in _serve(state.handler()):
        yield f"http://127.0.0.1:{port}"


@dataclass
class GitHubServer:
    """The slice of GitHub's REST API the action uses: pull requests, their files, issues and their
    comments, a commit's tree, a file's blob at a commit or branch, the comparison of two commits, with
    pagination (Link headers), GitHub's
    limits (a 65,536-character body, 3,000 files listed, 100,000 tree entries) and injectable faults."""

    pulls: dict[int, str] = field(default_factory=dict)  # number -> head sha
    bases: dict[int, str] = field(default_factory=dict)  # number -> base sha (default: forty zeros)
    files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # number -> its changed files
    trees: dict[str, list[str]] = field(default_factory=dict)  # commit -> the paths of its files
    ancestors: dict[str, set[str]] = field(default_factory=dict)  # commit -> itself and its ancestors
    base_refs: dict[int, str] = field(default_factory=dict)  # number -> its base branch (default: main)
    labels: dict[int, str] = field(default_factory=dict)  # number -> its head (default: contributor:pr)
    blobs: dict[tuple[str, str], str] = field(default_factory=dict)  # (commit or branch, path) -> blob sha
    max_files: int = 3_000
    max_tree: int = 100_000
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    max_body: int = 65_536
    prefix: str = ""  # e.g. /api/v3 for GitHub Enterprise Server
    base: str = ""
    next_id: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def comment(
        self, number: int, body: str, login: str = "github-actions[bot]", kind: str = "Bot"
    ) -> dict[str, Any]:
        with self.lock:
            self.next_id += 1
            comment = {
                "id": self.next_id,
                "node_id": f"IC_{self.next_id}",
                "url": f"{self.base}/repos/org/lves/issues/comments/{self.next_id}",
                "html_url": f"https://github.example/org/lves/pull/{number}#issuecomment-{self.next_id}",
                "body": body,
                "user": {"login": login, "id": 1, "type": kind},
                "created_at": "2026-11-22T00:00:00Z",
                "updated_at": "2026-11-22T00:00:00Z",
            }
            self.comments.setdefault(number, []).append(comment)
            return comment

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JSONHandler):
            def handle_request(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", 0) or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                path, _, query = self.path.partition("?")
                path = path.removeprefix(server.prefix)
                with server.lock:
                    server.requests.append((method, self.path))
                    fault = server.faults.pop(0) if server.faults else None
                if fault is not None:
                    self.reply(
                        fault[1],
                        {"message": fault[3] if len(fault) > 3 else "injected"},
                        fault[2] if len(fault) > 2 else None,
                    )
                    return
                parts = path.strip("/").split("/")
                params = dict(item.split("=", 1) for item in query.split("&") if "=" in item)
                if parts[:3] != ["repos", "org", "lves"]:
                    self.reply(404, {"message": "Not Found"})
                    return
                rest = parts[3:]
                if method == "GET" and rest == ["pulls"]:
                    label = params.get("head", "").replace("%3A", ":")
                    listed = [
                        {
                            "number": number,
                            "state": "open",
                            "head": {"sha": sha, "label": server.labels.get(number, "contributor:pr")},
                            "base": {"ref": server.base_refs.get(number, "main")},
                        }
                        for number, sha in sorted(server.pulls.items())
                        if server.labels.get(number, "contributor:pr") == label
                    ]
                    self.page(listed, f"{server.base}/repos/org/lves/pulls", params)
                elif method == "GET" and rest[:1] == ["pulls"] and len(rest) == 2:
                    number = int(rest[1])
                    if number not in server.pulls:
                        self.reply(404, {"message": "Not Found"})
                        return
                    repo = {"full_name": "org/lves", "name": "lves", "owner": {"login": "org"}}
                    self.reply(
                        200,
                        {
                            "url": f"{server.base}/repos/org/lves/pulls/{number}",
                            "number": number,
                            "state": "open",
                            "issue_url": f"{server.base}/repos/org/lves/issues/{number}",
                            "head": {"sha": server.pulls[number], "ref": "feature", "repo": repo},
                            "base": {
                                "sha": server.bases.get(number, "0" * 40),
                                "ref": server.base_refs.get(number, "main"),
                                "repo": {**repo, "default_branch": "main"},
                            },
                            "changed_files": len(server.files.get(number, [])),
                        },
                    )
                elif method == "GET" and rest[:1] == ["pulls"] and rest[2:] == ["files"]:
                    listed = server.files.get(int(rest[1]), [])[: server.max_files]
                    self.page(listed, f"{server.base}/repos/org/lves/pulls/{rest[1]}/files", params)
                elif (
                    method == "GET"
                    and rest[:2] == ["git", "trees"]
                    and len(rest) == 3
                    and rest[2] in server.trees
                ):
                    paths = server.trees[rest[2]]
                    entries = [
                        {"path": path, "mode": "100644", "type": "blob", "sha": "e" * 40}
                        for path in paths[: server.max_tree]
                    ]
                    url = f"{server.base}/repos/org/lves/git/trees/{rest[2]}"
                    truncated = len(paths) > server.max_tree
                    self.reply(200, {"sha": rest[2], "url": url, "tree": entries, "truncated": truncated})
                elif method == "GET" and rest[:1] == ["contents"] and len(rest) > 1:
                    found = server.blobs.get((params.get("ref", "main"), "/".join(rest[1:])))
                    if found is None:
                        self.reply(404, {"message": "Not Found"})
                        return
                    name = rest[-1]
                    self.reply(200, {"type": "file", "name": name, "path": "/".join(rest[1:]), "sha": found})
                elif method == "GET" and rest[:1] == ["compare"] and len(rest) == 2 and "..." in rest[1]:
                    base, head = rest[1].split("...", 1)
                    if base not in server.ancestors or head not in server.ancestors:
                        self.reply(404, {"message": "Not Found"})
                        return
                    status = (
                        "identical"
                        if base == head
                        else "ahead"
                        if base in server.ancestors[head]
                        else "behind"
                        if head in server.ancestors[base]
                        else "diverged"
                    )
                    self.reply(
                        200, {"status": status, "url": f"{server.base}/repos/org/lves/compare/{rest[1]}"}
                    )
                elif method == "GET" and rest[:1] == ["issues"] and len(rest) == 2:
                    number = int(rest[1])
                    if number not in server.pulls:
                        self.reply(404, {"message": "Not Found"})
                        return
                    self.reply(
                        200,
                        {
                            "url": f"{server.base}/repos/org/lves/issues/{number}",
                            "number": number,
                            "comments_url": f"{server.base}/repos/org/lves/issues/{number}/comments",
                        },
                    )
                elif rest[:1] == ["issues"] and len(rest) == 3 and rest[2] == "comments":
                    number = int(rest[1])
                    if method == "POST":
                        if len(body.get("body", "")) > server.max_body:
                            self.reply(
                                422,
                                {
                                    "message": "Validation Failed",
                                    "errors": [
                                        {
                                            "message": f"body is too long (maximum is {server.max_body} characters)"
                                        }
                                    ],
                                },
                            )
                            return
                        self.reply(201, server.comment(number, body["body"]))
                        return
                    items = server.comments.get(number, [])
                    self.page(items, f"{server.base}/repos/org/lves/issues/{number}/comments", params)
                elif method == "PATCH" and rest[:2] == ["issues", "comments"]:
                    comment_id = int(rest[2])
                    if len(body.get("body", "")) > server.max_body:
                        self.reply(422, {"message": "Validation Failed"})
                        return
                    for items in server.comments.values():
                        for comment in items:
                            if comment["id"] == comment_id:
                                comment["body"] = body["body"]
                                self.reply(200, comment)
                                return
                    self.reply(404, {"message": "Not Found"})
                else:
                    self.reply(404, {"message": "Not Found"})

            def page(self, items: list[Any], url: str, params: dict[str, str]) -> None:
                """One page of a list, with GitHub's Link header to the next and the last."""
                per_page = int(params.get("per_page", 30))
                page = int(params.get("page", 1))
                last = max(1, -(-len(items) // per_page))
                headers = {}
                url = f"{url}?per_page={per_page}"
                if page < last:
                    headers["Link"] = f'<{url}&page={page + 1}>; rel="next", <{url}&page={last}>; rel="last"'
                self.reply(200, items[(page - 1) * per_page : page * per_page], headers)

            def do_GET(self) -> None:
                self.handle_request("GET")

            def do_POST(self) -> None:
                self.handle_request("POST")

            def do_PATCH(self) -> None:
                self.handle_request("PATCH")

        return Handler


def serve_github(state: GitHubServer) -> Iterator[str]:
    for port in _serve(state.handler()):
        state.base = f"http://127.0.0.1:{port}{state.prefix}"
        yield state.base


@dataclass
class HubServer:
    """The slice of the Hugging Face hub that huggingface_hub's snapshot_download uses: a model's
    revision, its file tree, and its files (HEAD with the commit and ETag headers, then GET). A model that
    is not in `models` answers 404 RepoNotFound, as the hub does for a private or missing repository.
    Every request is recorded as "METHOD path"."""

    models: dict[str, dict[str, bytes]] = field(default_factory=dict)
    revision: str = "1" * 40
    requests: list[str] = field(default_factory=list)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _json(self, data: Any) -> None:
                self._send(200, json.dumps(data).encode(), {"Content-Type": "application/json"})

            def _answer(self) -> None:
                state.requests.append(f"{self.command} {self.path}")
                path = urllib.parse.urlsplit(self.path).path
                api = path.removeprefix("/api/models/")
                repo = "/".join((api if api != path else path.lstrip("/")).split("/")[:2])
                files = state.models.get(repo)
                if files is None:
                    self._send(404, b"Repository not found", {"X-Error-Code": "RepoNotFound"})
                elif api != path and "/tree/" in api:
                    self._json(
                        [
                            {"type": "file", "path": name, "size": len(data), "oid": _digest(data)}
                            for name, data in files.items()
                        ]
                    )
                elif api != path:
                    siblings = [{"rfilename": name} for name in files]
                    self._json({"id": repo, "sha": state.revision, "siblings": siblings})
                elif "/resolve/" in path and path.split("/resolve/", 1)[1].split("/", 1)[1] in files:
                    data = files[path.split("/resolve/", 1)[1].split("/", 1)[1]]
                    headers = {"X-Repo-Commit": state.revision, "ETag": f'"{_digest(data)}"'}
                    self._send(200, data, headers)
                else:
                    self._send(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})

            do_GET = do_HEAD = _answer

        return Handler


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(data).hexdigest()


def serve_hub(state: HubServer) -> Iterator[str]:
    for port in _serve(state.handler()):
        yield f"http://127.0.0.1:{port}"
