"""The shop's database before and after a trial, compared the τ-bench way.

Each trial gets a fresh SQLite shop with the scenario's setup; the expected end state is what the scenario's
reference actions (calls of the shop's own write functions) leave on another fresh shop with the same setup.
Order and return numbers are random and timestamps differ, so the states are compared without them: orders
by who bought what at which price (and which setup order they were), returns by which order and item.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callcenter.shop import Shop, ShopError
from callcenter.testbed.scenario import Action, Scenario, ScenarioError

# Who bought the setup's sold-out stock: not a caller any scenario plays.
STOCK_BUYER = "+1 555 0100 999"


@dataclass(frozen=True)
class ShopState:
    """What a trial may change, without ids, numbers, timestamps, idempotency keys or free-text reasons."""

    stock: dict[str, int]
    orders: Counter[tuple[Any, ...]]
    returns: Counter[tuple[Any, ...]]

    def differences(self, expected: ShopState) -> list[str]:
        """What differs from `expected`, in words an admin can read; [] when equal."""
        found = [
            f"stock of {sku} is {self.stock.get(sku)}, expected {n}"
            for sku, n in sorted(expected.stock.items())
            if self.stock.get(sku) != n
        ]
        found += _multiset_diff("order", self.orders, expected.orders)
        found += _multiset_diff("return", self.returns, expected.returns)
        return found


def _multiset_diff(what: str, actual: Counter[tuple[Any, ...]], expected: Counter[tuple[Any, ...]]) -> list[str]:
    extra, missing = actual - expected, expected - actual
    return [f"unexpected {what} {item}" for item in sorted(extra, key=repr)] + [
        f"missing {what} {item}" for item in sorted(missing, key=repr)
    ]


def prepare_shop(path: Path, scenario: Scenario, catalogue: str | None = None) -> tuple[Shop, dict[str, str]]:
    """A fresh shop at `path` with the scenario's setup (its products from `catalogue`, else the demo's); returns it
    and the placeholder values of this shop."""
    shop = Shop(path, catalogue)
    try:
        values = {"caller": scenario.caller}
        for seed in scenario.seed_orders:
            order = shop.seed_demo_order(
                seed.phone or scenario.caller, list(seed.items), seed.days_ago, postcode=seed.postcode, email=seed.email
            )
            values[f"orders.{seed.name}"] = order.order_number
            values[f"orders.{seed.name}.spoken"] = " ".join(order.order_number)
            values[f"orders.{seed.name}.postcode"] = seed.postcode
            values[f"orders.{seed.name}.postcode.spoken"] = " ".join(seed.postcode)
        for sku in scenario.sold_out:
            product = shop.get_product(sku)
            if product is None:
                raise ScenarioError(f"{scenario.path}: [setup] sold_out: no product {sku}")
            if product.stock:
                shop.place_order(STOCK_BUYER, [(sku, product.stock)], f"testbed:sold_out:{sku}")
    except ShopError as error:
        shop.close()
        raise ScenarioError(f"{scenario.path}: [setup] cannot be made: {error}") from None
    except BaseException:
        shop.close()
        raise
    return shop, values


def apply_reference(shop: Shop, scenario: Scenario, values: dict[str, str]) -> None:
    """Replay the scenario's reference actions; one that the shop refuses is a broken scenario."""
    for index, action in enumerate(scenario.reference):
        key = f"testbed:reference:{index}"
        try:
            _apply(shop, scenario, action, values, key)
        except ShopError as error:
            raise ScenarioError(
                f"{scenario.path}: [[reference]] #{index + 1} is refused by the shop: {error}"
            ) from None


def _apply(shop: Shop, scenario: Scenario, action: Action, values: dict[str, str], key: str) -> None:
    if action.action == "place_order":
        shop.place_order(scenario.caller, list(action.items), key)
    else:
        shop.create_return(values[f"orders.{action.order}"], action.sku or "", action.quantity, "reference", key)


def expected_state(folder: Path, scenario: Scenario, catalogue: str | None = None) -> ShopState:
    path = folder / f"{scenario.id}.reference.db"
    shop, values = prepare_shop(path, scenario, catalogue)
    try:
        apply_reference(shop, scenario, values)
    finally:
        shop.close()
    return read_state(path, values)


def read_state(path: Path, values: dict[str, str]) -> ShopState:
    """The state of the shop at `path`; setup orders are named by their scenario name, new ones "new"."""
    labels = {
        number: name.removeprefix("orders.")
        for name, number in values.items()
        if name.startswith("orders.") and name.count(".") == 1  # not .spoken, .postcode
    }
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        stock = dict(conn.execute("SELECT sku, stock FROM products").fetchall())
        lines: dict[int, list[tuple[str, int, int]]] = {}
        for order_id, sku, quantity, price in conn.execute(
            "SELECT order_id, sku, quantity, unit_price_cents FROM order_lines"
        ):
            lines.setdefault(order_id, []).append((sku, quantity, price))
        orders: Counter[tuple[Any, ...]] = Counter()
        label_of: dict[int, str] = {}
        for order_id, number, phone, phone_key, status, total in conn.execute(
            "SELECT id, order_number, customer_phone, phone_key, status, total_cents FROM orders"
        ):
            label = labels.get(number, "setup" if phone == STOCK_BUYER else "new")
            label_of[order_id] = label
            orders[(label, phone_key, status, total, tuple(sorted(lines.get(order_id, []))))] += 1
        returns: Counter[tuple[Any, ...]] = Counter(
            (label_of[order_id], sku, quantity)
            for order_id, sku, quantity in conn.execute("SELECT order_id, sku, quantity FROM returns")
        )
    return ShopState(stock, orders, returns)
