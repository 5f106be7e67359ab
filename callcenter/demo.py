"""`make demo`: a real SIP server takes two real calls from the built-in caller: a purchase and a return.

Both sides are printed as they happen: what the caller says (spoken by Piper, sent as RTP) and what the
caller hears (the agent's voice, transcribed by Whisper). The agents' LLM is the local model (llama.cpp's
server with the packaged Qwen2.5-Coder-1.5B), unless VOICESWARM_LLM names another provider; when the local
model cannot run, the demo says why and uses the offline router.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from callcenter.call_records import CallRecords
from callcenter.config import Config, load_config
from callcenter.local_model import missing_local_model
from callcenter.server import VoiceServer
from callcenter.testbed.dialer import CallerTiming, TestCaller
from callcenter.voice import SpeechModels
from speech import ModelError
from swarm import ProviderError

CALLER = "+442079460321"
DEMO_LLM_TIMEOUT_S = 60.0
CALLS = {
    "a caller who buys": ["I'd like to buy a new phone charger.", "Yes, please."],
    "a caller who returns": ["I want to return the headphones I bought last week.", "Yes."],
}
# What the caller says when, after their yes, nothing is written yet (a model reads back once more, or asks
# which one): a caller on the phone would answer, at most twice. Not "only after a question": on a busy
# machine the agent's question can come after the caller has taken the pause for the end of its turn.
ANSWERS = {"a caller who buys": "Yes, one USB-C phone charger, please.", "a caller who returns": "Yes, please."}
MAX_ANSWERS = 2


def demo_config(folder: Path) -> Config:
    config = load_config()
    if not os.environ.get("VOICESWARM_LLM"):
        # A demo on a busy or slow machine should still finish: the model gets longer than a caller would wait.
        config = replace(
            config, llm=replace(config.llm, provider="local", timeout=max(config.llm.timeout, DEMO_LLM_TIMEOUT_S))
        )
    return replace(
        config,
        database=str(folder / "shop.db"),
        sip=replace(config.sip, listen="127.0.0.1:0"),
        voice=replace(config.voice, calls_database=str(folder / "calls.db"), metrics_listen=""),
    )


def show_line(start: float) -> Callable[[str, str], None]:
    def show(who: str, text: str) -> None:
        print(f"  {time.monotonic() - start:5.1f}s  {who:>6}: {text}", flush=True)

    return show


async def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        config = demo_config(Path(folder))
        print("Loading Whisper, Piper and the voice activity model...", flush=True)
        speech = await asyncio.to_thread(SpeechModels.load, config.voice)
        provider = config.llm.provider
        if provider == "local" and (missing := missing_local_model(config.llm.local_model)):
            print(f"The local model cannot run ({missing}): the offline router answers instead.", flush=True)
            provider = "offline"
        if provider == "local":
            print(
                f"Starting the local model ({config.llm.local_model}) and filling its prompt cache with the agents' "
                "prompts (a minute on 2 cores)...",
                flush=True,
            )
        async with contextlib.AsyncExitStack() as stack:
            try:
                server = await stack.enter_async_context(VoiceServer(config, provider=provider, speech=speech))
            except (ProviderError, ModelError) as error:
                print(f"The {provider} LLM failed to start ({error}): the offline router answers instead.", flush=True)
                server = await stack.enter_async_context(VoiceServer(config, provider="offline", speech=speech))
            host, port = server.address
            print(f"VoiceSwarm answers SIP on {host}:{port} — LLM: {server.app.llm}", flush=True)
            server.app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
            for title, lines in CALLS.items():
                print(f"\n=== {title}: the built-in caller dials sip:shop@{host}:{port}", flush=True)
                # The caller waits for a reply as long as the model may take (a turn can be two replies).
                caller = TestCaller(
                    speech,
                    caller_id=CALLER,
                    on_line=show_line(time.monotonic()),
                    timing=CallerTiming(turn_timeout_s=2 * server.config.llm.timeout + 10),
                )
                await converse(caller, f"sip:shop@{host}:{port}", lines, ANSWERS[title], written(server.app.shop))
            await asyncio.sleep(0.5)  # the server writes its call records as the calls end
            show_rows(server.app.shop, server.records, server.config.voice.end_silence_ms / 1000)
        speech.close()
    return 0


def written(shop) -> Callable[[], bool]:  # the demo's Shop
    """True once the shop holds a new order or a new return for the caller."""

    def count() -> tuple[int, int]:
        orders = shop.find_orders(customer_phone=CALLER)
        return len(orders), sum(line.returned_quantity for order in orders for line in order.lines)

    before = count()
    return lambda: count() != before


async def converse(caller: TestCaller, uri: str, lines: list[str], answer: str, done: Callable[[], bool]) -> None:
    """Say `lines`, each after the agent's turn; then `answer` until something is written (at most MAX_ANSWERS)."""
    async with caller.connected(uri):
        await caller.agent_turn()
        for line in lines:
            await caller.say(line)
            await caller.agent_turn()
            show_wait(caller)
        for _ in range(MAX_ANSWERS):
            if done():
                break
            await caller.say(answer)
            await caller.agent_turn()
            show_wait(caller)


def show_wait(caller: TestCaller) -> None:
    """What the caller waited after their last line, from what their phone received: the end of their voice to the
    first sound of the agent (an acknowledgement counts)."""
    _, ended = caller.exchange.spoken[-1]
    first = caller.exchange.first_sound(ended)
    waited = "nothing heard" if first is None else f"{first - ended:.2f} s"
    print(f"         {'':>6}  (the caller waited {waited} from the end of their voice to the first sound)", flush=True)


def show_rows(shop, records: CallRecords, end_silence_s: float) -> None:  # the demo's Shop
    print("\n=== what the shop's database holds now")
    for order in shop.find_orders(customer_phone=CALLER):
        items = ", ".join(f"{line.quantity} x {line.name}" for line in order.lines)
        returned = sum(line.returned_quantity for line in order.lines)
        note = f", {returned} returned" if returned else ""
        print(
            f"  order {order.order_number} of {order.created_at:%d %b}: {items}, {order.total_cents / 100:.2f} EUR{note}"
        )
    print("\n=== call records")
    for record in reversed(records.recent(2)):
        print(
            f"  {record.call_id[:16]}  {record.disposition:<11} agents {' > '.join(record.agents)}; "
            f"orders {record.orders or '-'}; returns {record.returns or '-'}"
        )
        for turn in record.turns:
            first, answer = turn.get("first_sound_s"), turn.get("answer_s")
            if first is not None and answer is not None:
                print(
                    f"      turn: first sound {first:.2f} s, the answer {answer:.2f} s after the end of the turn (the "
                    f"server's clock; the caller's voice ended {end_silence_s:.2f} s before it)"
                )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
