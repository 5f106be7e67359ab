"""The root of the SIP stack's errors: a `TelephonyError`, so that one `except` catches SIP's and the media's."""

from __future__ import annotations

from telephony.errors import TelephonyError


class SipError(TelephonyError):
    """A SIP message, dialog, digest challenge, registration, TLS setting or stream that cannot be used."""
