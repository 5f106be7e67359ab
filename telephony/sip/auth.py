"""HTTP Digest for SIP as a client (RFC 2617, RFC 7616, RFC 8760): answer a WWW-Authenticate or
Proxy-Authenticate challenge with MD5, SHA-256 or SHA-512-256 (and their -sess forms), with
qop=auth or without qop. `verify` is the server side, for tests."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from .errors import SipError
from .syntax import TOKEN, SipParseError, quote, read_quoted

_HASHES = {"MD5": "md5", "SHA-256": "sha256", "SHA-512-256": "sha512_256"}
_PARAM_RE = re.compile(rf"[ \t]*({TOKEN})[ \t]*=[ \t]*")
_TOKEN_VALUE_RE = re.compile(r"[^\s,\"]+")
_SEPARATOR_RE = re.compile(r"[ \t]*(,[ \t]*|$)")


class DigestError(SipError, ValueError):
    """A well-formed challenge this client cannot answer (unknown algorithm, only qop=auth-int)."""


@dataclass(frozen=True)
class Challenge:
    """A digest challenge; `algorithm` is spelled as the server sent it, and echoed so."""

    realm: str
    nonce: str
    algorithm: str = "MD5"
    qop: tuple[str, ...] = ()
    opaque: str | None = None
    stale: bool = False

    @classmethod
    def parse(cls, value: str) -> Challenge:
        """Parses `Digest realm="...", nonce="...", ...` (a WWW-Authenticate or Proxy-Authenticate value)."""
        params = _parse_digest(value)
        for name in ("realm", "nonce"):
            if name not in params:
                raise SipParseError(f"digest challenge without {name}: {value!r}")
        qop = tuple(q.strip().lower() for q in params.get("qop", "").split(",") if q.strip())
        return cls(
            params["realm"],
            params["nonce"],
            params.get("algorithm", "MD5"),
            qop,
            params.get("opaque"),
            params.get("stale", "").lower() == "true",
        )


def authorization(
    challenge: Challenge, method: str, uri: str, username: str, password: str, *, cnonce: str | None = None, nc: int = 1
) -> str:
    """The Authorization (or Proxy-Authorization) value answering `challenge` for a request
    `method` to `uri` (the Request-URI as a string)."""
    if challenge.qop and "auth" not in challenge.qop:
        raise DigestError(f"challenge offers qop={','.join(challenge.qop)}; only qop=auth is supported")
    qop = "auth" if challenge.qop else None
    if cnonce is None and (qop or challenge.algorithm.upper().endswith("-SESS")):
        cnonce = secrets.token_hex(8)
    response = _response(
        challenge.algorithm, username, challenge.realm, password, method, uri, challenge.nonce, cnonce, nc, qop
    )
    fields = [
        f"username={quote(username)}",
        f"realm={quote(challenge.realm)}",
        f"nonce={quote(challenge.nonce)}",
        f"uri={quote(uri)}",
        f'response="{response}"',
        f"algorithm={challenge.algorithm}",
    ]
    if cnonce is not None:
        fields.append(f"cnonce={quote(cnonce)}")
    if challenge.opaque is not None:
        fields.append(f"opaque={quote(challenge.opaque)}")
    if qop:
        fields += [f"qop={qop}", f"nc={nc:08x}"]
    return "Digest " + ", ".join(fields)


def verify(authorization_value: str, method: str, password: str, realm: str) -> bool:
    """True when `authorization_value` carries the right digest for `password` in `realm`."""
    params = _parse_digest(authorization_value)
    if params.get("realm") != realm or not {"username", "nonce", "uri", "response"} <= params.keys():
        return False
    qop = params.get("qop")
    try:
        nc = int(params.get("nc", "0"), 16)
        expected = _response(
            params.get("algorithm", "MD5"),
            params["username"],
            realm,
            password,
            method,
            params["uri"],
            params["nonce"],
            params.get("cnonce"),
            nc,
            qop,
        )
    except (ValueError, DigestError):
        return False
    return hmac.compare_digest(expected, params["response"].lower())


def _response(
    algorithm: str,
    username: str,
    realm: str,
    password: str,
    method: str,
    uri: str,
    nonce: str,
    cnonce: str | None,
    nc: int,
    qop: str | None,
) -> str:
    algorithm = algorithm.upper()
    base, sess = algorithm.removesuffix("-SESS"), algorithm.endswith("-SESS")
    if base not in _HASHES:
        raise DigestError(f"digest algorithm {algorithm} is not supported (MD5, SHA-256, SHA-512-256)")

    def h(text: str) -> str:
        return hashlib.new(_HASHES[base], text.encode("utf-8")).hexdigest()

    ha1 = h(f"{username}:{realm}:{password}")
    if sess:
        ha1 = h(f"{ha1}:{nonce}:{cnonce}")
    ha2 = h(f"{method}:{uri}")
    if qop is None:
        return h(f"{ha1}:{nonce}:{ha2}")
    if qop != "auth":
        raise DigestError(f"qop={qop} is not supported")
    return h(f"{ha1}:{nonce}:{nc:08x}:{cnonce}:{qop}:{ha2}")


def _parse_digest(value: str) -> dict[str, str]:
    """`Digest` followed by comma-separated auth-params; names lower-cased, quoted values unquoted."""
    scheme, rest = ([*re.split(r"[ \t]+", value.strip(" \t"), maxsplit=1), ""])[:2]
    if scheme.lower() != "digest":
        raise SipParseError(f"authentication scheme {scheme!r} is not Digest")
    params: dict[str, str] = {}
    position = 0
    while position < len(rest):
        match = _PARAM_RE.match(rest, position)
        if match is None:
            raise SipParseError(f"malformed digest parameter at {rest[position : position + 30]!r}")
        name, position = match[1].lower(), match.end()
        if rest.startswith('"', position):
            params[name], position = read_quoted(rest, position)
        else:
            token = _TOKEN_VALUE_RE.match(rest, position)
            if token is None:
                raise SipParseError(f"digest parameter {name} has no value")
            params[name], position = token[0], token.end()
        separator = _SEPARATOR_RE.match(rest, position)
        if separator is None:
            raise SipParseError(f"expected ',' after digest parameter {name}")
        position = separator.end()
    return params
