"""Loopback servers that speak real protocols, started by tests (and benchmarks) on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


@dataclass
class OpenAIServer:
    """An OpenAI-compatible chat-completions endpoint (also Azure's deployment paths).

    `answer(body)` writes the reply text; `faults` is consumed one entry per request (then normal answers);
    `latency` delays every answer. Every request body and path is recorded in `requests`.
    """

    answer: Callable[[dict[str, Any]], str] = last_user_text
    latency: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    fault_for: Callable[[int, dict[str, Any]], Fault] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # perf_counter() when the first request arrived and when the last answer was sent (for benchmarks)
    first_arrival: float | None = None
    last_answer: float | None = None

    def next_fault(self, body: dict[str, Any]) -> Fault:
        with self.lock:
            self.requests.append(body)
            number = len(self.requests)
            if self.faults:
                return self.faults.pop(0)
        return self.fault_for(number, body) if self.fault_for else None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JSONHandler):
            def send(self, code: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                server.last_answer = time.perf_counter()
                self.reply(code, payload, headers)

            def do_POST(self) -> None:
                if server.first_arrival is None:
                    server.first_arrival = time.perf_counter()
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.paths.append(self.path)
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
                text = server.answer(body)
                reply = {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": f"{body.get('model')}-2026-01-01",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                self.send(200, json.dumps(reply).encode())

        return Handler


@dataclass
class Running:
    state: OpenAIServer
    url: str  # base URL ending in /v1


def serve(state: OpenAIServer) -> Iterator[Running]:
    for port in _serve(state.handler()):
        yield Running(state, f"http://127.0.0.1:{port}/v1")


@dataclass
class GitHubServer:
    """The slice of GitHub's REST API the action uses: pull requests, issues and their comments, with
    pagination (Link headers), the 65,536-character body limit, and injectable faults."""

    pulls: dict[int, str] = field(default_factory=dict)  # number -> head sha
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
                if method == "GET" and rest[:1] == ["pulls"] and len(rest) == 2:
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
                            "base": {"sha": "0" * 40, "ref": "main", "repo": repo},
                        },
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
                    per_page = int(params.get("per_page", 30))
                    page = int(params.get("page", 1))
                    items = server.comments.get(number, [])
                    last = max(1, -(-len(items) // per_page))
                    headers = {}
                    url = f"{server.base}/repos/org/lves/issues/{number}/comments?per_page={per_page}"
                    if page < last:
                        headers["Link"] = (
                            f'<{url}&page={page + 1}>; rel="next", <{url}&page={last}>; rel="last"'
                        )
                    self.reply(200, items[(page - 1) * per_page : page * per_page], headers)
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
