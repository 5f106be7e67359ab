"""SDP (RFC 4566) parsing and building, and the offer/answer rules of RFC 3264 for one audio stream, with
SRTP keys exchanged in a=crypto lines (SDES, RFC 4568).

Only what audio calls need is modelled (origin, connection, media lines, attributes); every other line is
kept as it came so that a parsed description prints back with nothing lost.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from telephony.codec import CLOCK_RATE, STATIC_PAYLOAD_TYPES, SUPPORTED, Codec
from telephony.errors import TelephonyError
from telephony.srtp import SUITES, SrtpKeys, SrtpPolicy

DIRECTIONS = ("sendrecv", "sendonly", "recvonly", "inactive")
_ANSWER_DIRECTION = {"sendrecv": "sendrecv", "sendonly": "recvonly", "recvonly": "sendonly", "inactive": "inactive"}
_WITHOUT_SENDING = {"sendrecv": "recvonly", "sendonly": "inactive", "recvonly": "recvonly", "inactive": "inactive"}
_RTP_PROFILES = ("RTP/AVP", "RTP/AVPF")
_SRTP_PROFILES = ("RTP/SAVP", "RTP/SAVPF")
_HOLD_ADDRESSES = ("0.0.0.0", "::")
# RFC 4566 order of the lines around the ones modelled here.
_SESSION_BEFORE_C, _SESSION_AFTER_C = "iuep", "btrzk"
_MEDIA_BEFORE_C, _MEDIA_AFTER_C = "i", "bk"
PTIME_MS = 20


class SdpError(TelephonyError, ValueError):
    """The SDP body is malformed."""


class NoCommonCodec(SdpError):
    """No audio stream can be agreed: the caller's phone offers none of our codecs (answer 488)."""


class SrtpRefused(NoCommonCodec):
    """No audio stream can be agreed on SRTP: it is required and not offered (or offered with no key we can
    use), or the peer insists on RTP/SAVP while SRTP is off (answer 488)."""


@dataclass
class Origin:
    username: str
    session_id: str
    version: str
    address: str
    addrtype: str = "IP4"
    nettype: str = "IN"

    @classmethod
    def parse(cls, value: str) -> Origin:
        parts = value.split()
        if len(parts) != 6:
            raise SdpError(f"o= needs 6 fields (username id version IN IP4 address), got {value!r}")
        username, session_id, version, nettype, addrtype, address = parts
        return cls(username, session_id, version, address, addrtype, nettype)

    def __str__(self) -> str:
        return f"{self.username} {self.session_id} {self.version} {self.nettype} {self.addrtype} {self.address}"


@dataclass
class Connection:
    address: str
    addrtype: str = "IP4"
    nettype: str = "IN"

    @classmethod
    def parse(cls, value: str) -> Connection:
        parts = value.split()
        if len(parts) != 3:
            raise SdpError(f"c= needs 3 fields (IN IP4 address), got {value!r}")
        nettype, addrtype, address = parts
        return cls(address.split("/")[0], addrtype, nettype)  # drop a multicast TTL: unicast calls only

    @classmethod
    def for_host(cls, host: str) -> Connection:
        return cls(host, "IP6" if ":" in host else "IP4")

    def __str__(self) -> str:
        return f"{self.nettype} {self.addrtype} {self.address}"


@dataclass
class Attribute:
    name: str
    value: str | None = None

    @classmethod
    def parse(cls, value: str) -> Attribute:
        name, sep, rest = value.partition(":")
        return cls(name, rest if sep else None)

    def __str__(self) -> str:
        return self.name if self.value is None else f"{self.name}:{self.value}"


_LIFETIME_POWER = "2^"


