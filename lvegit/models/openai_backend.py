"""OpenAI chat completions through the official `openai` client: api.openai.com, any OpenAI-compatible
server (vLLM, Ollama, LM Studio; via OPENAI_BASE_URL or the routing file) and Azure OpenAI.

The client's own retries are off: lvegit's runner retries with backoff and reads Retry-After itself.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import socket
import time
import urllib.parse
import urllib.request
from typing import Any

from lvegit.base.errors import UsageError
from lvegit.lve.prompt import Message, ToolCall
from lvegit.models.base import (
    DEFAULT_CONCURRENCY,
    Completion,
    ModelError,
    TransientModelError,
    chat_body,
)


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _message(exc: Any) -> str:
    """The API's own error message when the body carries one, else the client's."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(exc.message)


def _http_client() -> Any:
    """aiohttp when installed (openai's `aiohttp` extra): at high concurrency it costs far less CPU per
    request than the default httpx transport; otherwise the client's default."""
    try:
        import openai

        return openai.DefaultAioHttpClient()
    except (AttributeError, RuntimeError, ImportError):
        return None


def api_error(exc: Exception, base_url: Any) -> ModelError:
    """An exception of the openai client (or a body that is not JSON) as lvegit's error: transient
    (rate limit, server error, timeout, connection, malformed body) or not."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return status_error(exc.status_code, exc.response.headers, _message(exc))
    where = urllib.parse.urlsplit(str(base_url)).netloc
    if isinstance(exc, openai.APITimeoutError):
        return TransientModelError(f"the request to {where} timed out")
    if isinstance(exc, openai.APIConnectionError):
        return _connection_error(exc, where)
    return TransientModelError(f"malformed response: {exc}")  # APIResponseValidationError, ValueError


def _connection_error(exc: BaseException, where: str) -> TransientModelError:
    """What went wrong with the connection, from the exceptions beneath the client's: some HTTP transports
    report a refused connection as a connect timeout."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return TransientModelError(f"connection refused by {where}", refused=True)
        if isinstance(cause, socket.gaierror):
            return TransientModelError(f"cannot resolve the host of {where}", refused=True)
        cause = cause.__cause__ or cause.__context__
    return TransientModelError(f"connection to {where} failed: {getattr(exc, 'message', exc)}")


LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads has joined every pair already


def completion_of(response: Any, model: str) -> Completion:
    """The text and tool calls of a chat-completions response body (live, or a line of a batch output
    file)."""
    try:
        message = response["choices"][0]["message"]
        text, calls = message.get("content"), message.get("tool_calls")
        resolved = str(response.get("model") or model)
    except (AttributeError, IndexError, KeyError, TypeError):
        raise TransientModelError("malformed response: no choices[0].message.content") from None
    if calls is not None and not isinstance(calls, list):
        raise TransientModelError("malformed response: the message's tool_calls is not a list")
    if not isinstance(text, str) and not (text is None and calls):
        raise TransientModelError("malformed response: the message has no text content")
    # Half of a UTF-16 pair (a reply cut inside an emoji) is no text: stored, no reader could take it.
    return Completion(_text(text or ""), resolved, tool_calls=tuple(map(_tool_call, calls or [])))


def _text(text: str) -> str:
    return LONE_SURROGATE.sub("\ufffd", text)


def _tool_call(call: Any) -> ToolCall:
    """One tool call as the model wrote it (ToolCall.from_api), as text a reader can take."""
    read = ToolCall.from_api(call)
    return ToolCall(_text(read.id), _text(read.name), _text(read.arguments))


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for `url`, as the openai client honours it: HTTPS_PROXY or
    HTTP_PROXY by the URL's scheme, else ALL_PROXY, none for a host in NO_PROXY; credentials may be in the
    proxy's URL. Looked up once per session: aiohttp's trust_env would look it up in a thread, and read
    .netrc, for every request."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def _organization_headers() -> dict[str, str]:
    """The headers the openai client adds from the environment: the organization and project billed."""
    headers = {}
    for variable, header in (
        ("OPENAI_ORG_ID", "OpenAI-Organization"),
        ("OPENAI_PROJECT_ID", "OpenAI-Project"),
    ):
        if os.environ.get(variable):
            headers[header] = os.environ[variable]
    return headers


