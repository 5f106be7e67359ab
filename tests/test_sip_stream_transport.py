"""StreamTransport on 127.0.0.1 with raw TCP/TLS clients: framing, responses on the request's connection,
connection reuse, limits, idle reaping, RFC 5626 keep-alives, and TLS certificates from files."""

from __future__ import annotations

import asyncio
import logging
import ssl

import pytest

from harness.certs import CertFiles, make_certs
from telephony.sip.message import Request, Response, make_response
from telephony.sip.metrics import SipMetrics
from telephony.sip.stream_transport import StreamLimits, StreamTransport
from telephony.sip.tls import TlsConfig, TlsConfigError
from telephony.sip.transport import Peer

pytestmark = pytest.mark.timeout(30)


def options(branch: str = "z9hG4bK1", *, via_port: int = 5070, body: bytes = b"", transport: str = "TCP") -> bytes:
    return (
        f"OPTIONS sip:echo@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/{transport} 127.0.0.1:{via_port};branch={branch}\r\n"
        "From: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:echo@127.0.0.1>\r\nCall-ID: c1\r\nCSeq: 1 OPTIONS\r\n"
        f"Max-Forwards: 70\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


class Echo:
    """A transport whose requests are answered 200 at once, and which keeps what came in."""

    def __init__(self, tls: TlsConfig | None = None, limits: StreamLimits = StreamLimits()) -> None:
        self.requests: list[tuple[Request, Peer]] = []
        self.responses: list[tuple[Response, Peer]] = []
        self.metrics = SipMetrics()
        self.transport = StreamTransport(
            self.metrics, self._request, self._response, tls=tls.contexts() if tls else None, limits=limits
        )

    def _request(self, request: Request, source: Peer) -> None:
        self.requests.append((request, source))
        self.transport.send_response(make_response(request, 200, to_tag="t"), source)

    def _response(self, response: Response, source: Peer) -> None:
        self.responses.append((response, source))

    async def __aenter__(self) -> Echo:
        self.address = await self.transport.open("127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.transport.close()


async def read_response(reader: asyncio.StreamReader) -> bytes:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


async def test_two_requests_in_one_write_get_two_responses_on_the_same_connection() -> None:
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(options("z9hG4bK1") + options("z9hG4bK2", body=b"x" * 10))
        first, second = await read_response(reader), await read_response(reader)
        assert first.startswith(b"SIP/2.0 200 OK") and b"z9hG4bK1" in first and b"z9hG4bK2" in second
        assert [source.transport for _, source in echo.requests] == ["TCP", "TCP"]
        assert echo.requests[1][0].body == b"x" * 10
        writer.close()


async def test_a_request_dribbled_byte_by_byte_is_served_once() -> None:
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        for byte in options(body=b"hello"):
            writer.write(bytes([byte]))
            await writer.drain()
        assert (await read_response(reader)).startswith(b"SIP/2.0 200")
        assert len(echo.requests) == 1 and echo.requests[0][0].body == b"hello"
        writer.close()


@pytest.mark.parametrize(
    "bad, status",
    [
        (options().replace(b"Content-Length: 0\r\n", b""), b"400"),
        (options().replace(b"Content-Length: 0", b"Content-Length: 99999"), b"513"),
    ],
)
async def test_unframeable_requests_get_an_answer_then_the_connection_closes(
    bad: bytes, status: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(bad)
        answer = await asyncio.wait_for(reader.read(), 5)  # the answer, then EOF
        assert answer.startswith(b"SIP/2.0 " + status) and echo.requests == []
        assert "event=sip_framing_error" in caplog.text and "reason=framing_error" in caplog.text
        writer.close()


async def test_garbage_closes_the_connection_with_a_log_line_and_the_listener_serves_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(b"\x16\x03\x01" + bytes(range(256)) * 300)  # no headers end in 76 kB
        assert await asyncio.wait_for(reader.read(), 5) == b""
        assert "event=sip_framing_error" in caplog.text
        assert echo.metrics.oversized == 1 and echo.metrics.internal_errors == 0
        writer.close()
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(b"NOT SIP AT ALL\r\nContent-Length: 0\r\n\r\n" + options())
        assert (await read_response(reader)).startswith(b"SIP/2.0 200")  # framed, unparseable, skipped
        assert echo.metrics.malformed == 1
        writer.close()


async def test_a_ping_gets_a_pong() -> None:
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(b"\r\n\r\n")
        assert await asyncio.wait_for(reader.readexactly(2), 5) == b"\r\n"
        assert echo.metrics.keepalives == 1
        writer.close()


async def test_our_request_to_a_peer_goes_on_the_connection_it_opened_to_us() -> None:
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(options(via_port=5999))  # "I am 127.0.0.1:5999"; its socket has another port
        await read_response(reader)
        request = Request("OPTIONS", echo.requests[0][0].from_.uri, echo.requests[0][0].headers.copy())
        echo.transport.send(request, Peer("127.0.0.1", 5999, "TCP"))
        assert (await read_response(reader)).startswith(b"OPTIONS sip:a@127.0.0.1 SIP/2.0")
        assert echo.transport.connections == 1
        writer.close()


async def test_a_peer_cannot_claim_another_hosts_address_for_our_requests() -> None:
    async with Echo() as echo:
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(options().replace(b"127.0.0.1:5070", b"192.0.2.7:5060"))
        await read_response(reader)
        echo.transport.send(
            Request("OPTIONS", echo.requests[0][0].from_.uri, echo.requests[0][0].headers.copy()),
            Peer("192.0.2.7", 5060, "TCP"),
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(1), 0.3)
        writer.close()


async def test_we_connect_once_and_reuse_the_connection_for_requests_and_their_responses() -> None:
    async with Echo() as server, Echo() as client:
        for n in range(3):
            request = Request(
                "OPTIONS",
                server.requests[0][0].uri if server.requests else _uri(server),
                _parse(options(f"z9hG4bK{n}")).headers,
            )
            client.transport.send(request, Peer(*server.address, "TCP"))
        async with asyncio.timeout(5):
            while len(client.responses) < 3:
                await asyncio.sleep(0.01)
        assert client.transport.connections == 1 and server.transport.connections == 1
        assert [r.status for r, _ in client.responses] == [200, 200, 200]


async def test_connections_per_source_and_in_total_are_capped() -> None:
    async with Echo(limits=StreamLimits(max_per_source=2, max_connections=3)) as echo:
        streams = [await asyncio.open_connection(*echo.address) for _ in range(3)]
        assert await asyncio.wait_for(streams[2][0].read(), 5) == b""  # the third from 127.0.0.1 is cut at once
        assert echo.metrics.connections_refused == 1 and echo.transport.connections == 2
        for reader, writer in streams[:2]:
            writer.write(options())
            assert (await read_response(reader)).startswith(b"SIP/2.0 200")
            writer.close()


async def test_idle_and_half_sent_connections_are_reaped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with Echo(limits=StreamLimits(idle_timeout_s=0.4, message_timeout_s=0.8)) as echo:
        idle = await asyncio.open_connection(*echo.address)
        slow = await asyncio.open_connection(*echo.address)
        deadline = asyncio.get_running_loop().time() + 1.5
        while asyncio.get_running_loop().time() < deadline and not slow[0].at_eof():
            slow[1].write(b"X")  # a byte every 0.1 s: busy, and never a whole message
            await asyncio.sleep(0.1)
        assert await asyncio.wait_for(idle[0].read(), 2) == b""
        assert await asyncio.wait_for(slow[0].read(), 2) == b""
        assert "reason=idle" in caplog.text and "reason=message_timeout" in caplog.text
        assert echo.transport.connections == 0


async def test_a_keepalive_flow_pings_and_reports_a_peer_that_stops_answering() -> None:
    limits = StreamLimits(keepalive_interval_s=0.2, keepalive_timeout_s=0.3)
    async with Echo(limits=limits) as client:
        server = await asyncio.start_server(lambda r, w: pings.put_nowait((r, w)), "127.0.0.1", 0)
        pings: asyncio.Queue = asyncio.Queue()
        host, port = server.sockets[0].getsockname()[:2]
        client.transport.send(Request("OPTIONS", _uri(client), _parse(options()).headers), Peer(host, port, "TCP"))
        reader, writer = await asyncio.wait_for(pings.get(), 5)
        await read_response(reader)  # our OPTIONS, as the registrar would see a REGISTER
        lost = asyncio.Event()
        client.transport.keep_alive(Peer(host, port, "TCP"), lost.set)
        assert await asyncio.wait_for(reader.readexactly(4), 5) == b"\r\n\r\n"
        writer.write(b"\r\n")  # pong: the flow lives on
        assert await asyncio.wait_for(reader.readexactly(4), 5) == b"\r\n\r\n"
        assert not lost.is_set()
        await asyncio.wait_for(lost.wait(), 5)  # no pong this time
        assert client.transport.connections == 0
        writer.close()
        server.close()


async def test_tls_serves_a_verified_client_and_refuses_a_plain_tcp_one(
    certs: CertFiles, caplog: pytest.LogCaptureFixture
) -> None:
    async with Echo(tls=TlsConfig(str(certs.cert), str(certs.key))) as echo:
        context = ssl.create_default_context(cafile=str(certs.ca))
        reader, writer = await asyncio.open_connection(*echo.address, ssl=context, server_hostname="127.0.0.1")
        writer.write(options(transport="TLS"))
        assert (await read_response(reader)).startswith(b"SIP/2.0 200")
        assert echo.requests[0][1].transport == "TLS"
        writer.close()
        reader, writer = await asyncio.open_connection(*echo.address)
        writer.write(options())
        assert await asyncio.wait_for(reader.read(), 5) == b""
        assert "event=sip_tls_handshake_failed" in caplog.text
        writer.close()


async def test_tls_client_checks_the_servers_certificate(certs: CertFiles, tmp_path, caplog) -> None:
    other = make_certs(tmp_path / "other-ca")  # a certificate from a CA the client does not trust
    async with (
        Echo(tls=TlsConfig(str(other.cert), str(other.key))) as untrusted,
        Echo(tls=TlsConfig(str(certs.cert), str(certs.key))) as trusted,
        Echo(tls=TlsConfig(str(certs.cert), str(certs.key), ca_file=str(certs.ca))) as client,
    ):
        unreachable: list[Peer] = []
        client.transport.on_unreachable = unreachable.append
        for server in (untrusted, trusted):
            client.transport.send(
                Request("OPTIONS", _uri(server), _parse(options(transport="TLS")).headers),
                Peer(*server.address, "TLS", "127.0.0.1"),
            )
        async with asyncio.timeout(5):
            while not (client.responses and unreachable):
                await asyncio.sleep(0.01)
        assert [peer[:2] for peer in unreachable] == [untrusted.address]
        assert [source[:2] for _, source in client.responses] == [trusted.address]
        assert "certificate not accepted" in caplog.text


# ---- certificate files ----------------------------------------------------------------------------------------


def test_good_files_load(certs: CertFiles) -> None:
    contexts = TlsConfig(str(certs.cert), str(certs.key), str(certs.ca)).contexts()
    assert contexts.client.verify_mode == ssl.CERT_REQUIRED and contexts.client.check_hostname


@pytest.mark.parametrize(
    "change, message",
    [
        ("missing cert", "No such file"),
        ("cert is key", "holds no PEM certificate"),
        ("key is cert", "holds no PEM private key"),
        ("mismatch", "does not belong to the certificate"),
        ("encrypted", "encrypted with a pass phrase"),
        ("bad ca", "holds no usable PEM certificate"),
    ],
)
def test_bad_files_are_a_clear_error(certs: CertFiles, tmp_path, change: str, message: str) -> None:
    cert, key, ca = str(certs.cert), str(certs.key), None
    if change == "missing cert":
        cert = str(tmp_path / "nope.pem")
    elif change == "cert is key":
        cert = str(certs.key)
    elif change == "key is cert":
        key = str(certs.cert)
    elif change == "mismatch":
        key = str(make_certs(tmp_path / "other").key)
    elif change == "encrypted":
        encrypted = tmp_path / "encrypted.key"
        encrypted.write_text("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n")
        key = str(encrypted)
    elif change == "bad ca":
        (tmp_path / "ca.pem").write_text("not a certificate\n")
        ca = str(tmp_path / "ca.pem")
    with pytest.raises(TlsConfigError, match=message) as caught:
        TlsConfig(cert, key, ca).contexts()
    assert (cert in str(caught.value)) or (key in str(caught.value)) or (ca and ca in str(caught.value))


def _parse(data: bytes) -> Request:
    from telephony.sip.message import parse_message

    message = parse_message(data)
    assert isinstance(message, Request)
    return message


def _uri(echo: Echo):
    from telephony.sip.uri import SipUri

    return SipUri("sip", "echo", None, *echo.address)