@dataclass(frozen=True)
class Crypto:
    """One a=crypto line (RFC 4568 section 9.1): `<tag> <suite> inline:<key||salt>[|lifetime][|MKI:length]
    [session parameters]`."""

    tag: int
    suite: str
    key: bytes = field(repr=False)  # master key || master salt
    lifetime: str | None = None
    mki: str | None = None
    more_keys: int = 0  # further `;inline:` key parameters
    session_params: tuple[str, ...] = ()

    @classmethod
    def parse(cls, value: str) -> Crypto:
        """Raises SdpError with what is wrong: a line we cannot even read is the peer's fault, not a choice."""
        parts = value.split()
        if len(parts) < 3:
            raise SdpError(f"a=crypto needs a tag, a suite and a key (inline:...), got {value[:80]!r}")
        tag_text, suite, key_params, *session_params = parts
        if not tag_text.isdigit() or len(tag_text) > 9:
            raise SdpError(f"a=crypto tag must be a number of up to 9 digits, got {tag_text!r}")
        first, *others = key_params.split(";")
        method, colon, inline = first.partition(":")
        if method != "inline" or not colon:
            raise SdpError(f"a=crypto tag {tag_text}: the key must be given as inline:<base64>, got {first[:60]!r}")
        key_text, *rest = inline.split("|")
        try:
            key = base64.b64decode(key_text + "=" * (-len(key_text) % 4), validate=True)
        except binascii.Error:
            raise SdpError(f"a=crypto tag {tag_text}: the inline key is not base64: {key_text[:60]!r}") from None
        known = SUITES.get(suite)
        if known is not None and len(key) != known.key_bytes:
            raise SdpError(
                f"a=crypto tag {tag_text}: {suite} needs a {known.key_bytes}-byte key and salt, "
                f"the inline key has {len(key)} bytes"
            )
        lifetime = mki = None
        for item in rest:
            if ":" in item:
                mki = item
            elif item.isdigit() or (item.startswith(_LIFETIME_POWER) and item[len(_LIFETIME_POWER) :].isdigit()):
                lifetime = item
            else:
                raise SdpError(f"a=crypto tag {tag_text}: {item!r} is neither a key lifetime nor MKI:length")
        return cls(int(tag_text), suite, key, lifetime, mki, len(others), tuple(session_params))

    def problem(self) -> str | None:
        """Why we cannot use this line (None: we can); such a line is passed over, not an error."""
        if self.suite not in SUITES:
            return f"a=crypto tag {self.tag}: suite {self.suite} is not one we support"
        if self.mki is not None or self.more_keys:
            return f"a=crypto tag {self.tag}: master key identifiers (MKI) and several keys are not supported"
        if self.session_params:  # RFC 4568 6.3: a parameter we do not understand makes the line unusable
            return f"a=crypto tag {self.tag}: session parameters {' '.join(self.session_params)} are not supported"
        return None

    def __str__(self) -> str:
        return f"{self.tag} {self.suite} inline:{base64.b64encode(self.key).decode()}"


def _first(attributes: list[Attribute], name: str) -> Attribute | None:
    return next((a for a in attributes if a.name == name), None)


def _direction(attributes: list[Attribute]) -> str | None:
    return next((a.name for a in attributes if a.name in DIRECTIONS), None)


@dataclass
class Media:
    media: str
    port: int
    proto: str
    formats: list[str]
    port_count: int | None = None
    connection: Connection | None = None
    attributes: list[Attribute] = field(default_factory=list)
    extra: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, value: str) -> Media:
        parts = value.split()
        if len(parts) < 3:
            raise SdpError(f"m= needs media, port, protocol and formats, got {value!r}")
        port_text, _, count_text = parts[1].partition("/")
        if not port_text.isdigit() or int(port_text) > 65535 or (count_text and not count_text.isdigit()):
            raise SdpError(f"m= port must be a number 0..65535, got {parts[1]!r}")
        return cls(parts[0], int(port_text), parts[2], parts[3:], int(count_text) if count_text else None)

    def attribute(self, name: str) -> str | None:
        found = _first(self.attributes, name)
        return found.value if found else None

    def rtp_formats(self) -> Iterator[tuple[int, str, int]]:
        """(payload type, encoding name, clock rate) of each format, in the offered order."""
        rtpmap: dict[str, tuple[str, int]] = {}
        for attribute in self.attributes:
            if attribute.name == "rtpmap" and attribute.value:
                pt, _, encoding = attribute.value.partition(" ")
                name, _, rate = encoding.strip().partition("/")
                rate = rate.partition("/")[0]
                if rate.isdigit():
                    rtpmap[pt] = (name, int(rate))
        for fmt in self.formats:
            if not fmt.isdigit() or int(fmt) > 127:
                continue
            if fmt in rtpmap:
                yield int(fmt), *rtpmap[fmt]
            elif int(fmt) in STATIC_PAYLOAD_TYPES:
                yield int(fmt), STATIC_PAYLOAD_TYPES[int(fmt)], CLOCK_RATE

    def __str__(self) -> str:
        port = f"{self.port}/{self.port_count}" if self.port_count else str(self.port)
        lines = [f"m={self.media} {port} {self.proto} {' '.join(self.formats)}".rstrip()]
        lines += [f"{kind}={value}" for kind, value in self.extra if kind in _MEDIA_BEFORE_C]
        lines += [f"c={self.connection}"] if self.connection else []
        lines += [f"{kind}={value}" for kind, value in self.extra if kind not in _MEDIA_BEFORE_C]
        lines += [f"a={attribute}" for attribute in self.attributes]
        return "\r\n".join(lines)