class OpenAIModel:
    """A chat model behind the chat-completions endpoint.

    Chat requests go straight to the endpoint over aiohttp: importing the openai client takes longer (over a
    second on a small machine) than a whole run of a few hundred requests spends on its own work, and its
    typed request and response layers cost more CPU per request than the rest of a run. lvegit needs none of
    that: it retries, reads Retry-After and parses the body itself. The official client (`client`) is built
    on first use, with the same endpoint and key, for the Batch API's files and batches."""

    def __init__(
        self,
        name: str,
        *,
        azure: bool = False,
        base_url: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        timeout: float = 60.0,
        label: str | None = None,  # the model id as the user wrote it (openai/gpt-4o), for messages
    ) -> None:
        self.backend = "azure" if azure else "openai"
        self.concurrency = DEFAULT_CONCURRENCY
        self.name = name
        self.timeout = timeout
        self._azure = azure
        self._session: Any = None
        self._proxy: str | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        if azure:
            endpoint = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
            key = api_key or os.environ.get("AZURE_OPENAI_API_KEY") or os.environ.get("AZURE_OPENAI_KEY")
            self.api_version = api_version or os.environ.get("OPENAI_API_VERSION") or "2024-06-01"
            if not endpoint or not key:
                raise UsageError("Azure OpenAI needs AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY")
            self.base_url = endpoint.rstrip("/")
            deployment = urllib.parse.quote(name, safe="")
            query = urllib.parse.urlencode({"api-version": self.api_version})
            self.url = f"{self.base_url}/openai/deployments/{deployment}/chat/completions?{query}"
            self.headers = {"api-key": key}
        else:
            key = api_key or os.environ.get("OPENAI_API_KEY")
            url = base_url or os.environ.get("OPENAI_BASE_URL")
            if not key and not url:
                raise UsageError(
                    f"model '{label or name}' needs OPENAI_API_KEY "
                    "(or OPENAI_BASE_URL for a compatible server)"
                )
            self.base_url = (url or "https://api.openai.com/v1").rstrip("/")
            self.url = f"{self.base_url}/chat/completions"
            self.headers = {"Authorization": f"Bearer {key or 'none'}", **_organization_headers()}
        self._key = key
        self._where = urllib.parse.urlsplit(self.base_url).netloc

    @property
    def client(self) -> Any:
        """The official client for this endpoint (the Batch API's files and batches); its retries are off."""
        if self._client is None:
            import openai

            if self._azure:
                self._client = openai.AsyncAzureOpenAI(
                    azure_endpoint=self.base_url,
                    api_key=self._key,
                    api_version=self.api_version,
                    max_retries=0,
                    timeout=self.timeout,
                    http_client=_http_client(),
                )
            else:
                self._client = openai.AsyncOpenAI(
                    api_key=self._key or "none",
                    base_url=self.base_url,
                    max_retries=0,
                    timeout=self.timeout,
                    http_client=_http_client(),
                )
        return self._client

    def _open_session(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            self._session_loop = loop  # a session serves the event loop it was made in
            self._session = aiohttp.ClientSession(
                headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                connector=aiohttp.TCPConnector(limit=0),  # the runner bounds what is in flight
            )
            self._proxy = environment_proxy(self.url)
        return self._session

    async def complete(self, messages: list[Message], model_args: dict[str, Any]) -> Completion:
        import aiohttp

        body = chat_body(self.name, messages, model_args)
        try:
            session = self._open_session()
            async with session.post(self.url, json=body, proxy=self._proxy) as response:
                status, headers, raw = response.status, response.headers, await _body(response)
        except TimeoutError:
            raise TransientModelError(f"the request to {self._where} timed out") from None
        except aiohttp.ClientError as exc:
            raise _connection_error(exc, self._where) from None
        if status >= 400:
            raise status_error(status, headers, _body_message(raw))
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise TransientModelError("malformed response: the body is not JSON") from None
        return completion_of(parsed, self.name)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._client is not None:
            await self._client.close()
            self._client = None


# A chat answer larger than this is refused (as malformed) rather than held in memory: a server that
# streams without end cannot exhaust the run.
MAX_BODY_BYTES = 64 * 1024 * 1024


async def _body(response: Any) -> bytes:
    chunks, size = [], 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise TransientModelError(f"malformed response: the body is over {MAX_BODY_BYTES:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _body_message(raw: bytes) -> str:
    """The API's own message where an error answer's body carries one, else the body's start."""
    try:
        error = json.loads(raw).get("error", {})
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    except (ValueError, AttributeError):
        pass
    return raw.decode("utf-8", "replace")[:500]


def status_error(status: int, headers: Any, message: str) -> ModelError:
    """An HTTP error answer (from aiohttp or the openai client) as lvegit's error: transient (rate limit,
    server error, 408, 409) or not, with the API's message."""
    if status == 429:
        return TransientModelError(f"rate limited (429): {message}", retry_after(headers))
    if status >= 500:
        return TransientModelError(f"server error ({status})", retry_after(headers))
    if status in (408, 409):
        return TransientModelError(f"HTTP {status}", retry_after(headers))
    return ModelError(f"HTTP {status}: {message}")
