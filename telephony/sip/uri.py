"""SIP, SIPS and tel URIs (RFC 3261 §19.1, §25.1; RFC 3966), other schemes kept opaque."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .syntax import SipParseError, format_params, parse_uint

_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*")
_ALNUM = "A-Za-z0-9"
_UNRESERVED = _ALNUM + r"\-_.!~*'()"
# Each part of a SIP URI has its own alphabet; '%' is checked separately as '%' HEX HEX.
_USER_RE = re.compile(rf"[{_UNRESERVED}%&=+$,;?/]+")
_PASSWORD_RE = re.compile(rf"[{_UNRESERVED}%&=+$,]*")
_PARAM_RE = re.compile(rf"[{_UNRESERVED}%\[\]/:&+$]+")
_HEADER_RE = re.compile(rf"[{_UNRESERVED}%\[\]/?:+$]*")
_HOST_RE = re.compile(r"[A-Za-z0-9\-_.]+")
_IPV6_RE = re.compile(r"[0-9A-Fa-f:.]+")
_TEL_RE = re.compile(r"[0-9A-Fa-f+\-.()*#pPwW]+")
_BAD_ESCAPE_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Anything printable in ASCII except the delimiters that can never appear unescaped in a URI.
_URI_CHARS_RE = re.compile(r"[!#$%&'()*+,\-./0-9:;=?@A-Z\[\]_a-z~]+")


@dataclass
class SipUri:
    """A parsed URI.

    `user` and `password` stay %-escaped as on the wire (RFC 3261 compares them unescaped; use
    urllib.parse.unquote). `host` holds IPv6 addresses without brackets. For tel URIs the number
    is in `user` and `host` is empty; for any other scheme `host` holds the opaque rest.
    """

    scheme: str = "sip"
    user: str | None = None
    password: str | None = None
    host: str = ""
    port: int | None = None
    params: dict[str, str | None] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> SipUri:
        if not text:
            raise SipParseError("empty URI")
        if _URI_CHARS_RE.fullmatch(text) is None:
            bad = next((c for c in text if _URI_CHARS_RE.fullmatch(c) is None), "")
            raise SipParseError(f"URI {text!r}: character {bad!r} is not allowed")
        scheme, colon, rest = text.partition(":")
        if not colon or _SCHEME_RE.fullmatch(scheme) is None:
            raise SipParseError(f"URI {text!r}: no valid scheme")
        if not rest:
            raise SipParseError(f"URI {text!r}: nothing after the scheme")
        scheme = scheme.lower()
        if scheme in ("sip", "sips"):
            return _parse_sip(scheme, rest, text)
        if scheme == "tel":
            number, _, params = rest.partition(";")
            if _TEL_RE.fullmatch(number) is None:
                raise SipParseError(f"URI {text!r}: invalid telephone number {number!r}")
            return cls(scheme, user=number, params=_uri_params(params, text))
        return cls(scheme, host=rest)

    def __str__(self) -> str:
        params = format_params(self.params)
        if self.scheme == "tel":
            return f"tel:{self.user or ''}{params}"
        if self.scheme not in ("sip", "sips"):
            return f"{self.scheme}:{self.host}"
        userinfo = ""
        if self.user is not None:
            userinfo = self.user + (f":{self.password}" if self.password is not None else "") + "@"
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        headers = "&".join(f"{k}={v}" for k, v in self.headers.items())
        return f"{self.scheme}:{userinfo}{host}{port}{params}{'?' + headers if headers else ''}"


def _parse_sip(scheme: str, rest: str, text: str) -> SipUri:
    if _BAD_ESCAPE_RE.search(rest):
        raise SipParseError(f"URI {text!r}: '%' not followed by two hex digits")
    # user may contain ';' and '?' (RFC 3261 user-unreserved) but never '@', so split there first.
    userinfo, at, hostpart = rest.partition("@")
    if not at:
        userinfo, hostpart = "", rest
    user = password = None
    if at:
        user, colon, pw = userinfo.partition(":")
        if _USER_RE.fullmatch(user) is None:
            raise SipParseError(f"URI {text!r}: invalid user part {user!r}")
        if colon:
            if _PASSWORD_RE.fullmatch(pw) is None:
                raise SipParseError(f"URI {text!r}: invalid password")
            password = pw
    hostpart, question, header_text = hostpart.partition("?")
    hostport, _, param_text = hostpart.partition(";")
    host, port = _parse_hostport(hostport, text)
    headers: dict[str, str] = {}
    if question:
        for item in header_text.split("&"):
            name, _, value = item.partition("=")
            if not name or _HEADER_RE.fullmatch(name) is None or _HEADER_RE.fullmatch(value) is None:
                raise SipParseError(f"URI {text!r}: invalid header {item!r}")
            headers[name] = value
    return SipUri(scheme, user, password, host, port, _uri_params(param_text, text), headers)


def _parse_hostport(hostport: str, text: str) -> tuple[str, int | None]:
    port_text: str | None
    if hostport.startswith("["):
        host, bracket, port_text = hostport[1:].partition("]")
        if not bracket or _IPV6_RE.fullmatch(host) is None or ":" not in host:
            raise SipParseError(f"URI {text!r}: invalid IPv6 reference")
        if port_text and not port_text.startswith(":"):
            raise SipParseError(f"URI {text!r}: unexpected {port_text!r} after the IPv6 address")
        port_text = port_text[1:] if port_text else None
    else:
        host, colon, port_text = hostport.partition(":")
        if _HOST_RE.fullmatch(host) is None:
            raise SipParseError(f"URI {text!r}: invalid host {host!r}")
        port_text = port_text if colon else None
    port = parse_uint(port_text, f"URI {text!r}: port", 65535) if port_text is not None else None
    return host, port


def _uri_params(param_text: str, text: str) -> dict[str, str | None]:
    params: dict[str, str | None] = {}
    if not param_text:
        return params
    for item in param_text.split(";"):
        name, equals, value = item.partition("=")
        if _PARAM_RE.fullmatch(name) is None or (equals and _PARAM_RE.fullmatch(value) is None):
            raise SipParseError(f"URI {text!r}: invalid parameter {item!r}")
        params[name.lower()] = value if equals else None
    return params
