"""A caller's number as one customer key: the whole number in E.164, or nothing.

The SIP From number is only the caller's claim, and comparing trailing digits made +33 9 30 55 55 55 the
customer of +49 30 555555 (issue 29). Numbers are read with the numbering plans of `phonenumbers`; a national
form ("030 555555") is read in the shop's region. Withheld, malformed or unallocated numbers are no customer.
"""

from __future__ import annotations

import phonenumbers

# What PBXs and trunks put in From for a withheld number; never a customer, even if digits follow.
_WITHHELD = ("anonymous", "unknown", "restricted", "private", "withheld", "unavailable")
# Longer input is not a phone number but a transcription or an attack on the parser.
_MAX_CHARS = 64


def customer_key(number: str, region: str) -> str:
    """The number in E.164 ("+4930555555"), or "" when it names no customer."""
    if not isinstance(number, str):
        return ""
    text = number.strip()
    if not text or len(text) > _MAX_CHARS or text.casefold().startswith(_WITHHELD):
        return ""
    try:
        parsed = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return ""
    # Valid, not merely possible: the number must lie in an allocated range of its country's plan.
    if not phonenumbers.is_valid_number(parsed):
        return ""
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def last_digits(key: str, count: int = 4) -> str:
    """The last digits of a customer key, as a caller reads them off their own number."""
    digits = "".join(c for c in key if c.isdigit())
    return digits[-count:] if len(digits) >= count else ""
