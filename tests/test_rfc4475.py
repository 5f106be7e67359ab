"""RFC 4475's 49 torture messages, in their exact bytes (tests/data/rfc4475/), against our parser and our endpoint.

(a) Parser: every valid message parses and validates; every invalid one is refused with an error that
    names the problem (tests/test_sip_torture.py checks the values the valid ones carry).
(b) Element: each request goes as one UDP datagram from 127.0.0.1:5060 to a running SipEndpoint, and the
    answer is checked against what RFC 4475 (with RFC 3261) says a UAS must give. The RFC's Vias carry
    no port, so RFC 3261 §18.2.2 sends the responses to port 5060 of the received address (127.0.0.1):
    these tests must own 127.0.0.1:5060 (a lock file serialises concurrent runs).

The messages name real-looking hosts (192.0.2.0/24 is this machine's LAN here, example.com, a broadcast
address): an audit hook refuses every send, connect and name lookup off 127.0.0.1 while an element test
runs, so whatever the endpoint tries (RTP to the SDP's address, a BYE to a Contact) stays on this machine.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import ipaddress
import re
import secrets
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.peers import LOCAL
from telephony.endpoint import SipEndpoint
from telephony.sip.message import (
    NameAddr,
    Request,
    Response,
    SipParseError,
    make_response,
    parse_message,
    validate_request,
    validate_response,
)
from telephony.sip.transaction import Timers
from tests.rfc4475 import DATA, NAMES, SECTIONS, load

# ---- the data itself ---------------------------------------------------------------------------------------


def test_the_files_are_the_49_messages_byte_for_byte() -> None:
    # SHA256SUMS lines are "<digest>  <file name>"
    sums = {name: digest for digest, name in (line.split() for line in (DATA / "SHA256SUMS").read_text().splitlines())}
    assert sorted(path.stem for path in DATA.glob("*.dat")) == sorted(NAMES) and len(NAMES) == 49
    for name in NAMES:
        assert hashlib.sha256(load(name)).hexdigest() == sums[f"{name}.dat"], f"{name}.dat was changed"


# Where the RFC means Content-Length to be right, it is: a second check that nothing reframed the files.
EXACT_LENGTH = (
    "wsinv",
    "esc01",
    "longreq",
    "mpart01",
    "unreason",
    "badinv01",
    "quotbal",
    "ltgtruri",
    "lwsruri",
    "lwsstart",
    "escruri",
    "baddate",
    "mismatch02",
    "insuf",
    "multi01",
    "bcast",
    "invut",
    "sdp01",
)


@pytest.mark.parametrize("name", EXACT_LENGTH)
def test_declared_content_length_matches_the_body(name: str) -> None:
    head, _, body = load(name).partition(b"\r\n\r\n")
    declared = re.search(rb"\r\n(?:Content-Length|l)\s*:\s*(\d+)", head)
    assert declared is not None and int(declared[1]) == len(body)


# ---- (a) parser level --------------------------------------------------------------------------------------

# name, refused by ("parse" or "validate"), pattern the error must match, status it owes
REFUSED: dict[str, tuple[str, str, int]] = {
    "badinv01": ("validate", r"Via: .*empty parameter", 400),
    "clerr": ("parse", r"Content-Length 9999 is larger than the 154 body bytes received", 400),
    "ncl": ("validate", r"Content-Length '-999' is not a non-negative integer", 400),
    "scalar02": ("validate", r"CSeq number '36893488147419103232' is larger than 4294967295", 400),
    "scalarlg": ("validate", r"CSeq number '9292394834772304023312' is larger", 400),
    "quotbal": ("validate", r"To: unterminated quoted string", 400),
    "ltgtruri": ("parse", r"Request-URI: URI '<sip:user@example.com>': character '<'", 400),
    "lwsruri": ("parse", r"request line 'INVITE sip:user@example.com; lr SIP/2.0' is not", 400),
    "lwsstart": ("parse", r"request line 'INVITE  sip:user@example.com  SIP/2.0' is not", 400),
    "trws": ("parse", r"request line 'OPTIONS sip:remote-target@example.com SIP/2.0  ' is not", 400),
    "escruri": ("validate", r"Request-URI .* must not carry headers", 400),
    "baddate": ("validate", r"Date 'Fri, 01 Jan 2010 16:00:00 EST' is not an RFC 1123 date in GMT", 400),
    "regbadct": ("validate", r"Contact: URI with ',' or '\?' must be enclosed in <>", 400),
    "badaspec": ("validate", r"To: URI ' sip:t.watson@example.org ': character ' '", 400),
    # The archive's baddn ends after "l: 0" CRLF, with no empty line (the copy hand-typed from the RFC text
    # had one): that is refused first, before the unquoted display names are reached.
    "baddn": ("parse", r"no blank line after the headers", 400),
    "badvers": ("validate", r"SIP version SIP/7.0 is not supported", 505),
    "mismatch01": ("validate", r"CSeq method 'INVITE' does not match request method 'OPTIONS'", 400),
    "mismatch02": ("validate", r"CSeq method 'INVITE' does not match request method 'NEWMETHOD'", 400),
    "bigcode": ("parse", r"status code '4294967301' is not three digits", 400),
    "insuf": ("validate", r"missing From header", 400),
    "multi01": ("validate", r"2 different From headers", 400),
    "mcl01": ("validate", r"2 different Content-Length values: 13, 5", 400),
    # well formed (RFC 4475 §3.3.10), but a UAC discards a response with more than one Via (RFC 3261 §8.1.3.3)
    "bcast": ("validate", r"response has 2 Via values; a user agent accepts exactly one", 400),
}
ACCEPTED = tuple(name for name in NAMES if name not in REFUSED)


def _validate(message: Request | Response) -> None:
    if isinstance(message, Request):
        validate_request(message)
    else:
        validate_response(message)


@pytest.mark.parametrize("name", ACCEPTED)
def test_valid_messages_parse_and_validate(name: str) -> None:
    _validate(parse_message(load(name)))


@pytest.mark.parametrize("name", REFUSED)
def test_invalid_messages_are_refused_with_the_problem_named(name: str) -> None:
    stage, pattern, status = REFUSED[name]
    with pytest.raises(SipParseError, match=pattern) as caught:
        message = parse_message(load(name))
        assert stage == "validate", "parse_message accepted it"
        _validate(message)  # parsed: readable enough for the next layer to answer it
    assert caught.value.status == status


@pytest.mark.parametrize(
    "name",
    [name for name, (stage, _, _) in REFUSED.items() if stage == "validate" and not load(name).startswith(b"SIP/")],
)
def test_requests_refused_by_validation_can_still_be_answered(name: str) -> None:
    message = parse_message(load(name))
    assert isinstance(message, Request)
    response = parse_message(make_response(message, REFUSED[name][2], to_tag="x1").to_bytes())
    assert isinstance(response, Response) and response.status == REFUSED[name][2]
    assert response.headers.get_all("Via") == message.headers.get_all("Via")


# ---- (b) element level: what the RFC says a UAS answers ------------------------------------------------------

DROPPED: frozenset[int] = frozenset()  # no answer at all


@dataclass(frozen=True)
class Owed:
    statuses: frozenset[int]  # the final responses the RFC allows (DROPPED: none, not even a 100)
    why: str  # the RFC's reason, for the failure message
    unsupported: tuple[str, ...] = ()  # a 420 lists these in Unsupported (RFC 3261 §8.2.2.3)
    record_route: tuple[str, ...] = ()  # a 2xx to INVITE copies these (RFC 3261 §12.1.1)


def owe(*statuses: int, why: str, **extra: Any) -> Owed:
    return Owed(frozenset(statuses), why, **extra)


# A UA that is no registrar answers REGISTER 405 with Allow (RFC 3261 §8.2.1; RFC 4475 §3.3.7 says so).
NOT_A_REGISTRAR = "well formed; we are no registrar: 405 (RFC 3261 §8.2.1, RFC 4475 §3.3.7)"
LIBERAL = "malformed: 400 is reasonable, a liberal element may serve it (RFC 4475)"
NEVER_ANSWERED = "a response matching no transaction of ours is dropped, never answered (RFC 3261 §17.1.3, §18.1.2)"

OWED: dict[str, Owed] = {
    # RFC 3261 §12.2.2: a To tag no dialog has: serve it or refuse with 481
    "wsinv": owe(200, 481, why="valid; its To tag matches no dialog: served or 481 (RFC 3261 §12.2.2)"),
    "intmeth": owe(501, why="valid, unknown method: 501 (RFC 3261 §21.5.2; 405 is for methods we know)"),
    "esc01": owe(200, why="valid INVITE: served"),
    "escnull": owe(405, why=NOT_A_REGISTRAR),
    "esc02": owe(501, why="method RE%47IST%45R is not REGISTER: 'an endpoint would reject this message with a 501'"),
    "lwsdisp": owe(200, why="'elements should accept this request as well formed'"),
    "longreq": owe(200, why="valid INVITE: served"),
    "dblreq": owe(405, why="the REGISTER is handled (405 here), the INVITE-like trailing octets ignored (§18.3)"),
    "semiuri": owe(200, why="valid OPTIONS: served"),
    "transports": owe(200, why="valid OPTIONS: served"),
    # MESSAGE: 405 if we take none; one who takes MESSAGE would serve it or 415 the multipart body
    "mpart01": owe(200, 405, 415, why="well formed MESSAGE: answered as we handle MESSAGE"),
    "unreason": owe(why=NEVER_ANSWERED),
    "noreason": owe(why=NEVER_ANSWERED),
    "badinv01": owe(400, why="'should respond with a 400 Bad Request'"),
    "clerr": owe(400, why="Content-Length larger than the datagram, over UDP: 'should respond with a 400'"),
    "ncl": owe(400, why="negative Content-Length: 'should respond with an error'"),
    "scalar02": owe(400, why="CSeq over 2**32-1: 'should respond with a 400 Bad Request due to the CSeq error'"),
    "scalarlg": owe(why="a response with overlarge scalars: 'will simply discard it'"),
    "quotbal": owe(400, why="unterminated quote: 'should return a 400 Bad Request'"),
    "ltgtruri": owe(400, 200, why=LIBERAL),
    "lwsruri": owe(400, why="LWS inside the Request-URI: 'should respond with a 400 Bad Request'"),
    "lwsstart": owe(400, 200, why=LIBERAL),
    "trws": owe(400, 200, why=LIBERAL),
    "escruri": owe(400, 200, why=LIBERAL),
    "baddate": owe(400, 200, why=LIBERAL),
    "regbadct": owe(400, 405, why="400 is reasonable; a liberal UA infers the <> and answers REGISTER 405"),
    "badaspec": owe(400, 200, why=LIBERAL),
    "baddn": owe(400, 200, why=LIBERAL),
    "badvers": owe(505, why="SIP/7.0: 'should respond ... with a 505 Version Not Supported'"),
    "mismatch01": owe(400, why="CSeq method differs from the request's: 'will respond with a 400'"),
    "mismatch02": owe(501, 400, why="unknown method and CSeq mismatch: 501, 400 'also acceptable'"),
    "bigcode": owe(why="status code over 699: 'should simply drop it'"),
    "badbranch": owe(400, 200, why="branch is only the magic cookie: 400 (statelessly) or RFC 2543 matching"),
    "insuf": owe(400, why="no Call-ID, From, To: 'must not break ... Ideally, it will respond with a 400'"),
    "unkscm": owe(416, why="unknown Request-URI scheme: 'will reject it with a 416 Unsupported URI Scheme'"),
    "novelsc": owe(416, 404, why="a scheme we never accept in a Request-URI: 416 (404 if we took some)"),
    "unksm2": owe(400, 405, why="REGISTER: a registrar 400s the non-SIP To; we are no registrar: 405"),
    "bext01": owe(
        420,
        why="Require we do not support: 420 listing them in Unsupported (as a UAS: Require only)",
        unsupported=("nothingSupportsThis", "nothingSupportsThisEither"),
    ),
    "invut": owe(415, why="body of unknown type: 'an endpoint ... would reject it with a 415', with Accept"),
    "regaut01": owe(405, why=NOT_A_REGISTRAR),
    "multi01": owe(400, why="several To, From, Call-ID, CSeq: 'would respond with a 400 Bad Request'"),
    "mcl01": owe(400, why="conflicting Content-Length values: 'should respond with an error'"),
    "bcast": owe(why="'an endpoint receiving this message should simply discard it'"),
    "zeromf": owe(200, why="Max-Forwards 0: 'an endpoint should process the request as if ... still positive'"),
    "cparam01": owe(405, why=NOT_A_REGISTRAR),
    "cparam02": owe(405, why=NOT_A_REGISTRAR),
    "regescrt": owe(405, why=NOT_A_REGISTRAR),
    "sdp01": owe(406, 400, why="Accept without application/sdp: 406 (or 400: every INVITE UA supports SDP)"),
    "inv2543": owe(
        200,
        why="RFC 2543 syntax: 'should be accepted' by elements keeping backward compatibility",
        record_route=("<sip:UserB@example.com;maddr=ss1.example.com>",),
    ),
}
# RFC 3261: a 405 MUST carry Allow (§8.2.1), a 415 the acceptable formats (§21.4.13), a 420 Unsupported (§8.2.2.3).
REQUIRED_HEADER = {405: "Allow", 415: "Accept", 420: "Unsupported"}

# Short timers make a retransmitted final response (timer G = T1) show within the quiet window.
FAST = Timers(t1=0.05, t2=0.4, t4=0.5)
QUIET_S = 0.5  # listened after the final response (or after sending what gets no answer): 10 x T1
ANSWER_S = 3.0  # the longest we wait for a response
SIP_PORT = 5060


def test_every_message_has_what_the_rfc_owes() -> None:
    assert list(OWED) == list(NAMES)


# -- no traffic off 127.0.0.1 -----------------------------------------------------------------------------------

_refused: list[list[tuple[str, Any]]] = []  # while an element test runs: what the hook refused


def _is_loopback(host: Any) -> bool:
    if host is None or host in ("", "localhost", b"localhost"):
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False  # a name: looking it up is traffic too (DNS)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _refused or event not in ("socket.sendto", "socket.connect", "socket.getaddrinfo"):
        return
    target = args[0] if event == "socket.getaddrinfo" else args[1]
    host = target[0] if isinstance(target, tuple) else target
    if _is_loopback(host):
        return
    _refused[-1].append((event, target))
    raise PermissionError(f"{event} to {target!r} refused: RFC 4475 element tests stay on 127.0.0.1")


sys.addaudithook(_audit)  # hooks cannot be removed: it acts only while a test holds `loopback_only`


@pytest.fixture
def loopback_only() -> Iterator[list[tuple[str, Any]]]:
    refused: list[tuple[str, Any]] = []
    _refused.append(refused)
    try:
        yield refused
    finally:
        _refused.clear()


# -- the caller's side: 127.0.0.1:5060 ---------------------------------------------------------------------------


@dataclass
class Datagram:
    data: bytes
    port: int  # our port it arrived on
    at: float

    @property
    def response(self) -> Response:
        message = parse_message(self.data)
        assert isinstance(message, Response), f"the endpoint sent a request: {self.data[:80]!r}"
        return message


class Wire:
    """Our UDP sockets on 127.0.0.1: every datagram the endpoint sends to any of them, in order."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[Datagram] = asyncio.Queue()
        self.seen: list[Datagram] = []
        self.sockets: dict[int, asyncio.DatagramTransport] = {}

    async def listen(self, port: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_datagram_endpoint(lambda: _Port(self, port), local_addr=(LOCAL, port))
        except OSError as error:
            pytest.skip(f"{LOCAL}:{port} is taken ({error}): RFC 4475's Vias send the responses there")
        self.sockets[port] = transport

    def arrived(self, data: bytes, port: int) -> None:
        datagram = Datagram(data, port, time.monotonic())
        self.seen.append(datagram)
        self.inbox.put_nowait(datagram)

    def send(self, data: bytes, port: int) -> None:
        self.sockets[SIP_PORT].sendto(data, (LOCAL, port))

    async def next(self, timeout: float = ANSWER_S) -> Datagram:
        async with asyncio.timeout(timeout):
            return await self.inbox.get()

    async def final(self, method: str | None = None) -> Response:
        """The next final response (to `method`, when given); provisional ones are kept in .seen."""
        try:
            while True:
                response = (await self.next()).response
                if response.status >= 200 and (method is None or cseq_method(response) == method):
                    return response
        except TimeoutError:
            raise AssertionError(f"no final response within {ANSWER_S:g} s; got {describe(self.seen)}") from None

    def close(self) -> None:
        for transport in self.sockets.values():
            transport.close()


class _Port(asyncio.DatagramProtocol):
    def __init__(self, wire: Wire, port: int) -> None:
        self.wire, self.port = wire, port

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.wire.arrived(data, self.port)


@pytest.fixture
def port_5060_lock() -> Iterator[None]:
    """Concurrent runs of this module take turns at 127.0.0.1:5060 (and 5061, 5050, 5070)."""
    path = Path(tempfile.gettempdir()) / "voiceswarm-rfc4475-udp-5060.lock"
    with path.open("w") as lock:
        deadline = time.monotonic() + 60
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.skip("another run held 127.0.0.1:5060 for over 60 s")
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# The top Via's transport and port (wsinv folds its Via over lines: its first value is UDP, no port).
_VIA = re.compile(rb"(?im)^(?:via|v)[ \t]*:[ \t]*SIP[ \t]*/[ \t]*[\d.]+[ \t]*/[ \t]*(\w+)[ \t]+[^\s;:,]+(?::(\d+))?")


@pytest.fixture
async def wire(port_5060_lock: None) -> AsyncIterator[Wire]:
    wire = Wire()
    await wire.listen(SIP_PORT)
    yield wire
    wire.close()


async def listen_at_via_port(wire: Wire, raw: bytes) -> None:
    """RFC 3261 §18.2.2 sends a response to the Via's sent-by port, by default 5060, or 5061 for TLS
    (§19.1.2: bext01's Via is TLS): listen there too (quotbal names 5050, mpart01 5070)."""
    match = _VIA.search(raw)
    if match is None:
        return
    port = int(match[2]) if match[2] else 5061 if match[1].upper() == b"TLS" else SIP_PORT
    if port not in wire.sockets:
        await wire.listen(port)


# -- a served INVITE: we ACK its 2xx and hang up, so the endpoint sends no request anywhere ----------------


def in_dialog(method: str, ok: Response, cseq: int) -> bytes:
    """ACK or BYE for the dialog `ok` set up, straight to the endpoint (as if a proxy had taken its Route)."""
    target = NameAddr.parse(ok.headers.get("Contact") or "").uri
    lines = [
        f"{method} {target} SIP/2.0",
        f"Via: SIP/2.0/UDP {LOCAL}:{SIP_PORT};branch=z9hG4bK{secrets.token_hex(8)};rport",
        f"From: {ok.headers.get('From')}",
        f"To: {ok.headers.get('To')}",
        f"Call-ID: {ok.call_id}",
        f"CSeq: {cseq} {method}",
        "Max-Forwards: 70",
        "Content-Length: 0",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def hang_up(wire: Wire, ok: Response, port: int) -> None:
    wire.send(in_dialog("ACK", ok, ok.cseq[0]), port)
    wire.send(in_dialog("BYE", ok, ok.cseq[0] + 1), port)
    bye_ok = await wire.final("BYE")
    assert bye_ok.status == 200, f"our BYE got {bye_ok.status} {bye_ok.reason}"


def cseq_method(response: Response) -> str:
    """Read leniently: a refusal copies CSeq as sent (scalar02's is over 2**32, multi01 has two)."""
    values = response.headers.get_all("CSeq")
    return values[0].split()[-1] if values and values[0].split() else ""


def to_tag(response: Response) -> str | None:
    """The tag of the first To, read leniently: a refusal copies To as sent (quotbal's has a stray quote,
    badaspec's spaces in the URI), so it may not parse as a name-addr."""
    values = response.headers.get_all("To")
    if not values:
        return None
    params = values[0].rpartition(">")[2] if ">" in values[0] else values[0]
    match = re.search(r";[ \t]*tag[ \t]*=[ \t]*([^;,\s]+)", params, re.IGNORECASE)
    return match[1] if match else None


def has_header(raw: bytes, *names: str) -> bool:
    head = raw.partition(b"\r\n\r\n")[0].lower()
    return any(re.search(rb"\r\n" + re.escape(n.encode()) + rb"[ \t]*:", head) for n in names)


def describe(datagrams: list[Datagram]) -> str:
    return "; ".join(d.data.split(b"\r\n", 1)[0].decode(errors="replace") for d in datagrams) or "nothing"


# -- the tests ------------------------------------------------------------------------------------------------

REQUESTS = tuple(name for name in NAMES if not load(name).startswith(b"SIP/"))
RESPONSES = tuple(name for name in NAMES if load(name).startswith(b"SIP/"))


@pytest.fixture
async def endpoint(loopback_only: list, start_endpoint) -> SipEndpoint:
    """A started endpoint with short timers. It depends on loopback_only so that the hook still acts while
    the endpoint stops (a call left up is hung up then: its BYE must not leave either)."""
    return await start_endpoint(timers=FAST)


async def first_final(wire: Wire, owed_text: str) -> Response:
    try:
        return await wire.final()
    except AssertionError as error:
        raise AssertionError(f"{owed_text}; {error}") from None


def check_final(raw: bytes, final: Response, owed: Owed, context: str) -> None:
    assert final.status in owed.statuses, context
    # RFC 3261 §8.2.6.2: a UAS MUST add a To tag to every final response (insuf has no To to add it to;
    # multi01 has two: the first is the one a UAC reads)
    if has_header(raw, "to", "t"):
        assert to_tag(final), f"{context}; its To has no tag: {final.headers.get_all('To')}"
    required = REQUIRED_HEADER.get(final.status)
    if required is not None:
        assert final.headers.get_all(required), f"{context}; a {final.status} must carry {required}"
    if owed.unsupported:
        listed = {v.strip() for value in final.headers.get_all("Unsupported") for v in value.split(",")}
        assert listed == set(owed.unsupported), f"{context}; Unsupported: {sorted(listed)}"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", REQUESTS)
async def test_the_endpoint_answers_each_request_as_the_rfc_says(name: str, endpoint: SipEndpoint, wire: Wire) -> None:
    raw, owed = load(name), OWED[name]
    await listen_at_via_port(wire, raw)
    port = endpoint.local_address[1]
    wire.send(raw, port)
    owed_text = f"§{SECTIONS[name][0]} {name}: owed {sorted(owed.statuses)} ({owed.why})"
    final = await first_final(wire, owed_text)
    context = f"{owed_text}; got {final.status} {final.reason}"
    answered = cseq_method(final) == "INVITE" and 200 <= final.status < 300
    if answered:  # first end the call (served or not owed), so that the endpoint sends no BYE of its own
        await hang_up(wire, final, port)
    check_final(raw, final, owed, context)
    if answered:
        assert tuple(final.headers.get_all("Record-Route")) == owed.record_route, f"{context}; Record-Route"
    else:
        await asyncio.sleep(QUIET_S)  # a retransmission (timer G = T1 here) would arrive within it
        # one request, one response: a refusal costs the sender no more than it sent (RFC 3261 §8.2.7)
        assert len(wire.seen) == 1, f"{context}; the endpoint sent {len(wire.seen)}: {describe(wire.seen)}"
    assert endpoint.metrics.internal_errors == 0, context


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", RESPONSES)
async def test_responses_from_nowhere_are_dropped(
    name: str, endpoint: SipEndpoint, wire: Wire, loopback_only: list
) -> None:
    assert OWED[name].statuses == DROPPED
    port = endpoint.local_address[1]
    wire.send(load(name), port)
    await asyncio.sleep(QUIET_S)
    assert wire.seen == [], f"{name}: the endpoint answered a response: {describe(wire.seen)}"
    # bcast's top Via is 255.255.255.255: nothing may go there, nor anywhere else
    assert loopback_only == [], f"{name}: the endpoint tried to send elsewhere: {loopback_only}"
    # and it did not break: a plain OPTIONS is still served
    options = (
        f"OPTIONS sip:{LOCAL}:{port} SIP/2.0\r\nVia: SIP/2.0/UDP {LOCAL}:{SIP_PORT};branch=z9hG4bK"
        f"{secrets.token_hex(8)};rport\r\nFrom: <sip:probe@{LOCAL}>;tag=p1\r\nTo: <sip:{LOCAL}:{port}>\r\n"
        f"Call-ID: {secrets.token_hex(8)}\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
    )
    wire.send(options.encode(), port)
    assert (await wire.final("OPTIONS")).status == 200
    assert endpoint.metrics.internal_errors == 0


def test_the_element_tests_cover_all_49() -> None:
    assert sorted(REQUESTS + RESPONSES) == sorted(NAMES)
    assert set(RESPONSES) == {name for name, owed in OWED.items() if owed.statuses == DROPPED}
