"""SIP requests and responses: parse a datagram, validate, build responses, serialize.

The parser accepts everything RFC 3261 lets it frame and read, so that the next layer can still
answer 400 to a request whose headers are wrong; `validate_request` then says what is wrong.
Every failure is a `SipParseError` whose message says what and where.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from .headers import Headers, NameAddr, Via
from .syntax import TOKEN, WSP, SipParseError, is_token, parse_uint
from .uri import SipUri

__all__ = [
    "MAX_MESSAGE_SIZE",
    "REASON_PHRASES",
    "Headers",
    "MessageTooLarge",
    "NameAddr",
    "Request",
    "Response",
    "SipParseError",
    "SipUri",
    "Via",
    "make_response",
    "new_branch",
    "new_call_id",
    "new_tag",
    "parse_message",
    "validate_request",
    "validate_response",
]

MAX_MESSAGE_SIZE = 65_536
_UINT32_MAX = 2**32 - 1
_T = TypeVar("_T")
_HEADER_END_RE = re.compile(rb"\r?\n\r?\n")
_VERSION_RE = re.compile(r"SIP/[0-9]+\.[0-9]+", re.IGNORECASE)
_WORD = r"[A-Za-z0-9\-.!%*_+`'~()<>:\\\"/\[\]?{}]+"
_CALL_ID_RE = re.compile(rf"{_WORD}(?:@{_WORD})?")
_CSEQ_RE = re.compile(rf"([0-9]+)[ \t]+({TOKEN})")
_DATE_RE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT"
)

REASON_PHRASES = {
    100: "Trying",
    180: "Ringing",
    181: "Call Is Being Forwarded",
    182: "Queued",
    183: "Session Progress",
    200: "OK",
    202: "Accepted",
    204: "No Notification",
    300: "Multiple Choices",
    301: "Moved Permanently",
    302: "Moved Temporarily",
    305: "Use Proxy",
    380: "Alternative Service",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    407: "Proxy Authentication Required",
    408: "Request Timeout",
    410: "Gone",
    413: "Request Entity Too Large",
    414: "Request-URI Too Long",
    415: "Unsupported Media Type",
    416: "Unsupported URI Scheme",
    420: "Bad Extension",
    421: "Extension Required",
    422: "Session Interval Too Small",
    423: "Interval Too Brief",
    480: "Temporarily Unavailable",
    481: "Call/Transaction Does Not Exist",
    482: "Loop Detected",
    483: "Too Many Hops",
    484: "Address Incomplete",
    485: "Ambiguous",
    486: "Busy Here",
    487: "Request Terminated",
    488: "Not Acceptable Here",
    489: "Bad Event",
    491: "Request Pending",
    493: "Undecipherable",
    500: "Server Internal Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Server Time-out",
    505: "Version Not Supported",
    513: "Message Too Large",
    600: "Busy Everywhere",
    603: "Decline",
    604: "Does Not Exist Anywhere",
    606: "Not Acceptable",
}
_CLASS_PHRASES = {
    1: "Provisional",
    2: "Success",
    3: "Redirection",
    4: "Client Error",
    5: "Server Error",
    6: "Global Failure",
}


class MessageTooLarge(SipParseError):
    """A datagram over MAX_MESSAGE_SIZE bytes, refused before any parsing."""


class _HeaderAccess:
    """Typed views of the headers every message has; each raises SipParseError when missing or invalid."""

    headers: Headers

    @property
    def call_id(self) -> str:
        value = _single(self.headers, "Call-ID")
        if _CALL_ID_RE.fullmatch(value) is None:
            raise SipParseError(f"Call-ID {value!r} is not word[@word]")
        return value

    @property
    def cseq(self) -> tuple[int, str]:
        value = _single(self.headers, "CSeq")
        match = _CSEQ_RE.fullmatch(value)
        if match is None:
            raise SipParseError(f"CSeq {value!r} is not '<number> <method>'")
        return parse_uint(match[1], "CSeq number", _UINT32_MAX), match[2]

    @property
    def from_(self) -> NameAddr:
        return _name_addr(_single(self.headers, "From"), "From")

    @property
    def to(self) -> NameAddr:
        return _name_addr(_single(self.headers, "To"), "To")

    @property
    def vias(self) -> list[Via]:
        return [_with_context("Via", Via.parse, value) for value in self.headers.get_all("Via")]

    @property
    def max_forwards(self) -> int | None:
        if "Max-Forwards" not in self.headers:
            return None
        return parse_uint(_single(self.headers, "Max-Forwards"), "Max-Forwards", 255)

    @property
    def content_type(self) -> str | None:
        return self.headers.get("Content-Type")


@dataclass
class Request(_HeaderAccess):
    method: str
    uri: SipUri
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    version: str = "SIP/2.0"

    def to_bytes(self) -> bytes:
        return _serialize(f"{self.method} {self.uri} {self.version}", self.headers, self.body)


@dataclass
class Response(_HeaderAccess):
    status: int
    reason: str
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    version: str = "SIP/2.0"

    def to_bytes(self) -> bytes:
        return _serialize(f"{self.version} {self.status} {self.reason}", self.headers, self.body)


def parse_message(data: bytes) -> Request | Response:
    """Parses one UDP datagram. The body is what follows the blank line, cut to Content-Length."""
    if len(data) > MAX_MESSAGE_SIZE:
        raise MessageTooLarge(f"message of {len(data)} bytes is over the {MAX_MESSAGE_SIZE}-byte limit", status=513)
    data = bytes(data).lstrip(b"\r\n")  # RFC 3261 §7.5: ignore CRLFs before the start line
    if not data:
        raise SipParseError("empty message (only CRLF)")
    end = _HEADER_END_RE.search(data)
    if end is None:
        raise SipParseError("no blank line after the headers (truncated message?)")
    # surrogateescape keeps bytes that are not UTF-8, so what we echo back is what we received.
    lines = [line.removesuffix("\r") for line in data[: end.start()].decode("utf-8", "surrogateescape").split("\n")]
    headers = _parse_headers(lines[1:])
    body = _frame_body(headers, data[end.end() :])
    start = lines[0]
    if start[:4].upper() == "SIP/":
        return _parse_status_line(start, headers, body)
    return _parse_request_line(start, headers, body)


def validate_request(request: Request) -> None:
    """Raises SipParseError (status 400, or 505 for the version) when the request cannot be served."""
    if request.version != "SIP/2.0":
        raise SipParseError(f"SIP version {request.version} is not supported", status=505)
    if request.uri.headers:
        raise SipParseError(f"Request-URI {request.uri} must not carry headers")
    _validate_common(request)
    if request.cseq[1] != request.method:
        raise SipParseError(f"CSeq method {request.cseq[1]!r} does not match request method {request.method!r}")
    _ = request.max_forwards  # raises when invalid
    for name in ("Contact", "Route", "Record-Route"):
        for value in request.headers.get_all(name):
            if not (name == "Contact" and value == "*"):
                _name_addr(value, name)


def validate_response(response: Response) -> None:
    """Raises SipParseError when a user agent must discard the response (RFC 3261 §8.1.3.3)."""
    if response.version != "SIP/2.0":
        raise SipParseError(f"SIP version {response.version} is not supported", status=505)
    _validate_common(response)
    if len(response.vias) != 1:
        raise SipParseError(f"response has {len(response.vias)} Via values; a user agent accepts exactly one")


def make_response(
    request: Request,
    status: int,
    reason: str | None = None,
    *,
    to_tag: str | None = None,
    headers: Mapping[str, str] | None = None,
    body: bytes = b"",
) -> Response:
    """A response per RFC 3261 §8.2.6: Via, From, To, Call-ID and CSeq copied as received, so this works for
    a request that failed validation too. A To without a tag gets `to_tag`, or a fresh one: §8.2.6.2 wants a
    tag on every response but 100 (a caller's dialog needs the same tag on all of them: pass it)."""
    if not 100 <= status <= 699:
        raise ValueError(f"status {status} is not in 100..699")
    if to_tag is None and status > 100:
        to_tag = new_tag()
    received = request.headers.items()
    copied = Headers((name, value) for name, value in received if name == "Via")
    for wanted in ("From", "To", "Call-ID", "CSeq") + (("Timestamp",) if status == 100 else ()):
        for name, value in received:
            if name == wanted:
                copied.add(name, _with_tag(value, to_tag) if name == "To" and to_tag else value)
    for name, value in (headers or {}).items():
        copied.set(name, value)
    phrase = reason if reason is not None else REASON_PHRASES.get(status, _CLASS_PHRASES[status // 100])
    return Response(status, phrase, copied, body)


def new_branch() -> str:
    return "z9hG4bK" + secrets.token_hex(8)


def new_tag() -> str:
    return secrets.token_hex(8)


def new_call_id(host: str) -> str:
    return f"{secrets.token_hex(16)}@{host}"


def _parse_headers(lines: list[str]) -> Headers:
    items: list[tuple[str, str]] = []
    for number, line in enumerate(lines, start=2):
        if "\r" in line:
            raise SipParseError(f"line {number}: bare CR in {line[:60]!r}")
        if line[:1] in (" ", "\t"):
            if not items:
                raise SipParseError(f"line {number}: continuation line before any header")
            # Folding (LWS with CRLF) means the same as one SP (RFC 3261 §7.3.1).
            name, value = items[-1]
            more = line.strip(WSP)
            items[-1] = (name, f"{value} {more}" if value and more else value + more)
            continue
        name, colon, value = line.partition(":")
        name = name.rstrip(WSP)
        if not colon:
            raise SipParseError(f"line {number}: header line without ':': {line[:60]!r}")
        if not is_token(name):
            raise SipParseError(f"line {number}: invalid header name {name[:60]!r}")
        items.append((name, value.strip(WSP)))
    return Headers(items)


def _frame_body(headers: Headers, rest: bytes) -> bytes:
    lengths = headers.get_all("Content-Length")
    if not lengths:
        return rest  # RFC 3261 §18.3: over UDP the body is the rest of the datagram
    try:
        values = {parse_uint(value, "Content-Length", _UINT32_MAX) for value in lengths}
    except SipParseError:
        return rest  # unusable Content-Length: validate_* reports it
    if len(values) > 1:
        return rest
    length = values.pop()
    if length > len(rest):
        raise SipParseError(f"Content-Length {length} is larger than the {len(rest)} body bytes received")
    return rest[:length]


def _parse_request_line(line: str, headers: Headers, body: bytes) -> Request:
    parts = line.split(" ")
    if len(parts) != 3 or not all(parts):
        raise SipParseError(f"request line {line[:80]!r} is not 'Method SP Request-URI SP SIP-Version'")
    method, uri_text, version = parts
    if not is_token(method):
        raise SipParseError(f"request line: invalid method {method[:40]!r}")
    if _VERSION_RE.fullmatch(version) is None:
        raise SipParseError(f"request line: invalid SIP version {version[:40]!r}")
    return Request(method, _with_context("Request-URI", SipUri.parse, uri_text), headers, body, version.upper())


def _parse_status_line(line: str, headers: Headers, body: bytes) -> Response:
    version, _, rest = line.partition(" ")
    code, _, reason = rest.partition(" ")
    if _VERSION_RE.fullmatch(version) is None:
        raise SipParseError(f"status line: invalid SIP version {version[:40]!r}")
    if re.fullmatch(r"[1-6][0-9][0-9]", code) is None:
        raise SipParseError(f"status line: status code {code[:40]!r} is not three digits in 100..699")
    return Response(int(code), reason, headers, body, version.upper())


def _validate_common(message: Request | Response) -> None:
    for name in ("Via", "From", "To", "Call-ID", "CSeq"):
        if not message.headers.get_all(name):
            raise SipParseError(f"missing {name} header")
    _ = (message.vias, message.from_, message.to, message.call_id, message.cseq)  # raise when invalid
    lengths = message.headers.get_all("Content-Length")
    if len({parse_uint(value, "Content-Length", _UINT32_MAX) for value in lengths}) > 1:
        raise SipParseError(f"{len(lengths)} different Content-Length values: {', '.join(lengths)}")
    for value in message.headers.get_all("Expires"):
        parse_uint(value, "Expires", _UINT32_MAX)
    for value in message.headers.get_all("Date"):
        if _DATE_RE.fullmatch(value) is None:
            raise SipParseError(f"Date {value!r} is not an RFC 1123 date in GMT")


def _single(headers: Headers, name: str) -> str:
    values = headers.get_all(name)
    if not values:
        raise SipParseError(f"missing {name} header")
    if len(set(values)) > 1:
        raise SipParseError(f"{len(values)} different {name} headers; only one is allowed")
    return values[0]


def _name_addr(value: str, name: str) -> NameAddr:
    return _with_context(name, NameAddr.parse, value)


def _with_context(name: str, parse: Callable[[str], _T], value: str) -> _T:
    try:
        return parse(value)
    except SipParseError as error:
        raise SipParseError(f"{name}: {error}", status=error.status) from error


def _with_tag(to_value: str, tag: str) -> str:
    try:
        has_tag = NameAddr.parse(to_value).tag is not None
    except SipParseError:
        # A malformed To (the response is a 400) still gets the tag §8.2.6.2 asks for, at its end.
        return to_value if ";tag=" in to_value.lower() else f"{to_value};tag={tag}"
    return to_value if has_tag else f"{to_value};tag={tag}"


def _serialize(start_line: str, headers: Headers, body: bytes) -> bytes:
    headers = headers.copy()
    headers.set("Content-Length", str(len(body)))
    lines = [start_line, *(f"{name}: {value}" for name, value in headers.items()), "", ""]
    return "\r\n".join(lines).encode("utf-8", "surrogateescape") + body
