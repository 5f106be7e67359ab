"""What the supervisor's page is shown is masked by what it holds, not by its key (issue 25)."""

from __future__ import annotations

import json
import re

from callcenter.supervisor.views import masked_number, shown

CARD = "4242 4242 4242 4242"
SPOKEN_AS_ORDER = "424242424242424242424242"  # the call: a card said as an order number, 24 digits


def digits_runs(value: object) -> list[str]:
    return re.findall(r"\d{5,}", json.dumps(value, ensure_ascii=False))


def test_a_card_under_any_key_is_masked_however_deep() -> None:
    tool = {
        "kind": "tool",
        "name": "find_order",
        "arguments": {"order_number": SPOKEN_AS_ORDER, "sku": CARD.replace(" ", ""), "status": CARD},
        "result": json.dumps({"order_number": SPOKEN_AS_ORDER, "say": f"No order {CARD}."}),
        "items": [{"return_number": CARD, "name": f"card {CARD}"}],
    }
    masked = shown(tool, masked=True)
    assert digits_runs(masked) == []
    assert masked["arguments"]["order_number"].endswith("4242")
    assert masked["kind"] == "tool" and masked["name"] == "find_order"


def test_what_the_shop_says_and_the_calls_handle_stay_readable() -> None:
    row: dict[str, object] = {
        "call_id": "a84b4c76e66710@4111111111111111.example",
        "order_number": "53030123",
        "sku": "HP-100",
    }
    row |= {"name": "Wireless headphones", "created_at": "2026-05-01T10:30:00+00:00", "total_cents": 2490}
    assert shown(row, masked=True) == row


def test_a_caller_without_digits_is_masked_too() -> None:
    assert masked_number("alice.smith") == "•••"
    assert masked_number("+4930123456") == "•••3456"
    assert masked_number("anonymous") == "anonymous"
    assert shown({"caller": "evil\r\ninjected"}, masked=True) == {"caller": "•••"}
