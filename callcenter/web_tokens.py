"""Signed, short-lived tokens that say which customer a text-channel session is for.

The CRM or the shop's site, which knows who is logged in, issues one (`issue`, or `voiceswarm web --issue-token`)
and hands it to the customer's browser; the text channel takes the caller's number only from such a token, never
from the client unsigned. HMAC-SHA256 from the standard library: the key stays on the two servers, and a token
is useless after it expires.

    vs1.<base64url(JSON {"caller": "+4930...", "exp": unix seconds})>.<base64url(HMAC of "vs1.<payload>")>
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time

from callcenter.errors import CallCenterError

PREFIX = "vs1."
DEFAULT_TTL_S = 600
# A token long-lived enough to be worth stealing is a password: a day at most, whatever the issuer asks for.
MAX_TTL_S = 86_400
MAX_TOKEN_CHARS = 1024


class TokenError(CallCenterError, ValueError):
    """A token cannot be issued as asked."""


def issue(key: str, caller: str, ttl_s: int = DEFAULT_TTL_S, *, now: float | None = None) -> str:
    """A token for `caller` that the text channel accepts for `ttl_s` seconds."""
    if not key:
        raise TokenError("no signing key: set web.signing_key (VOICESWARM_WEB_SIGNING_KEY)")
    if not caller.strip():
        raise TokenError("a token needs the caller's number")
    if not 0 < ttl_s <= MAX_TTL_S:
        raise TokenError(f"a token lives 1 to {MAX_TTL_S} seconds, not {ttl_s}")
    expires = int((time.time() if now is None else now) + ttl_s)
    payload = _encode(json.dumps({"caller": caller, "exp": expires}, separators=(",", ":")).encode())
    return f"{PREFIX}{payload}.{_signature(key, payload)}"


def caller_of(key: str, token: str, *, now: float | None = None) -> str | None:
    """The caller a valid, unexpired token was issued for; None for anything else."""
    if not key or not token.startswith(PREFIX) or len(token) > MAX_TOKEN_CHARS:
        return None
    payload, _, signature = token[len(PREFIX) :].partition(".")
    if not hmac.compare_digest(signature.encode(), _signature(key, payload).encode()):
        return None
    try:
        claims = json.loads(_decode(payload))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(claims, dict):
        return None
    caller, expires = claims.get("caller"), claims.get("exp")
    current = time.time() if now is None else now
    if not isinstance(caller, str) or not caller.strip() or not isinstance(expires, int):
        return None
    # An expiry further off than any issuer may give is a token from a key used wrongly: refused too.
    if not current < expires <= current + MAX_TTL_S:
        return None
    return caller


def _signature(key: str, payload: str) -> str:
    digest = hmac.new(key.encode(), f"{PREFIX}{payload}".encode(), hashlib.sha256).digest()
    return _encode(digest)


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
