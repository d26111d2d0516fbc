"""What one invocation of lvegit runs with, built once in `cli.main` and passed down: its command line and
the retry policy of model and GitHub requests. Tests configure lvegit through it (a retry policy that
records its waits instead of sleeping) rather than by patching modules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # requests per model call, the first included
    base_delay: float = 0.5
    max_delay: float = 60.0
    refused_attempts: int = 2  # an address that refuses outright gets no more than this
    sleep: Callable[[float], None] | None = None  # instead of waiting (tests record the waits); None: wait

    def gives_up(self, request: int, refused: bool) -> bool:
        """Whether the request-th request (1-based) that failed transiently is the last one."""
        return request >= (min(self.attempts, self.refused_attempts) if refused else self.attempts)

    def delay(self, retry: int, retry_after: float | None) -> float:
        import random  # here, like asyncio below: only commands that make requests need them

        if retry_after is not None:  # the server knows best; a little jitter spreads the herd
            return min(self.max_delay, retry_after) * random.uniform(1.0, 1.1)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2**retry))  # full jitter

    async def wait(self, retry: int, retry_after: float | None) -> None:
        """Wait before the retry-th retry of a model request (asynchronous: other requests go on)."""
        await self.wait_for(self.delay(retry, retry_after))

    async def wait_for(self, seconds: float) -> None:
        """Wait `seconds` without blocking the event loop (a retry, or the next look at a batch)."""
        if self.sleep is not None:
            self.sleep(seconds)
            return
        import asyncio  # here: check, validate and list import no asyncio (about 40 ms of a cold start)

        await asyncio.sleep(seconds)

    def pause(self, seconds: float) -> None:
        """Wait `seconds`, blocking: for GitHub's rate limits, whose waits PyGithub computes."""
        if self.sleep is not None:
            self.sleep(seconds)
            return
        import time

        time.sleep(seconds)


@dataclass(frozen=True)
class Settings:
    argv: tuple[str, ...] = ()  # the command line after `lvegit`, for the command that resumes a run
    retry: RetryPolicy = field(default_factory=RetryPolicy)
