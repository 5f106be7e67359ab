"""SDP parsing and RFC 3264 offer/answer against offers from real phones (captured here) and hold offers."""

from __future__ import annotations

import base64
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telephony.sdp import (
    Answer,
    Crypto,
    NoCommonCodec,
    SdpError,
    SessionDescription,
    SrtpRefused,
    answer,
    offer,
    parse_answer,
)
from telephony.srtp import SrtpKeys, SrtpPolicy

# Captured on this machine: baresip 1.0.0 dialling a UDP socket (`baresip -n 127.0.0.1 -e "/dial ..."`).
BARESIP = """v=0\r
o=- 1034068230 199083695 IN IP4 127.0.0.1\r
s=-\r
c=IN IP4 127.0.0.1\r
t=0 0\r
a=tool:baresip 1.0.0\r
m=audio 16060 RTP/AVP 0 8 101\r
a=rtpmap:0 PCMU/8000\r
a=rtpmap:8 PCMA/8000\r
a=rtpmap:101 telephone-event/8000\r
a=fmtp:101 0-15\r
a=sendrecv\r
a=label:1\r
a=rtcp-rsize\r
a=ssrc:1496859343 cname:sip:caller@127.0.0.1\r
a=minptime:20\r
a=ptime:20\r
"""

# Captured on this machine: `sipp -sn uac_pcap` (sip-tester 3.6.1); it then streams 30 ms PCMA packets.
SIPP_PCAP = """v=0
o=user1 53655765 2353687637 IN IP4 127.0.0.1
s=-
c=IN IP4 127.0.0.1
t=0 0
m=audio 6000 RTP/AVP 8 101
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-11,16
"""

# Captured on this machine: `sipp -sn uac`: a static payload type without any rtpmap would be legal too.
SIPP_UAC = "v=0\no=user1 53655765 2353687637 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 6000 RTP/AVP 0\n"

# Shaped like Linphone 4's offer: wideband codecs first, telephone-event at three clock rates, media-level
# c= lines only, and a video stream.
LINPHONE = """v=0\r
o=alice 2290 1977 IN IP4 192.168.1.20\r
s=Talk\r
t=0 0\r
a=rtcp-xr:rcvr-rtt=all:10000 stat-summary=loss,dup,jitt,TTL voip-metrics\r
m=audio 7078 RTP/AVP 96 97 98 0 8 18 101 99 100\r
c=IN IP4 192.168.1.20\r
a=rtpmap:96 opus/48000/2\r
a=fmtp:96 useinbandfec=1\r
a=rtpmap:97 speex/16000\r
a=fmtp:97 vbr=on\r
a=rtpmap:98 speex/8000\r
a=rtpmap:18 G729/8000\r
a=fmtp:18 annexb=yes\r
a=rtpmap:101 telephone-event/48000\r
a=rtpmap:99 telephone-event/16000\r
a=rtpmap:100 telephone-event/8000\r
a=rtcp-fb:* trr-int 1000\r
m=video 9078 RTP/AVP 96 97\r
c=IN IP4 192.168.1.20\r
a=rtpmap:96 VP8/90000\r
a=rtpmap:97 H264/90000\r
a=fmtp:97 profile-level-id=42801F\r
a=rtcp-fb:96 nack pli\r
"""


def hold(direction_line: str, address: str = "10.0.0.5") -> str:
    return (
        f"v=0\r\no=- 7 8 IN IP4 10.0.0.5\r\ns=-\r\nc=IN IP4 {address}\r\nt=0 0\r\n"
        f"m=audio 30000 RTP/AVP 8 0 101\r\na=rtpmap:101 telephone-event/8000\r\n{direction_line}"
    )


def reparsed_media(result: Answer) -> list:
    return SessionDescription.parse(result.sdp).media


# ---- parsing ----------------------------------------------------------------------------------------------


