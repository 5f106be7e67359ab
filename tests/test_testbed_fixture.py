"""The `agent_under_test` fixture, as a call centre's own tests use it (tests/conftest.py enables the plugin)."""

from __future__ import annotations

import pytest


async def test_a_return_is_handed_over_and_found(agent_under_test):
    async with agent_under_test(orders={"kettle": [("KT-410", 1)]}) as s:
        r = await s.run("I want to return my kettle")
        r.expect.handoff("refund").called("find_order").says("kettle")
        assert s.agent == "refund"
        r = await s.run("yes")
        r.expect.called("create_return", order_number=s.orders["kettle"], sku="KT-410", confirmed=True)
        assert s.shop.find_orders(order_number=s.orders["kettle"])[0].status == "returned"
        s.expect.handoff("refund").not_called("place_order")


async def test_expectations_that_do_not_hold_raise(agent_under_test):
    async with agent_under_test() as s:
        r = await s.run("I'd like to buy a phone charger")
        with pytest.raises(AssertionError, match="expected hand-over\\(s\\) to refund, saw sales"):
            r.expect.handoff("refund")
        with pytest.raises(AssertionError, match="search_products must never be called"):
            r.expect.not_called("search_products")
        with pytest.raises(AssertionError, match="expected search_products with"):
            r.expect.called("search_products", query="kettle")
        with pytest.raises(AssertionError, match="which must never be said"):
            r.expect.never_says("charger")


async def test_keypad_and_silence(agent_under_test):
    async with agent_under_test() as s:
        r = await s.dtmf("0")
        assert s.call.transferred and "colleague" in r.reply
    async with agent_under_test() as s:
        assert "still there" in s.silence(9).reply
        s.silence(16)
        assert s.call.ended_by == "silence"
