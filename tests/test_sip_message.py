"""Unit tests of telephony.sip: URIs, header values, the header map, framing, make_response."""

from __future__ import annotations

import re

import pytest

from telephony.sip.message import (
    MAX_MESSAGE_SIZE,
    Headers,
    MessageTooLarge,
    NameAddr,
    Request,
    Response,
    SipParseError,
    SipUri,
    Via,
    make_response,
    new_branch,
    new_call_id,
    new_tag,
    parse_message,
    validate_request,
)

INVITE = (
    b"INVITE sip:bob@biloxi.example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds;rport\r\n"
    b"Via: SIP/2.0/UDP bigbox3.site3.atlanta.example.com;branch=z9hG4bK77ef4c2312983.1;received=192.0.2.2\r\n"
    b"Max-Forwards: 70\r\n"
    b"To: Bob <sip:bob@biloxi.example.com>\r\n"
    b'From: "Alice \\"A\\" Liddell" <sip:alice@atlanta.example.com>;tag=1928301774\r\n'
    b"Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r\n"
    b"CSeq: 314159 INVITE\r\n"
    b"Contact: <sip:alice@pc33.atlanta.example.com>\r\n"
    b"Timestamp: 54\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 4\r\n"
    b"\r\n"
    b"v=0\n"
)


def _request(raw: bytes = INVITE) -> Request:
    message = parse_message(raw)
    assert isinstance(message, Request)
    return message


# --- URIs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "sip:alice@atlanta.example.com",
        "sips:alice:secret@atlanta.example.com:5061;transport=tcp;lr",
        "sip:+12125551212@gateway.example.com;user=phone",
        "sip:alice@[2001:db8::10]:5070;maddr=239.255.255.1;ttl=15",
        "sip:[::1]",
        "sip:atlanta.example.com;method=REGISTER?to=alice%40atlanta.example.com&priority=urgent",
        "sip:user;par=u%40example.net@example.com",
        "tel:+1-201-555-0123;phone-context=example.com",
        "urn:service:sos",
    ],
)
def test_uri_round_trips(text: str) -> None:
    uri = SipUri.parse(text)
    assert str(uri) == text and SipUri.parse(str(uri)) == uri


def test_uri_fields() -> None:
    uri = SipUri.parse("SIPS:alice:secret@[2001:db8::10]:5061;Transport=TCP;lr?subject=hi")
    assert (uri.scheme, uri.user, uri.password, uri.host, uri.port) == ("sips", "alice", "secret", "2001:db8::10", 5061)
    assert uri.params == {"transport": "TCP", "lr": None} and uri.headers == {"subject": "hi"}
    tel = SipUri.parse("tel:+358-555-1234567;postd=pp22")
    assert (tel.user, tel.host, tel.params) == ("+358-555-1234567", "", {"postd": "pp22"})


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "empty URI"),
        ("sip:alice@example.com; lr", "character ' '"),
        ("<sip:alice@example.com>", "character '<'"),
        ("alice@example.com", "no valid scheme"),
        ("sip:", "nothing after the scheme"),
        ("sip:alice@", "invalid host ''"),
        ("sip:alice@example.com:99999", "port '99999' is larger than 65535"),
        ("sip:alice@example.com:5o60", "port '5o60' is not a non-negative integer"),
        ("sip:al%zzice@example.com", "'%' not followed by two hex digits"),
        ("sip:alice@example.com;;lr", "invalid parameter ''"),
        ("sip:alice@[2001:db8::1", "invalid IPv6 reference"),
        ("sip:al\u00efce@example.com", "character"),
    ],
)
def test_bad_uris_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(SipParseError, match=problem.replace("?", r"\?")):
        SipUri.parse(text)


# --- Name-addr and Via -------------------------------------------------------------------------


def test_name_addr_forms() -> None:
    quoted = NameAddr.parse('"Alice \\"A\\" L" <sip:alice@example.com;transport=udp>;tag=88 ;expires=60')
    assert quoted.display == 'Alice "A" L' and quoted.uri.params == {"transport": "udp"}
    assert quoted.params == {"tag": "88", "expires": "60"} and quoted.tag == "88"
    tokens = NameAddr.parse("Bob  Smith<sip:bob@example.com>")
    assert tokens.display == "Bob Smith" and tokens.params == {}
    # Without <>, everything after the first ';' belongs to the header, not to the URI.
    bare = NameAddr.parse("sip:carol@example.com;transport=tcp;tag=7")
    assert bare.display is None and bare.uri.params == {} and bare.params == {"transport": "tcp", "tag": "7"}
    quoted_param = NameAddr.parse('<sip:a@b>;+sip.instance="<urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6>"')
    assert quoted_param.params["+sip.instance"] == '"<urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6>"'


