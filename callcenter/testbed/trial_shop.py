"""The shop a trial runs against: the configured backend, and its end state read through that backend.

- The built-in store (no [shop.http]): each trial gets a fresh SQLite file with the scenario's setup, filled from
  the configured catalogue ([shop] catalogue; empty: the demo's); its end state is read from that file. A
  PostgreSQL URL in [shop] database is not written to: a trial needs a shop of its own, and the store's code and
  schema are the same on SQLite.
- The call centre's order system over HTTP ([shop.http]): one live system for every trial, so trials run one at a
  time; the setup's past orders are placed through its API, and the end state is what its API answers afterwards:
  the orders of the scenario's callers that were not there before the trial, and the stock of the products the
  scenario names, as a change. Scenarios name products by the demo catalogue's SKUs; a backend that numbers them
  its own way (oscar's ids) is matched by the product's name.

What an order system over HTTP cannot do, and what the trial says then (never a check that silently holds):
- a scenario whose setup it cannot make (sold-out stock: it would be sold for good; a past order of several
  products: an order over HTTP holds one) or whose reference writes a return it takes no returns for
  (no [[shop.http.create_return]]): the trial is skipped, with the reason in the report;
- returns it takes but cannot list (the mapping has no operation for that): the returns are not checked, and the
  report says so beside the trial's result;
- the order status (each system has its own words) and a past order's age are not compared;
- the agents see only the orders their trial placed (TrialView), as in the fresh shop a scenario is written for:
  earlier trials' orders of the same caller stay in the system, out of the call.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from callcenter.config import Config
from callcenter.http_shop import HttpShop, HttpShopConfig
from callcenter.shop import Shop, ShopError
from callcenter.shop_backend import ShopBackend
from callcenter.store.domain import Order, Product, Return
from callcenter.testbed.scenario import Action, Expectations, Scenario, ScenarioError, SeedOrder, ToolExpectation
from callcenter.testbed.state import STOCK_BUYER, ShopState, expected_state, prepare_shop, read_state


class TrialShop(Protocol):
    """One trial's shop: what the tools use, the scenario as this backend names its products, the state after."""

    @property
    def backend(self) -> ShopBackend: ...

    @property
    def scenario(self) -> Scenario: ...

    @property
    def values(self) -> dict[str, str]: ...

    def products(self) -> list[Product]: ...

    def close(self) -> None: ...

    def state(self) -> ShopState: ...

    def unchecked(self) -> list[str]: ...


class ShopUnderTest(Protocol):
    """The backend every trial of an eval runs against."""

    @property
    def description(self) -> str: ...

    @property
    def one_at_a_time(self) -> bool:
        """Trials share one live system: run at once, they would see each other's orders."""
        ...

    def skipped(self, scenario: Scenario) -> str | None: ...

    def expected(self, folder: Path, scenario: Scenario) -> ShopState: ...

    def open(self, folder: Path, name: str, scenario: Scenario) -> TrialShop: ...


def shop_under_test(config: Config) -> ShopUnderTest:
    """The backend a config names: [shop.http], else the built-in store with its catalogue."""
    if config.shop_http is not None:
        return HttpShopUnderTest(config.shop_http, config.callers.phone_region)
    return BuiltInStore(config.catalogue or None)


# --- the built-in store -----------------------------------------------------------------------------------------


@dataclass
class BuiltInStore:
    catalogue: str | None = None
    one_at_a_time: bool = False

    @property
    def description(self) -> str:
        return "the built-in store" + (f" with the catalogue {self.catalogue}" if self.catalogue else "")

    def skipped(self, scenario: Scenario) -> str | None:
        return None

    def expected(self, folder: Path, scenario: Scenario) -> ShopState:
        return expected_state(folder, scenario, self.catalogue)

    def open(self, folder: Path, name: str, scenario: Scenario) -> TrialShop:
        path = folder / f"{name}.db"
        shop, values = prepare_shop(path, scenario, self.catalogue)
        return StoreTrial(shop, scenario, values, path)