@dataclass
class SessionDescription:
    origin: Origin | None = None
    name: str = "-"
    connection: Connection | None = None
    attributes: list[Attribute] = field(default_factory=list)
    media: list[Media] = field(default_factory=list)
    extra: list[tuple[str, str]] = field(default_factory=lambda: [("t", "0 0")])

    @classmethod
    def parse(cls, text: str) -> SessionDescription:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines or lines[0].strip() != "v=0":
            raise SdpError("an SDP body must start with the line v=0")
        description = cls(extra=[])
        for number, line in enumerate(lines[1:], start=2):
            if len(line) < 2 or line[1] != "=" or not line[0].isalpha():
                raise SdpError(f"SDP line {number} is not <type>=<value>: {line[:60]!r}")
            kind, value = line[0], line[2:].strip()
            media = description.media[-1] if description.media else None
            if kind == "m":
                description.media.append(Media.parse(value))
            elif kind == "c":
                if media:
                    media.connection = Connection.parse(value)
                else:
                    description.connection = Connection.parse(value)
            elif kind == "a":
                (media.attributes if media else description.attributes).append(Attribute.parse(value))
            elif media:
                media.extra.append((kind, value))
            elif kind == "o":
                description.origin = Origin.parse(value)
            elif kind == "s":
                description.name = value
            else:
                description.extra.append((kind, value))
        return description

    def __str__(self) -> str:
        lines = ["v=0"]
        lines += [f"o={self.origin}"] if self.origin else []
        lines += [f"s={self.name or '-'}"]
        lines += [f"{kind}={value}" for kind, value in self.extra if kind in _SESSION_BEFORE_C]
        lines += [f"c={self.connection}"] if self.connection else []
        lines += [f"{kind}={value}" for kind, value in self.extra if kind in _SESSION_AFTER_C]
        lines += [f"a={attribute}" for attribute in self.attributes]
        lines += [str(media) for media in self.media]
        return "\r\n".join(lines) + "\r\n"

    def connection_for(self, media: Media) -> Connection | None:
        return media.connection or self.connection

    def direction_of(self, media: Media) -> str:
        return _direction(media.attributes) or _direction(self.attributes) or "sendrecv"

    def ptime_of(self, media: Media) -> int | None:
        found = _first(media.attributes, "ptime") or _first(self.attributes, "ptime")
        try:
            return round(float(found.value)) if found and found.value else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Answer:
    """The agreed audio stream: what the RTP session needs, and the answer SDP (ours or the peer's)."""

    sdp: str
    codec: Codec
    dtmf_pt: int | None
    remote: tuple[str, int] | None  # None: the peer wants no media sent to it (c=0.0.0.0 hold)
    ptime: int | None
    direction: str  # ours: sendrecv, sendonly, recvonly or inactive
    srtp: SrtpKeys | None = None  # None: plain RTP


def _check_codecs(codecs: Sequence[str]) -> list[str]:
    names = [name.upper() for name in codecs]
    unknown = [name for name in names if name not in SUPPORTED]
    if unknown or not names:
        raise ValueError(f"codecs must be among {', '.join(SUPPORTED)}, got {list(codecs)}")
    return names


def _pick(media: Media, codecs: list[str]) -> tuple[Codec | None, int | None]:
    """The first codec in the peer's order that we support, and its telephone-event payload type."""
    codec: Codec | None = None
    dtmf_pt: int | None = None
    for pt, name, rate in media.rtp_formats():
        if rate != CLOCK_RATE:
            continue
        if codec is None and name.upper() in codecs:
            codec = Codec(name.upper(), pt)
        elif dtmf_pt is None and name.lower() == "telephone-event":
            dtmf_pt = pt
    return codec, dtmf_pt


def _negotiate(description: SessionDescription, media: Media, codec: Codec, dtmf_pt: int | None, sdp: str) -> Answer:
    connection = description.connection_for(media)
    if connection is None:
        raise SdpError(f"the {media.media} stream has no c= line at media or session level")
    direction = _ANSWER_DIRECTION[description.direction_of(media)]
    remote: tuple[str, int] | None = (connection.address, media.port)
    if connection.address in _HOLD_ADDRESSES:  # RFC 3264 8.4: send neither RTP nor RTCP
        direction, remote = _WITHOUT_SENDING[direction], None
    return Answer(sdp, codec, dtmf_pt, remote, description.ptime_of(media), direction)


