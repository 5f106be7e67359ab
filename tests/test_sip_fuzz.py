"""Property tests: the SIP parser raises nothing but SipParseError, whatever it is fed, and what it
parses serializes to bytes that parse back to an equal message."""

from __future__ import annotations

import contextlib
import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telephony.sip.message import (
    NameAddr,
    Request,
    Response,
    SipParseError,
    SipUri,
    Via,
    make_response,
    parse_message,
    validate_request,
    validate_response,
)
from tests.rfc4475 import load

SEEDS = [
    load(name)
    for name in (
        "wsinv",
        "intmeth",
        "esc01",
        "esc02",
        "lwsdisp",
        "dblreq",
        "semiuri",
        "mpart01",
        "unreason",
        "noreason",
        "badinv01",
        "quotbal",
        "baddn",
        "regbadct",
        "bcast",
        "inv2543",
        "multi01",
    )
]
# Bytes that matter to the grammar, so mutations hit the interesting branches more often than noise.
SPECIAL = [
    b"\r\n",
    b"\r",
    b"\n",
    b" ",
    b"\t",
    b":",
    b";",
    b",",
    b'"',
    b"<",
    b">",
    b"\\",
    b"%",
    b"@",
    b"=",
    b"/",
    b"?",
    b"[",
    b"]",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"9" * 12,
    b"\r\n ",
    b"\r\n\r\n",
]
FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _exercise(message: Request | Response) -> None:
    """Everything the next layer will call on a parsed message; only SipParseError may escape."""
    for view in ("call_id", "cseq", "from_", "to", "vias", "max_forwards", "content_type"):
        with contextlib.suppress(SipParseError):
            getattr(message, view)
    for name in ("Contact", "Route", "Via", "Allow"):
        try:
            for value in message.headers.get_all(name):
                NameAddr.parse(value)
        except SipParseError:
            pass
    try:
        if isinstance(message, Request):
            validate_request(message)
        else:
            validate_response(message)
    except SipParseError:
        pass
    if isinstance(message, Request):
        assert isinstance(parse_message(make_response(message, 400, to_tag="t").to_bytes()), Response)


def _assert_round_trip(message: Request | Response) -> None:
    expected = dataclasses.replace(message, headers=message.headers.copy())
    expected.headers.set("Content-Length", str(len(message.body)))  # to_bytes always writes it
    assert parse_message(message.to_bytes()) == expected


def _check(data: bytes) -> bool:
    try:
        message = parse_message(data)
    except SipParseError:
        return False
    _exercise(message)
    _assert_round_trip(message)
    return True


@FAST
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(data: bytes) -> None:
    _check(data)


@FAST
@given(st.binary(max_size=300).map(lambda tail: b"INVITE sip:a@b SIP/2.0\r\n" + tail))
def test_arbitrary_headers_after_a_good_request_line(data: bytes) -> None:
    _check(data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "replace", "delete", "truncate", "duplicate"]))
        if kind == "insert":
            data[at:at] = draw(st.sampled_from(SPECIAL))
        elif kind == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 20))]
        elif kind == "truncate":
            del data[at:]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 80))]
    return bytes(data)


@FAST
@given(mutated())
def test_mutated_rfc4475_messages(data: bytes) -> None:
    _check(data)


def test_mutations_keep_many_messages_parseable() -> None:
    """The mutation tests are only worth something if many mutants still parse (and round-trip)."""
    parsed = []

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(mutated())
    def count(data: bytes) -> None:
        parsed.append(_check(data))

    count()
    assert sum(parsed) > len(parsed) // 10


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
TOKEN = st.text("abcXYZ019-.!%*_+`'~", min_size=1, max_size=12)
HOST = st.one_of(
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?(\.[a-z0-9]{1,8}){0,3}", fullmatch=True),
    st.ip_addresses().map(str),
)


@st.composite
def sip_uris(draw: st.DrawFn) -> SipUri:
    user = draw(
        st.none() | st.text("abcABC019-_.!~*'()&=+$,;?/%", min_size=1, max_size=12).filter(lambda u: "%" not in u)
    )
    param = st.text("abcxyz019-_.!~*'()", min_size=1, max_size=8)
    params = draw(st.dictionaries(param, st.none() | param, max_size=3))
    return SipUri(
        draw(st.sampled_from(["sip", "sips"])), user, None, draw(HOST), draw(st.none() | st.integers(0, 65535)), params
    )


@st.composite
def requests(draw: st.DrawFn) -> Request:
    method = draw(TOKEN)
    request = Request(method, draw(sip_uris()), body=draw(st.binary(max_size=200)))
    branch = "z9hG4bK" + draw(TOKEN)
    transport = draw(st.sampled_from(["UDP", "TCP", "TLS"]))
    port = draw(st.none() | st.integers(1, 65535))
    request.headers.add("Via", str(Via(transport, draw(HOST), port, {"branch": branch})))
    request.headers.add("From", str(NameAddr(draw(st.none() | TEXT), draw(sip_uris()), {"tag": draw(TOKEN)})))
    request.headers.add("To", str(NameAddr(draw(st.none() | TEXT), draw(sip_uris()))))
    request.headers.add("Call-ID", draw(TOKEN) + "@" + draw(TOKEN))
    request.headers.add("CSeq", f"{draw(st.integers(0, 2**32 - 1))} {method}")
    for _ in range(draw(st.integers(0, 3))):
        value = draw(TEXT).replace("\r", " ").replace("\n", " ").strip(" \t")
        request.headers.add(draw(st.sampled_from(["Subject", "X-Info", "User-Agent", "s"])), value)
    return request


@FAST
@given(requests())
def test_built_requests_round_trip(request: Request) -> None:
    parsed = parse_message(request.to_bytes())
    assert isinstance(parsed, Request)
    validate_request(parsed)
    assert (parsed.method, parsed.uri, parsed.body) == (request.method, request.uri, request.body)
    assert parsed.from_ == request.from_ and parsed.to == request.to and parsed.vias == request.vias
    _assert_round_trip(parsed)
