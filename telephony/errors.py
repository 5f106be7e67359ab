"""The root of telephony's errors, so that a user can catch every one of them with one `except`.

Each error keeps the built-in base it had (a malformed SDP body or SIP message is still a `ValueError`). The SIP
stack's errors derive from `telephony.sip.errors.SipError`, a `TelephonyError`.
"""

from __future__ import annotations


class TelephonyError(Exception):
    """Something in a call's SIP, RTP, SRTP, SDP or AudioSocket went wrong; the subclass and message say what."""
