"""The header section: names (compact forms, canonical case), the multi-map, and the structured
values the stack reads (name-addr for From/To/Contact/Route, Via)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .syntax import (
    TOKEN,
    WSP,
    SipParseError,
    format_params,
    is_token,
    parse_params,
    parse_uint,
    quote,
    read_quoted,
    split_outside,
)
from .uri import SipUri

_CANONICAL = [
    "Accept",
    "Accept-Contact",
    "Accept-Encoding",
    "Accept-Language",
    "Alert-Info",
    "Allow",
    "Allow-Events",
    "Authentication-Info",
    "Authorization",
    "Call-ID",
    "Call-Info",
    "Contact",
    "Content-Disposition",
    "Content-Encoding",
    "Content-Language",
    "Content-Length",
    "Content-Type",
    "CSeq",
    "Date",
    "Error-Info",
    "Event",
    "Expires",
    "From",
    "Identity",
    "Identity-Info",
    "In-Reply-To",
    "Max-Forwards",
    "MIME-Version",
    "Min-Expires",
    "Min-SE",
    "Organization",
    "P-Asserted-Identity",
    "P-Preferred-Identity",
    "Path",
    "Priority",
    "Privacy",
    "Proxy-Authenticate",
    "Proxy-Authorization",
    "Proxy-Require",
    "RAck",
    "Reason",
    "Record-Route",
    "Refer-To",
    "Referred-By",
    "Reject-Contact",
    "Replaces",
    "Reply-To",
    "Request-Disposition",
    "Require",
    "Retry-After",
    "Route",
    "RSeq",
    "Server",
    "Service-Route",
    "Session-Expires",
    "Subject",
    "Subscription-State",
    "Supported",
    "Timestamp",
    "To",
    "Unsupported",
    "User-Agent",
    "Via",
    "Warning",
    "WWW-Authenticate",
]
# RFC 3261 §7.3.3 and the extensions that registered one-letter forms.
COMPACT_FORMS = {
    "a": "Accept-Contact",
    "b": "Referred-By",
    "c": "Content-Type",
    "d": "Request-Disposition",
    "e": "Content-Encoding",
    "f": "From",
    "i": "Call-ID",
    "j": "Reject-Contact",
    "k": "Supported",
    "l": "Content-Length",
    "m": "Contact",
    "n": "Identity-Info",
    "o": "Event",
    "r": "Refer-To",
    "s": "Subject",
    "t": "To",
    "u": "Allow-Events",
    "v": "Via",
    "x": "Session-Expires",
    "y": "Identity",
}
_BY_LOWER = {name.lower(): name for name in _CANONICAL} | COMPACT_FORMS
# Headers defined as comma-separated lists (#rule). Only these are split by get_all: the others hold
# commas inside their values (Date, WWW-Authenticate, Authorization, ...) or are single-valued.
LIST_HEADERS = frozenset(
    name.lower()
    for name in [
        "Accept",
        "Accept-Contact",
        "Accept-Encoding",
        "Accept-Language",
        "Alert-Info",
        "Allow",
        "Allow-Events",
        "Call-Info",
        "Contact",
        "Content-Encoding",
        "Content-Language",
        "Error-Info",
        "P-Asserted-Identity",
        "P-Preferred-Identity",
        "Path",
        "Proxy-Require",
        "Reason",
        "Record-Route",
        "Reject-Contact",
        "Request-Disposition",
        "Require",
        "Route",
        "Service-Route",
        "Supported",
        "Unsupported",
        "Via",
        "Warning",
    ]
)


def canonical_name(name: str) -> str:
    """'v' -> 'Via', 'cSeQ' -> 'CSeq'; unknown names are returned as given."""
    return _BY_LOWER.get(name.lower(), name)


def _checked(name: str, value: str) -> tuple[str, str]:
    if not is_token(name):
        raise ValueError(f"invalid header name {name!r}")
    if "\r" in value or "\n" in value:
        raise ValueError(f"header {name}: value contains CR or LF")
    return canonical_name(name), value


class Headers:
    """An ordered, case-insensitive multi-map of raw header values, compact names stored as full names."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        self._items: list[tuple[str, str]] = []
        for name, value in items:
            self.add(name, value)

    def add(self, name: str, value: str) -> None:
        self._items.append(_checked(name, value))

    def get(self, name: str) -> str | None:
        key = canonical_name(name).lower()
        return next((v for n, v in self._items if n.lower() == key), None)

    def get_all(self, name: str) -> list[str]:
        """Every value, with list headers split on commas outside quotes and <...> (empty items dropped)."""
        key = canonical_name(name).lower()
        values = [v for n, v in self._items if n.lower() == key]
        if key not in LIST_HEADERS:
            return values
        items = (item.strip(WSP) for value in values for item in split_outside(value, ","))
        return [item for item in items if item]

    def set(self, name: str, value: str) -> None:
        """Replaces every value of `name` with one, kept where the first one was (appended if absent)."""
        item = _checked(name, value)
        key = item[0].lower()
        index = next((i for i, (n, _) in enumerate(self._items) if n.lower() == key), len(self._items))
        self.remove(name)
        self._items.insert(index, item)

    def remove(self, name: str) -> None:
        key = canonical_name(name).lower()
        self._items = [(n, v) for n, v in self._items if n.lower() != key]

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def copy(self) -> Headers:
        return Headers(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        return [(n.lower(), v) for n, v in self._items] == [(n.lower(), v) for n, v in other._items]

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


@dataclass
class NameAddr:
    """A name-addr or addr-spec with header parameters (From, To, Contact, Route, Record-Route, ...).

    `display` is unquoted and unescaped; parameter values keep their quotes if they had them.
    """

    display: str | None
    uri: SipUri
    params: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> NameAddr:
        text = text.strip(WSP)
        if not text:
            raise SipParseError("empty address")
        if text.startswith('"'):
            display, end = read_quoted(text, 0)
            rest = text[end:].lstrip(WSP)
            if not rest.startswith("<"):
                raise SipParseError(f"quoted display name not followed by <URI> in {text!r}")
            return cls._bracketed(display, rest, text)
        if "<" in text:
            index = text.index("<")
            words = [w for w in text[:index].replace("\t", " ").split(" ") if w]
            bad = next((w for w in words if not is_token(w)), None)
            if bad is not None:
                raise SipParseError(f"display name {text[:index].strip()!r} has characters that need quotes")
            return cls._bracketed(" ".join(words) if words else None, text[index:], text)
        # addr-spec: RFC 3261 §20 gives everything after the first ';' to the header, and a URI
        # with ',', ';' or '?' must be enclosed in <>.
        uri_text, semicolon, param_text = text.partition(";")
        uri_text = uri_text.rstrip(WSP)
        if "," in uri_text or "?" in uri_text:
            raise SipParseError(f"URI with ',' or '?' must be enclosed in <>: {text!r}")
        return cls(None, SipUri.parse(uri_text), parse_params(semicolon + param_text, text))

    @classmethod
    def _bracketed(cls, display: str | None, rest: str, text: str) -> NameAddr:
        end = rest.find(">")
        if end < 0:
            raise SipParseError(f"'<' without '>' in {text!r}")
        return cls(display, SipUri.parse(rest[1:end]), parse_params(rest[end + 1 :], text))

    @property
    def tag(self) -> str | None:
        return self.params.get("tag")

    def __str__(self) -> str:
        display = quote(self.display) + " " if self.display is not None else ""
        return f"{display}<{self.uri}>{format_params(self.params)}"


_VIA_RE = re.compile(rf"[ \t]*({TOKEN})[ \t]*/[ \t]*({TOKEN})[ \t]*/[ \t]*({TOKEN})[ \t]+([^;]*?)[ \t]*(;.*)?", re.S)
_SENT_BY_RE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-_.]+)(?:[ \t]*:[ \t]*([0-9]+))?")


