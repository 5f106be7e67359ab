"""Lexical pieces of RFC 3261 §25 shared by the URI, header and message parsers."""

from __future__ import annotations

import re

from .errors import SipError

TOKEN = r"[A-Za-z0-9\-.!%*_+`'~]+"
TOKEN_RE = re.compile(TOKEN)
# gen-value = token / host / quoted-string; host adds ":" "[" "]" for IPv6 references.
_GEN_VALUE_RE = re.compile(r"[A-Za-z0-9\-.!%*_+`'~:\[\]]+")
_DIGITS_RE = re.compile(r"[0-9]+")
WSP = " \t"


class SipParseError(SipError, ValueError):
    """A SIP message, URI or header value that cannot be used.

    `status` is the response a server owes the sender when the message is a request:
    400 for malformed requests, 505 for an unsupported SIP version, 513 for an oversized one.
    """

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def is_token(text: str) -> bool:
    return TOKEN_RE.fullmatch(text) is not None


def parse_uint(text: str, what: str, maximum: int) -> int:
    """A 1*DIGIT value no larger than `maximum` (leading zeros allowed, as in RFC 4475 wsinv)."""
    text = text.strip(WSP)
    if _DIGITS_RE.fullmatch(text) is None:
        raise SipParseError(f"{what} {text!r} is not a non-negative integer")
    # Checking the length first keeps int() away from huge digit strings (and its own limit).
    if len(text.lstrip("0")) > len(str(maximum)) or int(text) > maximum:
        raise SipParseError(f"{what} {text!r} is larger than {maximum}")
    return int(text)


def read_quoted(text: str, start: int) -> tuple[str, int]:
    """Reads the quoted-string at text[start] (a '"'); returns its unescaped content and the index after it."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 >= len(text):
                break
            out.append(text[i + 1])
            i += 2
        elif char == '"':
            return "".join(out), i + 1
        else:
            out.append(char)
            i += 1
    raise SipParseError(f"unterminated quoted string in {text!r}")


def quote(text: str) -> str:
    """A quoted-string for `text`: backslash-escapes what qdtext cannot hold (CR and LF become spaces)."""
    text = text.replace("\r", " ").replace("\n", " ")
    escaped = "".join("\\" + c if c in '"\\' or (ord(c) < 0x20 and c != "\t") or c == "\x7f" else c for c in text)
    return f'"{escaped}"'


def split_outside(text: str, separator: str) -> list[str]:
    """Splits on `separator` where it is not inside a quoted string or a <...> URI."""
    parts: list[str] = []
    current: list[str] = []
    in_quote = in_angle = False
    i = 0
    while i < len(text):
        char = text[i]
        if in_quote:
            if char == "\\" and i + 1 < len(text):
                current.append(text[i : i + 2])
                i += 2
                continue
            in_quote = char != '"'
        elif in_angle:
            in_angle = char != ">"
        elif char == '"':
            in_quote = True
        elif char == "<":
            in_angle = True
        elif char == separator:
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(char)
        i += 1
    if in_quote:
        raise SipParseError(f"unterminated quoted string in {text!r}")
    if in_angle:
        raise SipParseError(f"'<' without '>' in {text!r}")
    parts.append("".join(current))
    return parts


def parse_params(text: str, where: str) -> dict[str, str | None]:
    """`*( SEMI generic-param )` as in Via, From, To, Contact: names lower-cased, quoted values kept quoted."""
    params: dict[str, str | None] = {}
    if not text.strip(WSP):
        return params
    pieces = split_outside(text, ";")
    if pieces[0].strip(WSP):
        raise SipParseError(f"{where}: unexpected {pieces[0].strip(WSP)!r} before the parameters")
    for piece in pieces[1:]:
        name, has_value, value = piece.partition("=")
        name = name.strip(WSP)
        if not name:
            raise SipParseError(f"{where}: empty parameter in {text!r}")
        if not is_token(name):
            raise SipParseError(f"{where}: invalid parameter name {name!r}")
        if not has_value:
            params[name.lower()] = None
            continue
        value = value.strip(WSP)
        if value.startswith('"'):
            if read_quoted(value, 0)[1] != len(value):
                raise SipParseError(f"{where}: text after the quoted value of {name!r}")
        elif _GEN_VALUE_RE.fullmatch(value) is None:
            raise SipParseError(f"{where}: invalid value {value!r} for parameter {name!r}")
        params[name.lower()] = value
    return params


def format_params(params: dict[str, str | None]) -> str:
    return "".join(f";{name}" if value is None else f";{name}={value}" for name, value in params.items())