@pytest.mark.parametrize(
    "text",
    [
        '"Alice \\"A\\" L" <sip:alice@example.com;transport=udp>;tag=88',
        "<sip:bob@example.com>",
        '"" <sip:bob@example.com>;q=0.5;expires=3600',
        '"tab\there \\\\ back" <sip:x@y>',
    ],
)
def test_name_addr_round_trips(text: str) -> None:
    value = NameAddr.parse(text)
    assert NameAddr.parse(str(value)) == value


def test_name_addr_quotes_control_characters() -> None:
    value = NameAddr(display="a\x07b\r\nc", uri=SipUri.parse("sip:x@y"))
    assert str(value) == '"a\\\x07b  c" <sip:x@y>'  # CR/LF cannot be quoted, so they become spaces


@pytest.mark.parametrize(
    "text, problem",
    [
        ('"Mr. J. User <sip:j.user@example.com>', "unterminated quoted string"),
        ("Bell, Alexander <sip:bell@example.com>", "need quotes"),
        ("sip:user@example.com?Route=x", "must be enclosed in <>"),
        ("<sip:user@example.com", "'<' without '>'"),
        ("<sip:user@example.com>;;", "empty parameter"),
        ('<sip:user@example.com>;tag="abc"def', "text after the quoted value"),
        ("<sip:user@example.com> junk", "unexpected 'junk'"),
        ('"Alice" sip:alice@example.com', "not followed by <URI>"),
        ("   ", "empty address"),
    ],
)
def test_bad_name_addrs(text: str, problem: str) -> None:
    with pytest.raises(SipParseError, match=problem):
        NameAddr.parse(text)


def test_via_fields_and_round_trip() -> None:
    via = Via.parse("SIP / 2.0 / udp  [2001:db8::9] : 5062 ; branch = z9hG4bKa ; rport ; received=192.0.2.4")
    assert (via.transport, via.host, via.port) == ("UDP", "2001:db8::9", 5062)
    assert (via.branch, via.received, via.rport) == ("z9hG4bKa", "192.0.2.4", None) and "rport" in via.params
    assert str(via) == "SIP/2.0/UDP [2001:db8::9]:5062;branch=z9hG4bKa;rport;received=192.0.2.4"
    assert Via.parse(str(via)) == via
    assert Via.parse("SIP/2.0/UDP 10.0.0.1;rport=5070;branch=z9hG4bKb").rport == 5070


@pytest.mark.parametrize(
    "text, problem",
    [
        ("SIP/2.0/UDP", "is not 'SIP/2.0/<transport>"),
        ("SIP/3.0/UDP host", "protocol SIP/3.0 is not SIP/2.0"),
        ("SIP/2.0/UDP host:port", "invalid sent-by"),
        ("SIP/2.0/UDP host:70000", "larger than 65535"),
        ("SIP/2.0/UDP host;branch=", "invalid value ''"),
    ],
)
def test_bad_vias(text: str, problem: str) -> None:
    with pytest.raises(SipParseError, match=problem):
        Via.parse(text)


# --- The header map --------------------------------------------------------------------------


def test_headers_compact_forms_and_case() -> None:
    headers = Headers([("v", "SIP/2.0/UDP a"), ("i", "x@y"), ("cSeQ", "1 INVITE"), ("X-Custom", "1")])
    assert [name for name, _ in headers.items()] == ["Via", "Call-ID", "CSeq", "X-Custom"]
    assert headers.get("via") == headers.get("V") == "SIP/2.0/UDP a"
    assert "call-id" in headers and "I" in headers and "x-custom" in headers and "Route" not in headers