@dataclass
class Via:
    """One via-parm: `SIP/2.0/<transport> host[:port];params`; IPv6 hosts without brackets."""

    transport: str
    host: str
    port: int | None = None
    params: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Via:
        match = _VIA_RE.fullmatch(text)
        if match is None:
            raise SipParseError(f"Via {text!r} is not 'SIP/2.0/<transport> <host>[:port][;params]'")
        name, version, transport, sent_by, param_text = match.groups()
        if name.upper() != "SIP" or version != "2.0":
            raise SipParseError(f"Via {text!r}: protocol {name}/{version} is not SIP/2.0")
        host_match = _SENT_BY_RE.fullmatch(sent_by)
        if host_match is None:
            raise SipParseError(f"Via {text!r}: invalid sent-by {sent_by!r}")
        host, port_text = host_match.groups()
        port = parse_uint(port_text, f"Via {text!r}: port", 65535) if port_text else None
        return cls(transport.upper(), host.strip("[]"), port, parse_params(param_text or "", f"Via {text!r}"))

    @property
    def branch(self) -> str | None:
        return self.params.get("branch")

    @property
    def received(self) -> str | None:
        return self.params.get("received")

    @property
    def rport(self) -> int | None:
        """The rport value (RFC 3581); None when absent or empty. Test presence with `"rport" in params`."""
        value = self.params.get("rport")
        return int(value) if value and value.isascii() and value.isdigit() and len(value) <= 5 else None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"SIP/2.0/{self.transport} {host}{port}{format_params(self.params)}"
