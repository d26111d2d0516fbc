"""The Batch API of an OpenAI-compatible endpoint, through the official client: upload an input file,
create a batch, find one this run already created, wait for it with growing pauses, download its output
and error files. Each call is retried while it fails transiently, as model requests are."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lvegit.base.errors import EXIT_SERVICE
from lvegit.base.settings import RetryPolicy
from lvegit.models.base import ModelError, TransientModelError
from lvegit.models.openai_backend import api_error
from lvegit.run.attempt import BATCH_KEY, RUN_KEY  # the batch's metadata: the report's own keys

T = TypeVar("T")

ENDED = ("completed", "failed", "expired", "cancelled")


class BatchError(ModelError):
    """A call of the Batch API failed for good (the message names the call and the answer)."""

    exit_code = EXIT_SERVICE


@dataclass
class Polling:
    first: float = 10.0  # seconds before the first look at a batch; each pause is half as long again
    longest: float = 600.0


class BatchAPI:
    def __init__(
        self,
        client: Any,  # openai.AsyncOpenAI or AsyncAzureOpenAI, as the route's live model has it
        azure: bool,
        policy: RetryPolicy,
        polling: Polling,
        say: Callable[[str], None],
    ) -> None:
        self.client = client
        self.endpoint = "/chat/completions" if azure else "/v1/chat/completions"
        self.policy = policy
        self.polling = polling
        self.say = say

    async def submit(self, path: Path, run: str, key: str) -> Any:
        """Upload an input file and create its batch, marked with the run and the round's key."""
        uploaded = await self._call(
            f"uploading {path.name}", lambda: self.client.files.create(file=path, purpose="batch")
        )
        return await self._call(
            "creating the batch",
            lambda: self.client.batches.create(
                input_file_id=uploaded.id,
                endpoint=self.endpoint,
                completion_window="24h",
                metadata={RUN_KEY: run, BATCH_KEY: key},
            ),
        )

    async def find(self, run: str, key: str, since: float) -> Any | None:
        """A batch this run created for `key` that the report does not know of: lvegit stopped between
        creating it and writing its id. The list is newest first: the search ends at the run's start."""

        async def search() -> Any | None:
            async for batch in self.client.batches.list(limit=100):
                if batch.created_at < since:
                    return None
                metadata = batch.metadata or {}
                if metadata.get(RUN_KEY) == run and metadata.get(BATCH_KEY) == key:
                    return batch
            return None

        return await self._call("listing the batches", search)

    async def wait(self, batch_id: str) -> Any:
        """The batch once it has ended, looked at after growing pauses; says each change of state."""
        pause, said = self.polling.first, ""
        while True:
            batch = await self._call(
                f"looking at batch {batch_id}", lambda: self.client.batches.retrieve(batch_id)
            )
            counts = batch.request_counts
            state = f"batch {batch.id}: {batch.status}"
            if counts is not None and counts.total:
                state += f" ({counts.completed + counts.failed}/{counts.total} requests done)"
            if state != said:
                self.say(state)
                said = state
            if batch.status in ENDED:
                return batch
            await self.policy.wait_for(pause)
            pause = min(self.polling.longest, pause * 1.5)

    async def download(self, file_id: str, path: Path) -> Path:
        """A file's content streamed to disk."""

        async def fetch() -> Path:
            async with self.client.files.with_streaming_response.content(file_id) as response:
                with path.open("wb") as handle:
                    async for chunk in response.iter_bytes():
                        handle.write(chunk)
            return path

        return await self._call(f"downloading file {file_id}", fetch)

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        import openai

        for retry in range(self.policy.attempts):
            try:
                return await call()
            except (openai.APIError, ValueError) as exc:
                error = api_error(exc, self.client.base_url)
            if not isinstance(error, TransientModelError) or self.policy.gives_up(retry + 1, error.refused):
                raise BatchError(f"{what}: {error}")
            await self.policy.wait(retry, error.retry_after)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
