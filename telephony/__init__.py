"""Phone calls over SIP and RTP, on asyncio: PCM16 8 kHz frames in and out of each call.

What a user imports from here: `SipEndpoint` (answers and places calls) with its `EndpointConfig` (and the SIP
settings it takes: `TlsConfig`, `TransportName`, `RegistrationConfig`, `SRTP_MODES`), and `Call`, the protocol every
call satisfies (`SipCall` over SIP; `AudioSocketServer` serves Asterisk's AudioSocket too); `RtpStats`,
`IntervalHistogram` and `SipMetrics` for a node's metrics. The SIP stack itself is `telephony.sip`; RTP, SRTP, SDP
and the codecs are modules of their own here. Every error raised here is a `TelephonyError` (the SIP stack's a
`SipError`), keeping its built-in base (`ValueError`...).
"""

from telephony.audiosocket import AudioSocketServer
from telephony.call import FRAME_SAMPLES, SAMPLE_RATE, Call, EndReason
from telephony.endpoint import CallFailed, EndpointConfig, SipEndpoint
from telephony.errors import TelephonyError
from telephony.rtp import IntervalHistogram, RtpStats
from telephony.sip.errors import SipError
from telephony.sip.metrics import SipMetrics
from telephony.sip.registration import RegistrationConfig
from telephony.sip.tls import TlsConfig
from telephony.sip.transport import TransportName
from telephony.sip_call import SipCall
from telephony.srtp import MODES as SRTP_MODES

__all__ = [
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "SRTP_MODES",
    "AudioSocketServer",
    "Call",
    "CallFailed",
    "EndReason",
    "EndpointConfig",
    "IntervalHistogram",
    "RegistrationConfig",
    "RtpStats",
    "SipCall",
    "SipEndpoint",
    "SipError",
    "SipMetrics",
    "TelephonyError",
    "TlsConfig",
    "TransportName",
]