def _origin(local_ip: str, session_id: int | None, session_version: int) -> Origin:
    sid = session_id if session_id is not None else secrets.randbits(32)
    return Origin("voiceswarm", str(sid), str(session_version), local_ip, Connection.for_host(local_ip).addrtype)


def _audio_media(
    port: int, proto: str, codecs: Sequence[Codec], dtmf_pt: int | None, direction: str, crypto: Sequence[Crypto] = ()
) -> Media:
    formats = [str(codec.payload_type) for codec in codecs] + ([str(dtmf_pt)] if dtmf_pt is not None else [])
    attributes = [Attribute("rtpmap", f"{c.payload_type} {c.name}/{c.clock_rate}") for c in codecs]
    if dtmf_pt is not None:
        attributes += [
            Attribute("rtpmap", f"{dtmf_pt} telephone-event/{CLOCK_RATE}"),
            Attribute("fmtp", f"{dtmf_pt} 0-15"),
        ]
    attributes += [Attribute("crypto", str(line)) for line in crypto]
    attributes += [Attribute("ptime", str(PTIME_MS)), Attribute(direction)]
    return Media("audio", port, proto, formats, attributes=attributes)


def _usable(media: Media) -> bool:
    return media.media == "audio" and media.port != 0 and media.proto.upper() in _RTP_PROFILES + _SRTP_PROFILES


def _secure_profile(media: Media) -> bool:
    return media.proto.upper() in _SRTP_PROFILES


def _first_usable_crypto(media: Media) -> tuple[Crypto | None, list[str]]:
    """The first a=crypto line of the stream that we can use (in the peer's order), and why the ones before
    it could not be used."""
    reasons: list[str] = []
    for attribute in media.attributes:
        if attribute.name != "crypto":
            continue
        try:
            crypto = Crypto.parse(attribute.value or "")
        except SdpError as error:
            reasons.append(str(error))
            continue
        problem = crypto.problem()
        if problem is None:
            return crypto, reasons
        reasons.append(problem)
    return None, reasons or ["no a=crypto line"]


def _offered_crypto(media: Media, srtp: SrtpPolicy | None) -> Crypto | None:
    """The peer's a=crypto line we answer with (None: plain RTP); raises SrtpRefused when the stream cannot
    be used. With `offer`, RTP/AVP with a=crypto (RFC 4568 best effort, what baresip's `mediaenc=srtp` and many
    PBXs send) is taken as SRTP and RTP/AVP without it as plain RTP; RTP/SAVP always needs a usable key."""
    if srtp is None or not srtp.enabled:
        if _secure_profile(media):
            raise SrtpRefused(f'the {media.proto} stream needs SRTP, which is off here (srtp = "off")')
        return None  # a best-effort a=crypto in RTP/AVP is simply not answered: the call is plain RTP
    crypto, reasons = _first_usable_crypto(media)
    if crypto is None and (srtp.mode == "require" or _secure_profile(media)):
        why = 'SRTP is required here (srtp = "require")' if srtp.mode == "require" else "SRTP is needed"
        raise SrtpRefused(
            f"{why} but the {media.proto} stream has no key we can use ({'; '.join(reasons)}); "
            f"we take {' or '.join(SUITES)}"
        )
    return crypto


def _our_crypto(srtp: SrtpPolicy) -> list[Crypto]:
    """What we offer: every suite we support, in our order, tagged 1, 2...; each with its own key."""
    return [Crypto(tag, name, srtp.key(name)) for tag, name in enumerate(SUITES, start=1)]


def _answered_keys(media: Media, srtp: SrtpPolicy | None) -> SrtpKeys | None:
    """The keys of the peer's answer to our offer (None: plain RTP); raises SrtpRefused."""
    if srtp is None or not srtp.enabled:
        return None  # we offered no a=crypto: one in the answer means nothing
    crypto, reasons = _first_usable_crypto(media)
    ours = {line.tag: line for line in _our_crypto(srtp)}
    if crypto is not None and (crypto.tag not in ours or ours[crypto.tag].suite != crypto.suite):
        reasons.append(f"a=crypto tag {crypto.tag} with {crypto.suite} answers none of the lines we offered")
        crypto = None
    if crypto is None:
        if srtp.mode == "require" or _secure_profile(media):
            raise SrtpRefused(f"the answer's {media.proto} stream has no usable SRTP key ({'; '.join(reasons)})")
        return None
    return SrtpKeys(crypto.suite, srtp.key(crypto.suite), crypto.key)


