"""Phone calls over SIP and RTP, on asyncio: PCM16 8 kHz frames in and out of each call.

What a user imports from here: `SipEndpoint` (answers and places calls) with its `EndpointConfig`, and `Call`,
the protocol every call satisfies (`SipCall` over SIP; `telephony.audiosocket` offers Asterisk's AudioSocket
too). The SIP stack itself is `telephony.sip`; RTP, SRTP, SDP and the codecs are modules of their own here. Every
error raised here is a `TelephonyError` (the SIP stack's a `SipError`), keeping its built-in base (`ValueError`...).
"""

from telephony.call import FRAME_SAMPLES, SAMPLE_RATE, Call, EndReason
from telephony.endpoint import CallFailed, EndpointConfig, SipEndpoint
from telephony.errors import TelephonyError
from telephony.sip.errors import SipError
from telephony.sip_call import SipCall

__all__ = [
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "Call",
    "CallFailed",
    "EndReason",
    "EndpointConfig",
    "SipCall",
    "SipEndpoint",
    "SipError",
    "TelephonyError",
]
