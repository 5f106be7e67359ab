"""What the agents' shop tools need of a shop: the built-in store (callcenter.shop.Shop) and the call centre's own
order system over HTTP (callcenter.http_shop.HttpShop) both are one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from callcenter.store.domain import Order, Product, Return


class ShopBackend(Protocol):
    def products(self) -> list[Product]: ...

    def search(self, text: str, limit: int = 3) -> list[Product]: ...

    def get_product(self, sku: str) -> Product | None: ...

    def customer_key(self, phone: str) -> str: ...

    def place_order(
        self,
        customer_phone: str,
        items: Sequence[tuple[str, int]],
        idempotency_key: str,
        *,
        postcode: str = "",
        email: str = "",
    ) -> Order: ...

    def find_orders(
        self,
        order_number: str | None = None,
        customer_phone: str | None = None,
        product_text: str | None = None,
        limit: int = 5,
    ) -> list[Order]: ...

    def create_return(
        self, order_number: str, sku: str, quantity: int, reason: str, idempotency_key: str
    ) -> Return: ...

    def find_return(self, return_number: str) -> Return | None: ...

    def close(self) -> None: ...