def test_headers_get_all_splits_lists_only() -> None:
    headers = Headers(
        [
            ("Contact", '"Doe, John" <sip:john@a.example>;q=0.5, <sip:j@b.example;x="a,b">'),
            ("m", "<sip:third@c.example>"),
            ("Supported", ""),  # baresip sends an empty Supported header
            ("WWW-Authenticate", 'Digest realm="r", nonce="n", qop="auth,auth-int"'),
            ("WWW-Authenticate", 'Digest realm="r2", nonce="n2"'),
            ("Date", "Sat, 13 Nov 2010 23:29:00 GMT"),
            ("Allow", "INVITE, ACK ,BYE,"),
        ]
    )
    assert headers.get_all("Contact") == [
        '"Doe, John" <sip:john@a.example>;q=0.5',
        '<sip:j@b.example;x="a,b">',
        "<sip:third@c.example>",
    ]
    assert headers.get_all("Supported") == []
    assert len(headers.get_all("WWW-Authenticate")) == 2  # never split: commas belong to the challenge
    assert headers.get_all("Date") == ["Sat, 13 Nov 2010 23:29:00 GMT"]
    assert headers.get_all("Allow") == ["INVITE", "ACK", "BYE"]
    with pytest.raises(SipParseError, match="unterminated quoted string"):
        Headers([("Contact", '"Doe, John <sip:john@a.example>')]).get_all("Contact")


def test_headers_set_remove_and_validation() -> None:
    headers = Headers([("Via", "a"), ("To", "t"), ("Via", "b"), ("From", "f")])
    headers.set("v", "c")
    assert headers.items() == [("Via", "c"), ("To", "t"), ("From", "f")]
    headers.set("Contact", "<sip:x@y>")
    assert headers.items()[-1] == ("Contact", "<sip:x@y>")
    headers.remove("t")
    assert "To" not in headers and len(headers) == 3
    with pytest.raises(ValueError, match="CR or LF"):
        headers.add("Subject", "hi\r\nVia: injected")
    with pytest.raises(ValueError, match="invalid header name"):
        headers.set("Bad Name", "x")
    assert headers.items()[0] == ("Via", "c")  # a refused set changes nothing


# --- Parsing and framing -----------------------------------------------------------------------


def test_parse_invite_and_typed_views() -> None:
    m = _request()
    assert (m.method, str(m.uri), m.version) == ("INVITE", "sip:bob@biloxi.example.com", "SIP/2.0")
    assert m.from_.display == 'Alice "A" Liddell' and m.from_.tag == "1928301774"
    assert m.to.display == "Bob" and m.to.tag is None
    assert m.call_id == "a84b4c76e66710@pc33.atlanta.example.com" and m.cseq == (314159, "INVITE")
    assert [v.branch for v in m.vias] == ["z9hG4bK776asdhds", "z9hG4bK77ef4c2312983.1"]
    assert m.max_forwards == 70 and m.content_type == "application/sdp" and m.body == b"v=0\n"
    validate_request(m)


def test_folding_compact_names_and_lf_line_ends() -> None:
    raw = (
        b"\r\n\r\nOPTIONS sip:a@b SIP/2.0\n"  # leading CRLFs are skipped; bare LF line ends accepted
        b"v: SIP/2.0/UDP h\r\n"
        b" ;branch=z9hG4bK1\r\n"
        b"t: <sip:a@b>\n"
        b"f: <sip:c@d>;tag=1\r\n"
        b"i: cid\r\n"
        b"CSeq: 1\r\n"
        b"\t  OPTIONS\r\n"
        b"Subject: two\r\n"
        b"   \r\n"  # a blank-looking continuation adds nothing
        b"  lines\r\n"
        b"l: 0\r\n"
        b"\n"
    )
    m = _request(raw)
    assert m.vias[0].branch == "z9hG4bK1" and m.cseq == (1, "OPTIONS") and m.call_id == "cid"
    assert m.headers.get("Subject") == "two lines"
    assert [name for name, _ in m.headers.items()] == [
        "Via",
        "To",
        "From",
        "Call-ID",
        "CSeq",
        "Subject",
        "Content-Length",
    ]


def test_content_length_framing() -> None:
    head = b"MESSAGE sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\n"
    assert parse_message(head + b"Content-Length: 3\r\n\r\nabcdef").body == b"abc"  # extra octets ignored
    assert parse_message(head + b"\r\nabcdef").body == b"abcdef"  # no Content-Length: the rest (UDP)
    assert parse_message(head + b"l: 006\r\n\r\nabcdef").body == b"abcdef"
    with pytest.raises(SipParseError, match="Content-Length 7 is larger than the 6 body bytes"):
        parse_message(head + b"Content-Length: 7\r\n\r\nabcdef")
    # An unusable Content-Length still parses (so the request can be answered) and fails validation.
    bad = parse_message(head + b"Content-Length: five\r\n\r\nabcdef")
    assert bad.body == b"abcdef"


