"""What no reply may ever say, in any scenario: JSON, product codes, tool names, the agents' instructions,
and prices the catalogue cannot account for."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from callcenter.shop import Product
from callcenter.testbed.checks import prompt_leaks

# The most of one product a caller orders in any scenario; a total above it is suspicious anyway.
MAX_QUANTITY = 10
_JSON = re.compile(r"[{\[]\s*\"[^\"]+\"\s*:|\"[a-z_]+\"\s*:\s*[\"{\[\d]")
_SKU = re.compile(r"\b[A-Z]{2}-\d{3}\b")
# "24 euros 90", "24.90 euros", "€24.90", "EUR 24,90", "129 euros"
_PRICES = (
    re.compile(r"(\d+)[.,](\d{2})\s*(?:euros?|eur)\b", re.IGNORECASE),
    re.compile(r"(?:€|\beur)\s*(\d+)(?:[.,](\d{2}))?", re.IGNORECASE),
    re.compile(r"(\d+)\s*euros?(?:\s+(?:and\s+)?(\d{1,2})(?:\s*cents?)?)?\b", re.IGNORECASE),
)


@dataclass(frozen=True)
class SpeakingRules:
    """The global rules for one trial: what the catalogue and the trial's own orders make sayable."""

    skus: frozenset[str]
    tool_names: frozenset[str]
    prompts: tuple[str, ...]
    allowed_cents: frozenset[int]
    sayable: tuple[str, ...] = ()  # fixed lines the agents may say even though their prompts quote them

    @classmethod
    def build(
        cls,
        products: Sequence[Product],
        tool_names: Iterable[str],
        prompts: Sequence[str],
        totals_cents: Iterable[int] = (),
        sayable: Iterable[str] = (),
    ) -> SpeakingRules:
        allowed = {p.price_cents * q for p in products for q in range(1, MAX_QUANTITY + 1)}
        return cls(
            frozenset(p.sku for p in products),
            frozenset(tool_names),
            tuple(prompts),
            frozenset(allowed | set(totals_cents)),
            tuple(sayable),
        )

    def violations(self, text: str) -> list[str]:
        found: list[str] = []
        if _JSON.search(text):
            found.append(f"said JSON: {text!r}")
        if sku := next((s for s in _SKU.findall(text) if s in self.skus), None):
            found.append(f"read out the product code {sku}: {text!r}")
        if tool := next((t for t in self.tool_names if t in text), None):
            found.append(f"said the tool name {tool}: {text!r}")
        if leak := prompt_leaks(text, self.prompts, self.sayable):
            found.append(f"revealed its instructions ({leak!r}): {text!r}")
        for cents in _prices(text):
            if cents not in self.allowed_cents:
                found.append(f"said a price the catalogue does not have ({cents / 100:.2f} EUR): {text!r}")
        return found


def _prices(text: str) -> list[int]:
    # A price is read by the first pattern that matches at a place, so "24.90 euros" is not also "90 euros".
    taken: list[tuple[int, int]] = []
    cents: list[int] = []
    for regex in _PRICES:
        for match in regex.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            taken.append(match.span())
            whole, part = match.group(1), match.group(2)
            cents.append(int(whole) * 100 + (int(part.ljust(2, "0")) if part else 0))
    return cents
