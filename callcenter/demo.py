"""`make demo`: two conversations with the demo shop, a purchase and a return, printed as they happen.

Until the voice path lands this runs as text; it uses Ollama when one answers at OLLAMA_HOST with the
configured model, and otherwise the offline router, and says which.
"""
from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from callcenter.app import App, open_app
from callcenter.cli import turn_events
from callcenter.config import load_config

CALLER = "+44 20 7946 0321"
CALLS = {
    "a caller who buys": ["Hello?", "I'd like to buy a new phone charger.", "Yes, please."],
    "a caller who returns": ["I want to return the headphones I bought last week.", "Yes."],
}


async def run_call(app: App, title: str, lines: list[str]) -> None:
    print(f"\n=== {title} ({CALLER})")
    session = app.session(f"demo-{title.split()[-1]}", CALLER)
    for line in lines:
        print(f"  caller: {line}")
        seen = len(session.events)
        await session.complete(line)
        for item in turn_events(session.events[seen:]):
            if item["event"] == "agent_change":
                print(f"          (handed over to {item['to']})")
            elif item["event"] == "tool_call":
                print(f"          (tool {item['name']})")
            else:
                print(f"  {item['agent']:>6}: {item['text']}")


def show_rows(app: App) -> None:
    print("\n=== what the shop's database holds now")
    for order in app.shop.find_orders(customer_phone=CALLER):
        items = ", ".join(f"{line.quantity} x {line.name}" for line in order.lines)
        returned = sum(line.returned_quantity for line in order.lines)
        note = f", {returned} returned" if returned else ""
        print(f"  order {order.order_number} of {order.created_at:%d %b}: {items}, {order.total_cents / 100:.2f} EUR{note}")


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        config = replace(load_config(), database=str(Path(folder) / "demo-shop.db"))
        app = await open_app(config)
        try:
            print(f"VoiceSwarm demo — brain: {app.brain}")
            app.shop.seed_demo_order(CALLER, [("HP-100", 1)], days_ago=6)
            for title, lines in CALLS.items():
                await run_call(app, title, lines)
            show_rows(app)
        finally:
            app.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