@pytest.mark.parametrize(
    "raw, problem",
    [
        (b"", "empty message"),
        (b"\r\n\r\n", "empty message"),
        (b"INVITE sip:a@b SIP/2.0\r\nVia: x\r\n", "no blank line after the headers"),
        (b"INVITE sip:a@b SIP/2.0\r\n folded\r\n\r\n", "line 2: continuation line before any header"),
        (b"INVITE sip:a@b SIP/2.0\r\nVia x\r\n\r\n", "line 2: header line without ':'"),
        (b"INVITE sip:a@b SIP/2.0\r\nTo: a\r\nBad Name: x\r\n\r\n", "line 3: invalid header name 'Bad Name'"),
        (b"INVITE sip:a@b SIP/2.0\r\nTo: a\rb\r\n\r\n", "line 2: bare CR"),
        (b"INVITE sip:a@b HTTP/1.1\r\n\r\n", "invalid SIP version 'HTTP/1.1'"),
        (b"IN(VITE sip:a@b SIP/2.0\r\n\r\n", "invalid method"),
        (b"SIP/2.0 99 Low\r\n\r\n", "status code '99' is not three digits"),
        (b"SIP/2.0 700 High\r\n\r\n", "status code '700'"),
        (b"SIP/x 200 OK\r\n\r\n", "invalid SIP version 'SIP/x'"),
    ],
)
def test_unparseable_messages(raw: bytes, problem: str) -> None:
    with pytest.raises(SipParseError, match=problem):
        parse_message(raw)


def test_oversized_datagram_is_refused_before_parsing() -> None:
    raw = INVITE.replace(b"v=0\n", b"x" * MAX_MESSAGE_SIZE)
    with pytest.raises(MessageTooLarge, match=f"over the {MAX_MESSAGE_SIZE}-byte limit") as caught:
        parse_message(raw)
    assert caught.value.status == 513
    assert isinstance(parse_message(b"OPTIONS sip:a@b SIP/2.0\r\n\r\n".ljust(MAX_MESSAGE_SIZE, b"x")), Request)


def test_non_utf8_header_bytes_are_kept() -> None:
    raw = INVITE.replace(b"To: Bob", b'To: "B\xf6b"')  # Latin-1 from a sloppy peer
    m = _request(raw)
    assert m.to.display == "B\udcf6b"
    assert b'To: "B\xf6b" <sip:bob@biloxi.example.com>' in m.to_bytes()
    assert b'To: "B\xf6b"' in make_response(m, 200, to_tag="t").to_bytes()  # echoed exactly


@pytest.mark.parametrize(
    "change, problem",
    [
        ((b"CSeq: 314159 INVITE", b"CSeq: 314159 BYE"), "CSeq method 'BYE' does not match"),
        ((b"CSeq: 314159 INVITE", b"CSeq: x INVITE"), "CSeq 'x INVITE' is not '<number> <method>'"),
        ((b"Max-Forwards: 70", b"Max-Forwards: 256"), "Max-Forwards '256' is larger than 255"),
        ((b"Max-Forwards: 70", b"Max-Forwards: -1"), "Max-Forwards '-1' is not a non-negative integer"),
        ((b"Content-Length: 4", b"Content-Length: 4\r\nContent-Length: 5"), "2 different Content-Length"),
        ((b"Call-ID: a84b4c76e66710@pc33.atlanta.example.com", b"Call-ID: a b"), "Call-ID 'a b' is not word"),
        ((b"Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r\n", b""), "missing Call-ID header"),
        ((b"Contact: <sip:alice@pc33.atlanta.example.com>", b"Contact: <sip:alice@pc33 bad>"), "Contact: URI"),
        ((b"Timestamp: 54", b"Expires: 4294967296"), "Expires '4294967296' is larger than 4294967295"),
        ((b"Timestamp: 54", b"Route: <sip:p1;lr>, bad uri"), "Route: URI"),
        ((b"Timestamp: 54", b"Date: Sat, 13 Nov 2010 23:29:00 UTC"), "not an RFC 1123 date in GMT"),
    ],
)
def test_validation_errors(change: tuple[bytes, bytes], problem: str) -> None:
    m = _request(INVITE.replace(*change))
    with pytest.raises(SipParseError, match=problem) as caught:
        validate_request(m)
    assert caught.value.status == 400


def test_a_via_header_without_values_counts_as_missing() -> None:
    without_vias = re.sub(rb"Via: [^\r]*\r\n", b"", INVITE)
    m = _request(without_vias.replace(b"Max-Forwards", b"Via: ,\r\nMax-Forwards"))
    assert m.vias == []
    with pytest.raises(SipParseError, match="missing Via header"):
        validate_request(m)