def test_parses_baresip_offer_fields() -> None:
    description = SessionDescription.parse(BARESIP)
    assert description.origin is not None and description.origin.session_id == "1034068230"
    assert description.connection is not None and description.connection.address == "127.0.0.1"
    [audio] = description.media
    assert (audio.media, audio.port, audio.proto, audio.formats) == ("audio", 16060, "RTP/AVP", ["0", "8", "101"])
    assert list(audio.rtp_formats()) == [(0, "PCMU", 8000), (8, "PCMA", 8000), (101, "telephone-event", 8000)]
    assert audio.attribute("ssrc") == "1496859343 cname:sip:caller@127.0.0.1"
    assert description.ptime_of(audio) == 20 and description.direction_of(audio) == "sendrecv"


@pytest.mark.parametrize("text", [BARESIP, SIPP_PCAP, LINPHONE, SIPP_UAC])
def test_printing_a_parsed_offer_loses_nothing(text: str) -> None:
    printed = str(SessionDescription.parse(text))
    assert printed.replace("\r\n", "\n") == text.replace("\r\n", "\n")
    assert str(SessionDescription.parse(printed)) == printed


def test_static_payload_types_are_known_without_rtpmap() -> None:
    [audio] = SessionDescription.parse(SIPP_UAC).media
    assert list(audio.rtp_formats()) == [(0, "PCMU", 8000)]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "v=0"),
        ("v=1\r\n", "v=0"),
        ("v=0\r\nthis is not sdp\r\n", "line 2"),
        ("v=0\r\nm=audio port RTP/AVP 0\r\n", "port"),
        ("v=0\r\nm=audio 70000 RTP/AVP 0\r\n", "port"),
        ("v=0\r\nm=audio\r\n", "m= needs"),
        ("v=0\r\nc=IN IP4\r\n", "c= needs"),
        ("v=0\r\no=- 1 IN IP4 1.2.3.4\r\n", "o= needs"),
    ],
)
def test_malformed_sdp_raises_sdp_error_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(SdpError, match=message):
        SessionDescription.parse(text)


@given(st.text(max_size=300))
def test_any_text_parses_or_raises_only_sdp_error(text: str) -> None:
    try:
        description = SessionDescription.parse("v=0\r\n" + text)
    except SdpError:
        return
    SessionDescription.parse(str(description))  # what we print we can read back


# ---- answering -------------------------------------------------------------------------------------------


def test_answers_baresip_with_its_first_codec_and_dtmf() -> None:
    result = answer(BARESIP, "127.0.0.1", 20000)
    assert (result.codec.name, result.codec.payload_type, result.codec.clock_rate) == ("PCMU", 0, 8000)
    assert result.dtmf_pt == 101 and result.remote == ("127.0.0.1", 16060)
    assert result.ptime == 20 and result.direction == "sendrecv"
    [audio] = reparsed_media(result)
    assert (audio.port, audio.formats, audio.attribute("sendrecv")) == (20000, ["0", "101"], None)
    assert "sendrecv" in [a.name for a in audio.attributes]
    assert audio.attribute("fmtp") == "101 0-15"


def test_answers_sipp_pcap_offer_with_pcma() -> None:
    result = answer(SIPP_PCAP, "127.0.0.1", 20002)
    assert (result.codec.name, result.codec.payload_type, result.dtmf_pt) == ("PCMA", 8, 101)
    assert result.remote == ("127.0.0.1", 6000) and result.ptime is None
    description = SessionDescription.parse(result.sdp)
    assert description.connection is not None and description.connection.address == "127.0.0.1"
    assert [m.formats for m in description.media] == [["8", "101"]]


def test_follows_the_offer_order_not_ours() -> None:
    assert answer(SIPP_PCAP.replace("8 101", "8 0 101"), "127.0.0.1", 20000).codec.name == "PCMA"
    assert answer(BARESIP, "127.0.0.1", 20000, codecs=("PCMA", "PCMU")).codec.name == "PCMU"
    assert answer(BARESIP, "127.0.0.1", 20000, codecs=("PCMA",)).codec.name == "PCMA"


def test_linphone_offer_picks_pcmu_and_8khz_events_and_rejects_video() -> None:
    result = answer(LINPHONE, "192.168.1.2", 20004)
    assert (result.codec.name, result.dtmf_pt) == ("PCMU", 100)  # not the 48 kHz or 16 kHz events
    assert result.remote == ("192.168.1.20", 7078)  # connection at media level
    audio, video = reparsed_media(result)
    assert (audio.media, audio.port, audio.formats) == ("audio", 20004, ["0", "100"])
    assert (video.media, video.port, video.proto, video.formats) == ("video", 0, "RTP/AVP", ["96", "97"])