@dataclass
class StoreTrial:
    backend: Shop
    scenario: Scenario
    values: dict[str, str]
    path: Path

    def products(self) -> list[Product]:
        return self.backend.products()

    def close(self) -> None:
        self.backend.close()

    def state(self) -> ShopState:
        return read_state(self.path, self.values)

    def unchecked(self) -> list[str]:
        return []


# --- the call centre's order system over HTTP ---------------------------------------------------------------------

NO_RETURNS = (
    "the order system takes no returns ([shop.http] maps no create_return): the refund agent hands a return to a "
    "person, so the return this scenario expects can be neither made nor checked"
)
RETURNS_UNREAD = (
    "returns: [shop.http] maps no way to list the order system's returns, so what the agents returned (and the "
    "stock a return takes back) cannot be read back through it"
)


@dataclass
class HttpShopUnderTest:
    config: HttpShopConfig
    phone_region: str = "DE"
    one_at_a_time: bool = True
    # The scenario's SKU -> the backend's, by product name where the backend has no product of that SKU.
    _skus: dict[str, str] | None = field(default=None, repr=False)
    _products: list[Product] | None = field(default=None, repr=False)

    @property
    def description(self) -> str:
        return f"the order system at {self.config.url}"

    def skipped(self, scenario: Scenario) -> str | None:
        if scenario.sold_out:
            return (
                f"[setup] sold_out ({', '.join(scenario.sold_out)}) would sell the order system's stock for good; "
                "a shop over HTTP cannot be set back after the trial"
            )
        several = [o.name for o in scenario.seed_orders if len(o.items) > 1]
        if several:
            return f"[[setup.orders]] {', '.join(several)} hold several products; an order over HTTP holds one"
        if not self.config.create_return and any(a.action == "create_return" for a in scenario.reference):
            return NO_RETURNS
        return None

    def expected(self, folder: Path, scenario: Scenario) -> ShopState:
        """The reference actions' change on the built-in store with the demo catalogue: the orders written since the
        setup began (the setup's own included), and the stock as a change from the setup's."""
        before = folder / f"{scenario.id}.setup.db"
        shop, values = prepare_shop(before, scenario)
        shop.close()
        after = expected_state(folder, scenario)
        setup = read_state(before, values)
        # Whether and when a return puts its item back in stock is the order system's own rule: only the orders'.
        orders_only = replace(scenario, id=f"{scenario.id}.orders", reference=_orders_of(scenario))
        sold = expected_state(folder, orders_only)
        named = _named_skus(scenario)
        stock = {_change(sku): sold.stock.get(sku, 0) - n for sku, n in setup.stock.items() if sku in named}
        orders: Counter[tuple[Any, ...]] = Counter()
        for (label, phone_key, _status, total, lines), count in after.orders.items():
            orders[(label, phone_key, total, lines)] += count
        # Returns are not read back over HTTP (RETURNS_UNREAD, or NO_RETURNS: none can be written).
        return ShopState(stock, orders, Counter())

    def open(self, folder: Path, name: str, scenario: Scenario) -> TrialShop:
        backend = TrialView(HttpShop(self.config, phone_region=self.phone_region))
        try:
            skus = self._sku_map(backend, scenario)
            mine = _translated(scenario, skus)
            phones = {scenario.caller, *(o.phone or scenario.caller for o in scenario.seed_orders)}
            known = {o.order_number for phone in phones for o in backend.every_order_of(phone)}
            values = _place_setup(backend, mine, name)
            named = {skus.get(sku, sku): sku for sku in _named_skus(scenario)}
            stock = _stock(backend, named)
            return HttpTrial(backend, mine, values, self, phones, known, named, stock, self._products or [])
        except BaseException:
            backend.close()
            raise

    def _sku_map(self, backend: TrialView, scenario: Scenario) -> dict[str, str]:
        if self._skus is None:
            with Shop(":memory:") as demo:
                by_name = {p.name.casefold(): p.sku for p in demo.products()}
            self._products = backend.products()
            self._skus = {by_name[p.name.casefold()]: p.sku for p in self._products if p.name.casefold() in by_name}
            for p in self._products:  # a backend that keeps the demo's SKUs is its own match
                self._skus.setdefault(p.sku, p.sku)
        missing = sorted(sku for sku in _named_skus(scenario) if sku not in self._skus)
        if missing:
            raise ScenarioError(
                f"{scenario.path}: the order system at {self.config.url} has no product {', '.join(missing)} (by SKU "
                "or by the demo catalogue's name for it): the scenarios name the demo catalogue's products"
            )
        return self._skus

    def state_of(self, trial: HttpTrial) -> ShopState:
        reader = HttpShop(self.config, phone_region=self.phone_region)
        try:
            back: dict[str, str] = {}  # the backend's SKU -> the scenario's (a demo name's match before its own)
            for scenario_sku, backend_sku in (self._skus or {}).items():
                back.setdefault(backend_sku, scenario_sku)
            labels = {
                number: key.removeprefix("orders.")
                for key, number in trial.values.items()
                if key.startswith("orders.") and key.count(".") == 1
            }
            orders: Counter[tuple[Any, ...]] = Counter()
            for phone in trial.phones:
                for order in reader.find_orders(customer_phone=phone, limit=50):
                    if order.order_number not in trial.known:
                        orders[_comparable(order, labels, back)] += 1
            after = _stock(reader, trial.named)
            stock = {_change(trial.named[sku]): after[sku] - trial.stock[sku] for sku in trial.named}
            # Returns are not read back (RETURNS_UNREAD); with none mapped, none can have been written.
            return ShopState(stock, orders, Counter())
        finally:
            reader.close()


