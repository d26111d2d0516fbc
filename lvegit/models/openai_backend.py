"""OpenAI chat completions through the official `openai` client: api.openai.com, any OpenAI-compatible
server (vLLM, Ollama, LM Studio; via OPENAI_BASE_URL or the routing file) and Azure OpenAI.

The client's own retries are off: lvegit's runner retries with backoff and reads Retry-After itself.
"""

from __future__ import annotations

import email.utils
import os
import socket
import time
import urllib.parse
from typing import Any

from lvegit.errors import UsageError
from lvegit.models.base import (
    DEFAULT_CONCURRENCY,
    Completion,
    ModelError,
    TransientModelError,
    chat_body,
)
from lvegit.prompt import Message


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

    if isinstance(exc, openai.RateLimitError):
        return TransientModelError(f"rate limited (429): {exc.message}", retry_after(exc.response.headers))
    if isinstance(exc, openai.InternalServerError):
        return TransientModelError(f"server error ({exc.status_code})", retry_after(exc.response.headers))
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
        return _connection_error(exc, urllib.parse.urlsplit(str(base_url)).netloc)
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (408, 409) or exc.status_code >= 500:
            return TransientModelError(f"HTTP {exc.status_code}", retry_after(exc.response.headers))
        return ModelError(f"HTTP {exc.status_code}: {_message(exc)}")
    return TransientModelError(f"malformed response: {exc}")  # APIResponseValidationError, ValueError


def _connection_error(exc: BaseException, where: str) -> TransientModelError:
    """What went wrong with the connection, from the exceptions beneath the client's: some HTTP transports
    report a refused connection as a connect timeout."""
    import openai

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return TransientModelError(f"connection refused by {where}", refused=True)
        if isinstance(cause, socket.gaierror):
            return TransientModelError(f"cannot resolve the host of {where}", refused=True)
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, openai.APITimeoutError):
        return TransientModelError(f"the request to {where} timed out")
    return TransientModelError(f"connection to {where} failed: {getattr(exc, 'message', exc)}")


def completion_of(response: Any, model: str) -> Completion:
    """The text of a chat-completions response body (live, or a line of a batch output file)."""
    try:
        text = response["choices"][0]["message"]["content"]
        resolved = str(response.get("model") or model)
    except (AttributeError, IndexError, KeyError, TypeError):
        raise TransientModelError("malformed response: no choices[0].message.content") from None
    if not isinstance(text, str):
        raise TransientModelError("malformed response: the message has no text content")
    return Completion(text, resolved)


class OpenAIModel:
    def __init__(
        self,
        name: str,
        *,
        azure: bool = False,
        base_url: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.backend = "azure" if azure else "openai"
        self.concurrency = DEFAULT_CONCURRENCY
        self.name = name
        if azure:
            endpoint = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
            key = api_key or os.environ.get("AZURE_OPENAI_API_KEY") or os.environ.get("AZURE_OPENAI_KEY")
            version = api_version or os.environ.get("OPENAI_API_VERSION") or "2024-06-01"
            if not endpoint or not key:
                raise UsageError("Azure OpenAI needs AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY")
            import openai  # after the credentials: a check without them does not pay for importing it

            self.client: Any = openai.AsyncAzureOpenAI(
                azure_endpoint=endpoint,
                api_key=key,
                api_version=version,
                max_retries=0,
                timeout=timeout,
                http_client=_http_client(),
            )
        else:
            key = api_key or os.environ.get("OPENAI_API_KEY")
            url = base_url or os.environ.get("OPENAI_BASE_URL")
            if not key and not url:
                raise UsageError(
                    f"model '{name}' needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server)"
                )
            import openai

            self.client = openai.AsyncOpenAI(
                api_key=key or "none",
                base_url=url,
                max_retries=0,
                timeout=timeout,
                http_client=_http_client(),
            )

    async def complete(self, messages: list[Message], model_args: dict[str, Any]) -> Completion:
        import openai

        # The request goes through the client's generic `post` (auth, base URL, Azure deployment paths and
        # errors all as for chat.completions.create) with a plain JSON body, and `cast_to=object` hands back
        # the parsed body as it is: building and parsing typed models costs more CPU per request than the
        # rest of a run, which caps throughput at high concurrency. (Only the client's own API: lvegit does
        # not depend on its transport library, which openai has changed before.)
        body = chat_body(self.name, messages, model_args)
        try:
            response = await self.client.post("/chat/completions", body=body, cast_to=object)
        except (openai.APIError, ValueError) as exc:
            raise api_error(exc, self.client.base_url) from None
        return completion_of(response, self.name)

    async def close(self) -> None:
        await self.client.close()
