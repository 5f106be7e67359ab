"""The tools the shop's agents call: sales (`sales`), refunds (`refund`), the words their results say them in
(`results`) and the phrases that choose them (`phrases`). Every result is JSON for the model with a "say" line written
for the ear: it is the agent's reply (swarm.tools.Tool.says_result)."""

from __future__ import annotations

from callcenter.shop_backend import ShopBackend
from callcenter.shop_tools.phrases import OPERATOR_PHRASES, RETURN_PHRASES, SALES_PHRASES
from callcenter.shop_tools.refund import ORDER_NUMBER_MAX_DIGITS, refund_tools
from callcenter.shop_tools.results import digits, euros
from callcenter.shop_tools.sales import sales_tools
from callcenter.verification import Verification
from swarm import Tool

__all__ = [
    "OPERATOR_PHRASES",
    "ORDER_NUMBER_MAX_DIGITS",
    "RETURN_PHRASES",
    "SALES_PHRASES",
    "digits",
    "euros",
    "shop_tools",
]


def shop_tools(
    shop: ShopBackend,
    verification: Verification | None = None,
    *,
    status_only: frozenset[str] = frozenset(),
    operator: bool = True,
) -> list[Tool]:
    """The sales and refund tools, bound to one shop (callcenter.shop_tools.refund says who may read an order, and
    what is said without an `operator` to transfer to)."""
    return [*sales_tools(shop), *refund_tools(shop, verification, status_only=status_only, operator=operator)]