def test_only_the_first_usable_audio_stream_is_answered() -> None:
    two = SIPP_PCAP + "m=audio 6002 RTP/AVP 0\r\n"
    first, second = reparsed_media(answer(two, "127.0.0.1", 20000))
    assert (first.port, second.port) == (20000, 0)


def test_srtp_only_stream_is_skipped_for_the_plain_one() -> None:
    text = SIPP_PCAP.replace("m=audio 6000 RTP/AVP 8 101", "m=audio 5000 RTP/SAVP 8\nm=audio 6000 RTP/AVP 8 101")
    savp, avp = reparsed_media(answer(text, "127.0.0.1", 20000))
    assert (savp.port, savp.proto, avp.port) == (0, "RTP/SAVP", 20000)


@pytest.mark.parametrize(
    "text",
    [
        SIPP_PCAP.replace("RTP/AVP 8 101", "RTP/AVP 18 101").replace("8 PCMA", "18 G729"),
        SIPP_PCAP.replace("m=audio 6000", "m=audio 0"),
        "v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nc=IN IP4 1.2.3.4\r\nt=0 0\r\nm=video 5000 RTP/AVP 96\r\n",
    ],
)
def test_no_common_codec_raises(text: str) -> None:
    with pytest.raises(NoCommonCodec, match="PCMU or PCMA"):
        answer(text, "127.0.0.1", 20000)


def test_a_stream_without_any_connection_line_is_an_sdp_error() -> None:
    with pytest.raises(SdpError, match="no c= line"):
        answer(SIPP_PCAP.replace("c=IN IP4 127.0.0.1\n", ""), "127.0.0.1", 20000)


def test_answer_keeps_offer_timing_and_ipv6_address_type() -> None:
    text = SIPP_PCAP.replace("t=0 0", "t=3034423619 3042462419")
    description = SessionDescription.parse(answer(text, "::1", 20000).sdp)
    assert ("t", "3034423619 3042462419") in description.extra
    assert description.origin is not None and description.origin.addrtype == "IP6"
    assert description.connection is not None and str(description.connection) == "IN IP6 ::1"


def test_reinvite_answer_keeps_session_id_and_bumps_version() -> None:
    first = SessionDescription.parse(answer(BARESIP, "127.0.0.1", 20000).sdp).origin
    assert first is not None
    again = answer(
        hold("a=sendonly\r\n"),
        "127.0.0.1",
        20000,
        session_id=int(first.session_id),
        session_version=int(first.version) + 1,
    )
    second = SessionDescription.parse(again.sdp).origin
    assert second is not None and (second.session_id, second.version) == (first.session_id, str(int(first.version) + 1))


# ---- hold ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "offered, ours",
    [
        ("a=sendonly\r\n", "recvonly"),
        ("a=recvonly\r\n", "sendonly"),
        ("a=inactive\r\n", "inactive"),
        ("a=sendrecv\r\n", "sendrecv"),
        ("", "sendrecv"),
    ],
)
def test_hold_directions_are_answered_per_rfc3264(offered: str, ours: str) -> None:
    result = answer(hold(offered), "127.0.0.1", 20000)
    assert result.direction == ours
    [audio] = reparsed_media(result)
    assert [a.name for a in audio.attributes if a.name in ("sendrecv", "sendonly", "recvonly", "inactive")] == [ours]
    assert result.codec.name == "PCMA" and result.remote == ("10.0.0.5", 30000)


def test_session_level_direction_applies_to_the_stream() -> None:
    text = hold("").replace("t=0 0\r\n", "t=0 0\r\na=sendonly\r\n")
    assert answer(text, "127.0.0.1", 20000).direction == "recvonly"


@pytest.mark.parametrize(
    "offered, ours", [("", "recvonly"), ("a=sendonly\r\n", "recvonly"), ("a=recvonly\r\n", "inactive")]
)
def test_old_style_hold_with_zero_address_sends_nothing(offered: str, ours: str) -> None:
    result = answer(hold(offered, address="0.0.0.0"), "127.0.0.1", 20000)
    assert (result.remote, result.direction) == (None, ours)


