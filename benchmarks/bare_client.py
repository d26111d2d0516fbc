"""The yardstick of the live-run benchmark: the least a Python client on aiohttp does for the same run.

`python benchmarks/bare_client.py URL REQUESTS CONCURRENCY` imports aiohttp and posts REQUESTS chat
completions ("Compute i + 1.") to URL/chat/completions over one session, CONCURRENCY at a time, reading each
answer. No command line, no LVEs, no validation, no checker, no output: what lvegit's figure adds to this
one is lvegit's own work; what this one adds to the ideal is the interpreter, aiohttp and the machine.
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp


async def post_all(url: str, requests: int, concurrency: int) -> None:
    slots = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def post(number: int) -> None:
            body = {"model": "bench", "messages": [{"role": "user", "content": f"Compute {number} + 1."}]}
            async with slots, session.post(f"{url}/chat/completions", json=body) as answer:
                await answer.json()

        await asyncio.gather(*(post(number) for number in range(requests)))


if __name__ == "__main__":
    asyncio.run(post_all(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