def answer(
    offer: SessionDescription | str,
    local_ip: str,
    local_port: int,
    *,
    codecs: Sequence[str] = ("PCMU", "PCMA"),
    session_id: int | None = None,
    session_version: int = 0,
    srtp: SrtpPolicy | None = None,
) -> Answer:
    """Answer an offer (RFC 3264): the first usable audio stream with the first of its codecs we support,
    and with SRTP if `srtp` asks for it and the stream offers a key (our answer then carries our own key).

    Every other stream is rejected with port 0. On a re-INVITE pass the session id of the first answer and
    a version one higher, as RFC 3264 section 8 requires. Raises NoCommonCodec or SrtpRefused (answer 488),
    or SdpError.
    """
    description = SessionDescription.parse(offer) if isinstance(offer, str) else offer
    wanted = _check_codecs(codecs)
    chosen: tuple[Media, Codec, int | None, Crypto | None] | None = None
    refusals: list[str] = []
    for media in description.media:
        codec, dtmf_pt = _pick(media, wanted) if _usable(media) else (None, None)
        if codec is None:
            continue
        try:
            chosen = (media, codec, dtmf_pt, _offered_crypto(media, srtp))
        except SrtpRefused as error:
            refusals.append(str(error))
            continue
        break
    if chosen is None:
        if refusals:
            raise SrtpRefused("; ".join(refusals))
        offered = "; ".join(f"{m.media} {m.port} {m.proto} {' '.join(m.formats)}" for m in description.media)
        raise NoCommonCodec(
            f"no audio stream with {' or '.join(wanted)} over RTP/AVP in the offer ({offered or 'no m= line'})"
        )
    offered_media, codec, dtmf_pt, crypto = chosen
    agreed = _negotiate(description, offered_media, codec, dtmf_pt, sdp="")
    ours_crypto: list[Crypto] = []
    if crypto is not None and srtp is not None:
        # the offer's tag and suite, our key (RFC 4568 5.1.2)
        ours_crypto = [Crypto(crypto.tag, crypto.suite, srtp.key(crypto.suite))]
        agreed = replace(agreed, srtp=SrtpKeys(crypto.suite, ours_crypto[0].key, crypto.key))
    ours = SessionDescription(
        origin=_origin(local_ip, session_id, session_version),
        connection=Connection.for_host(local_ip),
        extra=[(kind, value) for kind, value in description.extra if kind == "t"] or [("t", "0 0")],
    )
    for media in description.media:
        if media is offered_media:
            ours.media.append(_audio_media(local_port, media.proto, [codec], dtmf_pt, agreed.direction, ours_crypto))
        else:
            ours.media.append(Media(media.media, 0, media.proto, media.formats or ["0"]))
    return replace(agreed, sdp=str(ours))


def offer(
    local_ip: str,
    local_port: int,
    codecs: Sequence[str] = ("PCMU", "PCMA"),
    dtmf_pt: int | None = 101,
    *,
    session_id: int | None = None,
    session_version: int = 0,
    srtp: SrtpPolicy | None = None,
) -> str:
    """An offer for one sendrecv audio stream with the codecs in our order of preference. With `srtp` on, it
    carries our a=crypto lines: in RTP/SAVP for `require`; in RTP/AVP for `offer` (RFC 4568 best effort), which
    peers without SRTP still answer with plain RTP instead of refusing the call."""
    chosen = [
        Codec(name, pt) for name in _check_codecs(codecs) for pt, known in STATIC_PAYLOAD_TYPES.items() if known == name
    ]
    proto, crypto = "RTP/AVP", []
    if srtp is not None and srtp.enabled:
        proto, crypto = "RTP/SAVP" if srtp.mode == "require" else "RTP/AVP", _our_crypto(srtp)
    description = SessionDescription(
        origin=_origin(local_ip, session_id, session_version),
        connection=Connection.for_host(local_ip),
        media=[_audio_media(local_port, proto, chosen, dtmf_pt, "sendrecv", crypto)],
    )
    return str(description)


def parse_answer(text: str, *, codecs: Sequence[str] = ("PCMU", "PCMA"), srtp: SrtpPolicy | None = None) -> Answer:
    """Read the peer's answer to our offer: the codec it kept, where to send, our resulting direction, and the
    SRTP keys when our offer (made with the same `srtp`) carried a=crypto lines and the answer took one."""
    description = SessionDescription.parse(text)
    wanted = _check_codecs(codecs)
    for media in description.media:
        if _usable(media):
            codec, dtmf_pt = _pick(media, wanted)
            if codec is not None:
                agreed = _negotiate(description, media, codec, dtmf_pt, text)
                return replace(agreed, srtp=_answered_keys(media, srtp))
    raise NoCommonCodec(f"the answer accepts no audio stream with {' or '.join(wanted)}")
