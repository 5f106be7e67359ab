"""SRTP and SRTCP (RFC 3711) for one call with keys exchanged in SDP (SDES, RFC 4568), over libsrtp
(`pylibsrtp`, the binding aiortc uses): no cryptography of our own.

`SrtpPolicy` holds what one call offers and answers with (the configured mode and our fresh master keys);
the SDP layer turns an offer/answer into `SrtpKeys`; `SrtpStreams` protects what we send with our key and
checks what arrives with the peer's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import pylibsrtp

from telephony.errors import TelephonyError

MODES = ("off", "offer", "require")


@dataclass(frozen=True)
class Suite:
    """An SDES crypto suite (RFC 4568 section 6.2) and the libsrtp profile that implements it."""

    name: str
    profile: int
    key_bytes: int  # master key + master salt, as carried base64-encoded in `inline:`
    tag_bytes: int  # authentication tag appended to each SRTP packet


# Our order of preference when we offer; when we answer, the offerer's order wins (as for codecs).
SUITES: dict[str, Suite] = {
    suite.name: suite
    for suite in (
        Suite("AES_CM_128_HMAC_SHA1_80", pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_80, 30, 10),
        Suite("AES_CM_128_HMAC_SHA1_32", pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_32, 30, 4),
    )
}


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"srtp must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


@dataclass
class SrtpPolicy:
    """One call's SRTP choice: the mode and our master keys, one per suite, drawn fresh for this call and
    kept for its later offers and answers (a re-INVITE that keeps the keys keeps the SRTP streams going)."""

    mode: str = "off"
    _keys: dict[str, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check_mode(self.mode)

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def key(self, suite: str) -> bytes:
        """Our master key for `suite`: a different one per suite, so that no key is used by two transforms."""
        if suite not in self._keys:
            self._keys[suite] = secrets.token_bytes(SUITES[suite].key_bytes)
        return self._keys[suite]


@dataclass(frozen=True)
class SrtpKeys:
    """What the offer/answer agreed: one suite, our key for what we send, the peer's for what it sends."""

    suite: str
    local_key: bytes = field(repr=False)
    remote_key: bytes = field(repr=False)


class SrtpRejected(TelephonyError):
    """An incoming packet failed SRTP authentication or replay checks, or could not be processed."""


class SrtpStreams:
    """The two directions of one call's SRTP: libsrtp sessions keyed for any SSRC, so a PBX that bridges a
    new leg in (a new SSRC) needs no new keys."""

    def __init__(self, keys: SrtpKeys) -> None:
        suite = SUITES[keys.suite]
        self.keys = keys
        self._outbound = pylibsrtp.Session(
            pylibsrtp.Policy(keys.local_key, pylibsrtp.Policy.SSRC_ANY_OUTBOUND, srtp_profile=suite.profile)
        )
        self._inbound = pylibsrtp.Session(
            pylibsrtp.Policy(keys.remote_key, pylibsrtp.Policy.SSRC_ANY_INBOUND, srtp_profile=suite.profile)
        )

    def protect(self, packet: bytes) -> bytes:
        return self._outbound.protect(packet)

    def protect_rtcp(self, packet: bytes) -> bytes:
        return self._outbound.protect_rtcp(packet)

    def unprotect(self, packet: bytes) -> bytes:
        """The plain RTP packet; raises SrtpRejected (bad tag, replay, wrong key, oversized datagram)."""
        try:
            return self._inbound.unprotect(packet)
        except (pylibsrtp.Error, ValueError) as error:
            raise SrtpRejected(str(error)) from None

    def unprotect_rtcp(self, packet: bytes) -> bytes:
        try:
            return self._inbound.unprotect_rtcp(packet)
        except (pylibsrtp.Error, ValueError) as error:
            raise SrtpRejected(str(error)) from None
