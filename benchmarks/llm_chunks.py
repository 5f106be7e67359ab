"""How the size of llama.cpp's prompt chunks (n_batch) costs a turn that follows a cancelled read.

llama.cpp's server reads a prompt in chunks of n_batch tokens and takes up a cancelled request only between two
chunks. A read is cancelled when a call hangs up during its warm read, and an early reply when the caller goes on
talking; the turn that follows waits for the chunk's end. Per chunk size, in interleaved rounds (a fresh server
each), on the local model with the shop's threads (1 writes, 2 read):

- a cold read of a ~750-token prompt (the prompt speed, which smaller chunks might lower);
- a short request on the other slot right after a read cancelled 0.5 s into its prompt (what the next turn waits).

Usage: .venv/bin/python benchmarks/llm_chunks.py [--model qwen2.5-coder-1.5b] [--rounds 3] [--batches 64,256]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from callcenter.config import LLMConfig  # noqa: E402
from callcenter.local_model import local_model_file  # noqa: E402
from swarm.providers.local import LocalServer, ServerSpec  # noqa: E402

CANCEL_AFTER_S = 0.5


def long_prompt(tag: str) -> str:
    """~750 tokens, opened by `tag` so that no read finds it in the server's cache."""
    items = " ".join(f"Item {i} is a thing with colour {i % 7} and size {i % 5}." for i in range(50))
    return f"{tag}. Here is a list. {items}"


async def read(client: httpx.AsyncClient, url: str, text: str, slot: int, cancel_after: float | None = None) -> float:
    """Seconds until the first token of `text` on `slot`; with `cancel_after`, the read is cancelled then."""
    body = {"messages": [{"role": "user", "content": text}], "max_tokens": 1, "stream": True, "id_slot": slot}

    async def stream() -> None:
        async with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
            async for _ in response.aiter_lines():
                pass

    started = time.monotonic()
    task = asyncio.create_task(stream())
    if cancel_after is not None:
        await asyncio.sleep(cancel_after)
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return time.monotonic() - started


async def one_round(url: str, tag: str) -> tuple[float, float]:
    # A connection of its own each: llama.cpp's server may close a kept-alive one as the client reuses it.
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        await read(client, url, "hi", 1)  # the short request's slot holds its template already
        cold = await read(client, url, long_prompt(tag + "a"), 0)
        await read(client, url, long_prompt(tag + "b"), 0, cancel_after=CANCEL_AFTER_S)
        after = await read(client, url, f"hi there {tag}", 1)
        return cold, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=LLMConfig().local_model)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", default="64,256")
    args = parser.parse_args()
    model = local_model_file(args.model)
    results: dict[int, list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        for batch in (int(b) for b in args.batches.split(",")):
            spec = ServerSpec(model.path, model.chat_template, threads=1, batch_threads=2, parallel=2, batch=batch)
            server = LocalServer(spec)
            server.start()
            try:
                results.setdefault(batch, []).append(asyncio.run(one_round(server.url, f"r{round_}b{batch}")))
            finally:
                server.stop()
    print(f"\n{args.model}, medians of {args.rounds} interleaved rounds:\n")
    print("| n_batch | cold read of ~750 tokens | a short turn right after a cancelled read |")
    print("|---|---|---|")
    for batch, rows in results.items():
        cold, after = (statistics.median(row[i] for row in rows) for i in (0, 1))
        print(f"| {batch} | {cold:.2f} s | {after:.2f} s |")


if __name__ == "__main__":
    main()