def test_validation_accepts_what_rfc3261_allows() -> None:
    m = _request(INVITE.replace(b"Max-Forwards: 70\r\n", b"").replace(b"Timestamp: 54", b"Contact: *"))
    validate_request(m)
    assert m.max_forwards is None


# --- Serialization -----------------------------------------------------------------------------


def test_round_trip_and_content_length_follows_the_body() -> None:
    m = _request()
    assert parse_message(m.to_bytes()) == m
    m.body = b"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n"
    data = m.to_bytes()
    assert f"\r\nContent-Length: {len(m.body)}\r\n".encode() in data and data.endswith(m.body)
    assert m.headers.get("Content-Length") == "4"  # to_bytes does not modify the message


def test_building_a_request_from_scratch() -> None:
    request = Request("OPTIONS", SipUri.parse("sip:pbx.example.com"))
    request.headers.add("Via", f"SIP/2.0/UDP 127.0.0.1:5060;branch={new_branch()};rport")
    request.headers.add("From", str(NameAddr("Agent", SipUri.parse("sip:agent@127.0.0.1"), {"tag": new_tag()})))
    request.headers.add("To", "<sip:pbx.example.com>")
    request.headers.add("Call-ID", new_call_id("127.0.0.1"))
    request.headers.add("CSeq", "1 OPTIONS")
    parsed = parse_message(request.to_bytes())
    assert isinstance(parsed, Request)
    validate_request(parsed)
    assert parsed.from_.display == "Agent" and parsed.vias[0].branch.startswith("z9hG4bK")  # type: ignore[union-attr]


def test_identifiers_are_random_and_well_formed() -> None:
    branches = {new_branch() for _ in range(100)}
    assert len(branches) == 100 and all(b.startswith("z9hG4bK") and len(b) > 20 for b in branches)
    assert len({new_tag() for _ in range(100)}) == 100
    call_id = new_call_id("[2001:db8::1]")
    assert call_id.endswith("@[2001:db8::1]") and Headers([("Call-ID", call_id)]).get("i") == call_id


# --- make_response (RFC 3261 §8.2.6) -----------------------------------------------------------


def test_make_response_copies_the_dialog_headers() -> None:
    request = _request()
    response = make_response(request, 180, to_tag="a6c85cf", headers={"Contact": "<sip:bob@192.0.2.4>"})
    assert (response.status, response.reason) == (180, "Ringing")
    assert response.headers.get_all("Via") == request.headers.get_all("Via")
    assert [n for n, _ in response.headers.items()] == ["Via", "Via", "From", "To", "Call-ID", "CSeq", "Contact"]
    assert response.headers.get("From") == request.headers.get("From")
    assert response.headers.get("To") == "Bob <sip:bob@biloxi.example.com>;tag=a6c85cf"
    assert response.to.tag == "a6c85cf" and response.cseq == request.cseq and response.call_id == request.call_id
    assert "Timestamp" not in response.headers and "Max-Forwards" not in response.headers


def test_make_response_keeps_an_existing_to_tag_and_copies_timestamp_on_100() -> None:
    request = _request(INVITE.replace(b"To: Bob <sip:bob@biloxi.example.com>", b"To: <sip:bob@b.example>;tag=x9"))
    trying = make_response(request, 100, to_tag="new")
    assert trying.headers.get("To") == "<sip:bob@b.example>;tag=x9" and trying.headers.get("Timestamp") == "54"
    assert trying.reason == "Trying"
    assert make_response(request, 299).reason == "Success"  # unknown codes get their class name
    assert make_response(request, 486, "Agent busy").reason == "Agent busy"
    with pytest.raises(ValueError, match=r"not in 100\.\.699"):
        make_response(request, 700)


def test_make_response_for_a_request_that_failed_validation() -> None:
    request = _request(INVITE.replace(b"To: Bob <sip:bob@biloxi.example.com>", b'To: "Bob <sip:bob@b.example>'))
    with pytest.raises(SipParseError):
        validate_request(request)
    response = make_response(request, 400, "Bad To header", to_tag="t1")
    assert response.headers.get("To") == '"Bob <sip:bob@b.example>;tag=t1'  # as received, with the tag
    parsed = parse_message(response.to_bytes())
    assert isinstance(parsed, Response) and parsed.status == 400 and parsed.vias == request.vias
