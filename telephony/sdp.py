"""SDP (RFC 4566) parsing and building, and the offer/answer rules of RFC 3264 for one audio stream.

Only what audio calls need is modelled (origin, connection, media lines, attributes); every other line is
kept as it came so that a parsed description prints back with nothing lost.
"""
from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from telephony.codec import CLOCK_RATE, STATIC_PAYLOAD_TYPES, SUPPORTED, Codec

DIRECTIONS = ("sendrecv", "sendonly", "recvonly", "inactive")
_ANSWER_DIRECTION = {"sendrecv": "sendrecv", "sendonly": "recvonly", "recvonly": "sendonly", "inactive": "inactive"}
_WITHOUT_SENDING = {"sendrecv": "recvonly", "sendonly": "inactive", "recvonly": "recvonly", "inactive": "inactive"}
_RTP_PROFILES = ("RTP/AVP", "RTP/AVPF")
_HOLD_ADDRESSES = ("0.0.0.0", "::")
# RFC 4566 order of the lines around the ones modelled here.
_SESSION_BEFORE_C, _SESSION_AFTER_C = "iuep", "btrzk"
_MEDIA_BEFORE_C, _MEDIA_AFTER_C = "i", "bk"
PTIME_MS = 20


class SdpError(ValueError):
    """The SDP body is malformed."""


class NoCommonCodec(SdpError):
    """No audio stream can be agreed: the caller's phone offers none of our codecs (answer 488)."""


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


def _audio_media(port: int, proto: str, codecs: Sequence[Codec], dtmf_pt: int | None, direction: str) -> Media:
    formats = [str(codec.payload_type) for codec in codecs] + ([str(dtmf_pt)] if dtmf_pt is not None else [])
    attributes = [Attribute("rtpmap", f"{c.payload_type} {c.name}/{c.clock_rate}") for c in codecs]
    if dtmf_pt is not None:
        attributes += [Attribute("rtpmap", f"{dtmf_pt} telephone-event/{CLOCK_RATE}"), Attribute("fmtp", f"{dtmf_pt} 0-15")]
    attributes += [Attribute("ptime", str(PTIME_MS)), Attribute(direction)]
    return Media("audio", port, proto, formats, attributes=attributes)


def _usable(media: Media) -> bool:
    return media.media == "audio" and media.port != 0 and media.proto.upper() in _RTP_PROFILES


def answer(
    offer: SessionDescription | str,
    local_ip: str,
    local_port: int,
    *,
    codecs: Sequence[str] = ("PCMU", "PCMA"),
    session_id: int | None = None,
    session_version: int = 0,
) -> Answer:
    """Answer an offer (RFC 3264): the first usable audio stream with the first of its codecs we support.

    Every other stream is rejected with port 0. On a re-INVITE pass the session id of the first answer and
    a version one higher, as RFC 3264 section 8 requires. Raises NoCommonCodec (answer 488) or SdpError.
    """
    description = SessionDescription.parse(offer) if isinstance(offer, str) else offer
    wanted = _check_codecs(codecs)
    chosen: tuple[Media, Codec, int | None] | None = None
    for media in description.media:
        codec, dtmf_pt = _pick(media, wanted) if _usable(media) else (None, None)
        if codec is not None:
            chosen = (media, codec, dtmf_pt)
            break
    if chosen is None:
        offered = "; ".join(f"{m.media} {m.port} {m.proto} {' '.join(m.formats)}" for m in description.media)
        raise NoCommonCodec(f"no audio stream with {' or '.join(wanted)} over RTP/AVP in the offer ({offered or 'no m= line'})")
    offered_media, codec, dtmf_pt = chosen
    agreed = _negotiate(description, offered_media, codec, dtmf_pt, sdp="")
    ours = SessionDescription(
        origin=_origin(local_ip, session_id, session_version),
        connection=Connection.for_host(local_ip),
        extra=[(kind, value) for kind, value in description.extra if kind == "t"] or [("t", "0 0")],
    )
    for media in description.media:
        if media is offered_media:
            ours.media.append(_audio_media(local_port, media.proto, [codec], dtmf_pt, agreed.direction))
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
) -> str:
    """An offer for one sendrecv audio stream with the codecs in our order of preference."""
    chosen = [Codec(name, pt) for name in _check_codecs(codecs) for pt, known in STATIC_PAYLOAD_TYPES.items() if known == name]
    description = SessionDescription(
        origin=_origin(local_ip, session_id, session_version),
        connection=Connection.for_host(local_ip),
        media=[_audio_media(local_port, "RTP/AVP", chosen, dtmf_pt, "sendrecv")],
    )
    return str(description)


def parse_answer(text: str, *, codecs: Sequence[str] = ("PCMU", "PCMA")) -> Answer:
    """Read the peer's answer to our offer: the codec it kept, where to send, and our resulting direction."""
    description = SessionDescription.parse(text)
    wanted = _check_codecs(codecs)
    for media in description.media:
        if _usable(media):
            codec, dtmf_pt = _pick(media, wanted)
            if codec is not None:
                return _negotiate(description, media, codec, dtmf_pt, text)
    raise NoCommonCodec(f"the answer accepts no audio stream with {' or '.join(wanted)}")