# ---- our offers and their answers ------------------------------------------------------------------------


def test_offer_lists_our_codecs_in_our_order_with_dtmf() -> None:
    description = SessionDescription.parse(offer("127.0.0.1", 20010, ("PCMA", "PCMU"), dtmf_pt=101))
    [audio] = description.media
    assert (audio.port, audio.proto, audio.formats) == (20010, "RTP/AVP", ["8", "0", "101"])
    assert list(audio.rtp_formats()) == [(8, "PCMA", 8000), (0, "PCMU", 8000), (101, "telephone-event", 8000)]
    assert description.direction_of(audio) == "sendrecv" and description.ptime_of(audio) == 20


def test_our_offer_answered_by_ourselves_round_trips() -> None:
    ours = offer("127.0.0.1", 20010, ("PCMU", "PCMA"), dtmf_pt=101)
    theirs = answer(ours, "127.0.0.2", 30000, codecs=("PCMA", "PCMU"))
    agreed = parse_answer(theirs.sdp)
    assert (agreed.codec.name, agreed.dtmf_pt, agreed.remote, agreed.direction) == (
        "PCMU",
        101,
        ("127.0.0.2", 30000),
        "sendrecv",
    )
    assert offer("127.0.0.1", 20010, ("PCMU",), dtmf_pt=None).count("telephone-event") == 0


def test_parse_answer_reads_direction_and_rejection() -> None:
    ours = offer("127.0.0.1", 20010)
    held = answer(ours, "127.0.0.2", 30000).sdp.replace("a=sendrecv", "a=recvonly")
    assert parse_answer(held).direction == "sendonly"
    with pytest.raises(NoCommonCodec):
        parse_answer(answer(ours, "127.0.0.2", 30000).sdp.replace("m=audio 30000", "m=audio 0"))


def test_unknown_codec_names_are_refused_with_the_supported_list() -> None:
    with pytest.raises(ValueError, match="PCMU, PCMA"):
        answer(BARESIP, "127.0.0.1", 20000, codecs=("opus",))


# ---- SRTP keys in SDP (SDES, RFC 4568) ---------------------------------------------------------------------

# Captured on this machine: baresip 1.0.0 with `;mediaenc=srtp` (RFC 4568 best effort: RTP/AVP with a=crypto)
# and with `;mediaenc=srtp-mand` (RTP/SAVP).
BARESIP_SRTP = """v=0\r
o=- 3383154479 282862867 IN IP4 127.0.0.1\r
s=-\r
c=IN IP4 127.0.0.1\r
t=0 0\r
a=tool:baresip 1.0.0\r
m=audio 26002 RTP/AVP 0 101\r
a=rtpmap:0 PCMU/8000\r
a=rtpmap:101 telephone-event/8000\r
a=fmtp:101 0-15\r
a=sendrecv\r
a=label:1\r
a=rtcp-rsize\r
a=ssrc:2733084409 cname:sip:caller@127.0.0.1\r
a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:s6ExxDjeVXcfUQPYTW7TLaheN4/G9jnHwNY0P/Ue\r
a=minptime:20\r
a=ptime:20\r
"""
BARESIP_SRTP_MANDATORY = BARESIP_SRTP.replace("RTP/AVP", "RTP/SAVP")
BARESIP_KEY = base64.b64decode("s6ExxDjeVXcfUQPYTW7TLaheN4/G9jnHwNY0P/Ue")
KEY_80, KEY_32 = base64.b64encode(bytes(range(30))).decode(), base64.b64encode(bytes(range(30, 60))).decode()


def crypto_lines(result: Answer | str) -> list[Crypto]:
    text = result.sdp if isinstance(result, Answer) else result
    [audio] = [m for m in SessionDescription.parse(text).media if m.port]
    return [Crypto.parse(a.value or "") for a in audio.attributes if a.name == "crypto"]


