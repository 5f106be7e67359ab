"""The shop's records and the errors its requests end in: plain values, no storage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from callcenter.errors import CallCenterError


class ShopError(CallCenterError):
    """A request the shop cannot fulfil; the message can be told to the caller."""


class UnknownProduct(ShopError):
    def __init__(self, sku: str) -> None:
        super().__init__(f"We have no product with the code {sku}.")
        self.sku = sku


class OutOfStock(ShopError):
    def __init__(self, product: Product, requested: int) -> None:
        if product.stock == 0:
            message = f"The {product.name} is out of stock."
        else:
            verb = "is" if product.stock == 1 else "are"
            message = f"Only {product.stock} of the {product.name} {verb} left in stock, not {requested}."
        super().__init__(message)
        self.sku = product.sku
        self.requested = requested
        self.available = product.stock


class NotReturnable(ShopError):
    """The order, the item or the quantity cannot be returned."""


class InvalidRequest(ShopError):
    """Arguments no order or return can be made of (no items, a quantity below one...)."""


class OneProductPerOrder(InvalidRequest):
    """The order system takes one product an order (an HTTP mapping of one product's request): several products are
    several orders."""


class ForAPerson(ShopError):
    """A request the shop's system takes from staff only (an order system without a returns API): the message says
    so to the caller, and the tool hands the call to a person."""


class ShopUnavailable(ShopError):
    """The shop's system did not answer, or answered what cannot be used; the message can be said, `detail` is what
    the system answered (for the call record and the log, never for the caller)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class RowProblem:
    """One thing wrong in a catalogue file: where (line, field; "" for the whole row or file) and why."""

    line: int
    field: str
    why: str

    def __str__(self) -> str:
        return f"line {self.line}, {self.field}: {self.why}" if self.field else f"line {self.line}: {self.why}"


class CatalogueError(ShopError):
    """A catalogue file cannot be loaded; the message names the file, and every bad row by line and field."""

    def __init__(self, message: str, problems: tuple[RowProblem, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Product:
    sku: str
    name: str
    description: str
    price_cents: int
    stock: int
    category: str


@dataclass(frozen=True, slots=True)
class OrderLine:
    sku: str
    name: str
    quantity: int
    unit_price_cents: int
    returned_quantity: int = 0

    @property
    def total_cents(self) -> int:
        return self.quantity * self.unit_price_cents

    @property
    def returnable_quantity(self) -> int:
        return self.quantity - self.returned_quantity


@dataclass(frozen=True, slots=True)
class Order:
    order_number: str  # digits only, read out one by one
    customer_phone: str
    created_at: datetime  # aware, UTC
    status: str  # "placed", "delivered" (demo history) or "returned" (every item came back)
    total_cents: int
    lines: tuple[OrderLine, ...]
    # The customer's number in E.164 ("" when it names nobody), and what the caller proves the order with
    # (callcenter.verification): never put in front of the model, never read out.
    customer_key: str = ""
    postcode: str = ""
    email: str = ""


@dataclass(frozen=True, slots=True)
class Return:
    return_number: str
    order_number: str
    sku: str
    product_name: str
    quantity: int
    reason: str
    created_at: datetime
    refund_cents: int