class TrialView:
    """The order system as one trial's agents see it: only the orders this trial placed (its setup's and the
    agents'), as the fresh shop a scenario is written for would hold. Earlier trials and runs leave orders of the
    same callers behind in a live system; a caller with none in the scenario must not find one."""

    def __init__(self, backend: HttpShop) -> None:
        self._backend = backend
        self._mine: set[str] = set()

    def every_order_of(self, phone: str) -> list[Order]:
        return self._backend.find_orders(customer_phone=phone, limit=50)

    def place_order(
        self,
        customer_phone: str,
        items: Sequence[tuple[str, int]],
        idempotency_key: str,
        *,
        postcode: str = "",
        email: str = "",
    ) -> Order:
        order = self._backend.place_order(customer_phone, items, idempotency_key, postcode=postcode, email=email)
        self._mine.add(order.order_number)
        return order

    def find_orders(
        self,
        order_number: str | None = None,
        customer_phone: str | None = None,
        product_text: str | None = None,
        limit: int = 5,
    ) -> list[Order]:
        found = self._backend.find_orders(order_number, customer_phone, product_text, limit=50)
        return [o for o in found if o.order_number in self._mine][: max(1, limit)]

    def products(self) -> list[Product]:
        return self._backend.products()

    def search(self, text: str, limit: int = 3) -> list[Product]:
        return self._backend.search(text, limit)

    def get_product(self, sku: str) -> Product | None:
        return self._backend.get_product(sku)

    def customer_key(self, phone: str) -> str:
        return self._backend.customer_key(phone)

    def create_return(self, order_number: str, sku: str, quantity: int, reason: str, idempotency_key: str) -> Return:
        if not any(o.order_number == order_number for o in self.find_orders(order_number=order_number)):
            raise ShopError(f"Order {' '.join(order_number)} has no such item.")
        return self._backend.create_return(order_number, sku, quantity, reason, idempotency_key)

    def find_return(self, return_number: str) -> Return | None:
        return self._backend.find_return(return_number)

    def close(self) -> None:
        self._backend.close()


