"""Loopback servers that speak real protocols, started by tests (and benchmarks) on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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

    def next_fault(self, body: dict[str, Any]) -> Fault:
        with self.lock:
            self.requests.append(body)
            number = len(self.requests)
            if self.faults:
                return self.faults.pop(0)
        return self.fault_for(number, body) if self.fault_for else None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def send(self, code: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
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
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), state.handler())
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Running(state, f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    finally:
        httpd.shutdown()
        httpd.server_close()