@pytest.mark.parametrize("text, proto", [(BARESIP_SRTP, "RTP/AVP"), (BARESIP_SRTP_MANDATORY, "RTP/SAVP")])
@pytest.mark.parametrize("mode", ["offer", "require"])
def test_baresip_srtp_offer_is_answered_with_our_own_key(text: str, proto: str, mode: str) -> None:
    policy = SrtpPolicy(mode)
    result = answer(text, "127.0.0.1", 20000, srtp=policy)
    [audio] = reparsed_media(result)
    assert audio.proto == proto  # RFC 3264: the answer keeps the offer's profile
    [line] = crypto_lines(result)
    assert (line.tag, line.suite) == (1, "AES_CM_128_HMAC_SHA1_80")
    assert len(line.key) == 30 and line.key != BARESIP_KEY
    assert result.srtp == SrtpKeys("AES_CM_128_HMAC_SHA1_80", line.key, BARESIP_KEY)
    again = answer(text, "127.0.0.1", 20000, srtp=policy, session_version=1)  # a re-INVITE keeps our key
    assert again.srtp == result.srtp
    other_call = answer(text, "127.0.0.1", 20000, srtp=SrtpPolicy(mode))
    assert other_call.srtp is not None and other_call.srtp.local_key != line.key  # fresh per call


def test_best_effort_offer_is_answered_in_plain_rtp_when_srtp_is_off() -> None:
    for policy in (None, SrtpPolicy("off")):
        result = answer(BARESIP_SRTP, "127.0.0.1", 20000, srtp=policy)
        assert result.srtp is None and crypto_lines(result) == []
        assert reparsed_media(result)[0].proto == "RTP/AVP"


def test_plain_offer_is_answered_in_plain_rtp_with_offer() -> None:
    result = answer(BARESIP, "127.0.0.1", 20000, srtp=SrtpPolicy("offer"))
    assert result.srtp is None and crypto_lines(result) == []


def test_savp_offer_is_refused_when_srtp_is_off() -> None:
    with pytest.raises(SrtpRefused, match="RTP/SAVP stream needs SRTP, which is off"):
        answer(BARESIP_SRTP_MANDATORY, "127.0.0.1", 20000)
    assert issubclass(SrtpRefused, NoCommonCodec)  # the endpoint answers it 488


def test_require_refuses_a_plain_offer() -> None:
    with pytest.raises(SrtpRefused, match=r"SRTP is required.*no a=crypto line.*AES_CM_128_HMAC_SHA1_80"):
        answer(BARESIP, "127.0.0.1", 20000, srtp=SrtpPolicy("require"))


def test_savp_without_usable_key_is_refused_even_with_offer() -> None:
    text = BARESIP_SRTP_MANDATORY.replace("AES_CM_128_HMAC_SHA1_80", "AEAD_AES_256_GCM")
    with pytest.raises(SrtpRefused, match="suite AEAD_AES_256_GCM is not one we support"):
        answer(text, "127.0.0.1", 20000, srtp=SrtpPolicy("offer"))


def test_the_offerers_first_usable_suite_wins() -> None:
    lines = (
        f"a=crypto:1 AEAD_AES_256_GCM inline:{KEY_80}\r\n"
        f"a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:{KEY_80}|2^31|1:4\r\n"  # an MKI: not supported
        f"a=crypto:3 AES_CM_128_HMAC_SHA1_80 inline:{KEY_80} UNENCRYPTED_SRTP\r\n"
        f"a=crypto:4 AES_CM_128_HMAC_SHA1_32 inline:{KEY_32}|2^31\r\n"
        f"a=crypto:5 AES_CM_128_HMAC_SHA1_80 inline:{KEY_80}\r\n"
    )
    text = SIPP_PCAP.replace("RTP/AVP", "RTP/SAVP") + lines
    result = answer(text, "127.0.0.1", 20000, srtp=SrtpPolicy("require"))
    [line] = crypto_lines(result)
    assert (line.tag, line.suite) == (4, "AES_CM_128_HMAC_SHA1_32")
    assert result.srtp is not None and result.srtp.remote_key == bytes(range(30, 60))