@dataclass
class HttpTrial:
    backend: TrialView
    scenario: Scenario
    values: dict[str, str]
    under_test: HttpShopUnderTest
    phones: set[str]
    known: set[str]  # the order numbers of the scenario's callers before the trial
    named: dict[str, str]  # the backend's SKU -> the scenario's, of the products the scenario names
    stock: dict[str, int]  # their stock after the setup (backend SKUs)
    catalogue: list[Product]

    def products(self) -> list[Product]:
        return self.catalogue

    def close(self) -> None:
        self.backend.close()

    def state(self) -> ShopState:
        return self.under_test.state_of(self)

    def unchecked(self) -> list[str]:
        return [RETURNS_UNREAD] if self.under_test.config.create_return else []


def _orders_of(scenario: Scenario) -> tuple[Action, ...]:
    return tuple(a for a in scenario.reference if a.action == "place_order")


def _change(sku: str) -> str:
    return f"{sku} (change in the trial)"


def _named_skus(scenario: Scenario) -> set[str]:
    named = {sku for o in scenario.seed_orders for sku, _ in o.items} | set(scenario.sold_out)
    named |= {sku for a in scenario.reference for sku, _ in a.items} | {a.sku for a in scenario.reference if a.sku}
    return named


def _translated(scenario: Scenario, skus: dict[str, str]) -> Scenario:
    """The scenario with the backend's SKUs where it names products: its setup, reference and expected arguments."""

    def items(pairs: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
        return tuple((skus.get(sku, sku), n) for sku, n in pairs)

    def arguments(values: dict[str, Any]) -> dict[str, Any]:
        sku = values.get("sku")
        return {**values, "sku": skus.get(sku.upper(), sku)} if isinstance(sku, str) else values

    expect: Expectations = replace(
        scenario.expect,
        called=tuple(ToolExpectation(c.tool, arguments(c.arguments)) for c in scenario.expect.called),
    )
    return replace(
        scenario,
        seed_orders=tuple(replace(o, items=items(o.items)) for o in scenario.seed_orders),
        sold_out=tuple(skus.get(s, s) for s in scenario.sold_out),
        reference=tuple(
            Action(a.action, items(a.items), a.order, skus.get(a.sku, a.sku) if a.sku else a.sku, a.quantity)
            for a in scenario.reference
        ),
        expect=expect,
    )


def _place_setup(backend: TrialView, scenario: Scenario, name: str) -> dict[str, str]:
    """The setup's past orders, placed through the order system's API (now: it keeps its own dates)."""
    values = {"caller": scenario.caller}
    for seed in scenario.seed_orders:
        # A key of this run's own: an API that honours Idempotency-Key would answer an earlier run's order.
        order = _seed(backend, scenario, seed, f"testbed:{name}:{secrets.token_hex(6)}:setup:{seed.name}")
        values[f"orders.{seed.name}"] = order.order_number
        values[f"orders.{seed.name}.spoken"] = " ".join(order.order_number)
        values[f"orders.{seed.name}.postcode"] = seed.postcode
        values[f"orders.{seed.name}.postcode.spoken"] = " ".join(seed.postcode)
    return values


def _seed(backend: TrialView, scenario: Scenario, seed: SeedOrder, key: str) -> Order:
    try:
        return backend.place_order(
            seed.phone or scenario.caller, list(seed.items), key, postcode=seed.postcode, email=seed.email
        )
    except ShopError as error:
        raise ScenarioError(
            f"{scenario.path}: [[setup.orders]] {seed.name} is refused by the order system: {error}"
        ) from None


def _stock(backend: HttpShop | TrialView, skus: dict[str, str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for sku in skus:
        product = backend.get_product(sku)
        if product is None:
            raise ScenarioError(f"the order system no longer has the product {sku} ({skus[sku]})")
        found[sku] = product.stock
    return found


def _comparable(order: Order, labels: dict[str, str], back: dict[str, str]) -> tuple[Any, ...]:
    """An order as the reference's are compared over HTTP: without its status, in the scenario's SKUs."""
    label = labels.get(order.order_number, "setup" if order.customer_phone == STOCK_BUYER else "new")
    lines = tuple(sorted((back.get(ln.sku, ln.sku), ln.quantity, ln.unit_price_cents) for ln in order.lines))
    return (label, order.customer_key, order.total_cents, lines)