@pytest.mark.parametrize(
    "value, message",
    [
        ("1 AES_CM_128_HMAC_SHA1_80 inline:not*base64*at*all", "tag 1: the inline key is not base64"),
        (f"1 AES_CM_128_HMAC_SHA1_80 inline:{KEY_80[:20]}", "needs a 30-byte key and salt, the inline key has 15"),
        ("1 AES_CM_128_HMAC_SHA1_80", "needs a tag, a suite and a key"),
        (f"x AES_CM_128_HMAC_SHA1_80 inline:{KEY_80}", "tag must be a number"),
        (f"1 AES_CM_128_HMAC_SHA1_80 key:{KEY_80}", "the key must be given as inline:<base64>"),
        (f"1 AES_CM_128_HMAC_SHA1_80 inline:{KEY_80}|forever", "'forever' is neither a key lifetime nor MKI"),
    ],
)
def test_malformed_crypto_lines_say_what_is_wrong(value: str, message: str) -> None:
    with pytest.raises(SdpError, match=re.escape(message)):
        Crypto.parse(value)


def test_an_offer_with_only_a_malformed_key_is_refused_with_the_reason() -> None:
    text = BARESIP_SRTP.replace("inline:s6ExxDjeVXcfUQPYTW7TLaheN4/G9jnHwNY0P/Ue", "inline:s6ExxDje")
    with pytest.raises(SrtpRefused, match="the inline key has 6 bytes"):
        answer(text, "127.0.0.1", 20000, srtp=SrtpPolicy("require"))
    # best effort: the call goes on in plain RTP
    assert answer(text, "127.0.0.1", 20000, srtp=SrtpPolicy("offer")).srtp is None


def test_crypto_line_prints_back() -> None:
    line = Crypto.parse(f"7 AES_CM_128_HMAC_SHA1_32 inline:{KEY_32}")
    assert str(line) == f"7 AES_CM_128_HMAC_SHA1_32 inline:{KEY_32}" and line.problem() is None


@pytest.mark.parametrize("mode, proto", [("offer", "RTP/AVP"), ("require", "RTP/SAVP")])
def test_our_offer_carries_a_key_per_suite(mode: str, proto: str) -> None:
    text = offer("127.0.0.1", 20000, srtp=SrtpPolicy(mode))
    [audio] = SessionDescription.parse(text).media
    lines = crypto_lines(text)
    assert audio.proto == proto
    assert [(c.tag, c.suite) for c in lines] == [(1, "AES_CM_128_HMAC_SHA1_80"), (2, "AES_CM_128_HMAC_SHA1_32")]
    assert lines[0].key != lines[1].key
    assert crypto_lines(offer("127.0.0.1", 20000, srtp=SrtpPolicy("off"))) == []


@pytest.mark.parametrize("mode", ["offer", "require"])
def test_offer_answer_between_two_policies_gives_mirrored_keys(mode: str) -> None:
    ours, theirs = SrtpPolicy(mode), SrtpPolicy("offer")
    their_answer = answer(offer("127.0.0.1", 20000, srtp=ours), "127.0.0.1", 30000, srtp=theirs)
    agreed = parse_answer(their_answer.sdp, srtp=ours)
    assert their_answer.srtp is not None and agreed.srtp is not None
    assert agreed.srtp.suite == "AES_CM_128_HMAC_SHA1_80"
    assert (agreed.srtp.local_key, agreed.srtp.remote_key) == (
        their_answer.srtp.remote_key,
        their_answer.srtp.local_key,
    )


def test_a_plain_answer_to_our_srtp_offer() -> None:
    plain = answer(offer("127.0.0.1", 20000), "127.0.0.1", 30000).sdp
    assert parse_answer(plain, srtp=SrtpPolicy("offer")).srtp is None  # best effort: plain RTP
    with pytest.raises(SrtpRefused, match="no usable SRTP key"):
        parse_answer(plain, srtp=SrtpPolicy("require"))


def test_an_answer_must_take_one_of_our_crypto_lines() -> None:
    ours = SrtpPolicy("require")
    sdp_text = answer(offer("127.0.0.1", 20000, srtp=ours), "127.0.0.1", 30000, srtp=SrtpPolicy("offer")).sdp
    wrong = sdp_text.replace("a=crypto:1 AES_CM_128_HMAC_SHA1_80", "a=crypto:2 AES_CM_128_HMAC_SHA1_80")
    with pytest.raises(SrtpRefused, match="tag 2 with AES_CM_128_HMAC_SHA1_80 answers none of the lines we offered"):
        parse_answer(wrong, srtp=ours)
