"""What RFC 3261 says a UAS must do with a request, each rule checked from a scripted UDP peer on 127.0.0.1:
Record-Route copied into the dialog's responses, stateless refusals (one response, no 100, no retransmission),
a To tag on every final response, Require, the Request-URI scheme, Max-Forwards 0 and Accept."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from harness.peers import SipPeer, sdp_offer, sip_request
from telephony.sip.message import Response
from telephony.sip.transaction import Timers

pytestmark = pytest.mark.timeout(30)
FAST = Timers(t1=0.05, t2=0.4, t4=0.5)  # a retransmission would come within 0.05 s, 0.15 s, 0.35 s ...


def new_id() -> str:
    return secrets.token_hex(6)


def invite(peer: SipPeer, port: int, *, extra: str = "", uri: str | None = None) -> str:
    text = sip_request("INVITE", peer.port, port, call_id=new_id(), branch=new_id(), body=sdp_offer(4000), extra=extra)
    if uri is not None:
        _first, rest = text.split("\r\n", 1)
        text = f"INVITE {uri} SIP/2.0\r\n{rest}"
    return text


async def quiet_for(peer: SipPeer, seconds: float) -> list:
    """Everything the peer received in the next `seconds`."""
    before = len(peer.received)
    await asyncio.sleep(seconds)
    return peer.received[before:]


async def test_record_route_is_copied_into_the_180_and_the_200_in_order(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    routes = (
        "Record-Route: <sip:edge.example.com;lr>, <sip:10.0.0.1:5070;lr;ftag=x>\n"
        "Record-Route: <sip:core.example.com;transport=udp;lr>"
    )
    peer.send(invite(peer, port, extra=routes), port)
    expected = ["<sip:edge.example.com;lr>", "<sip:10.0.0.1:5070;lr;ftag=x>", "<sip:core.example.com;transport=udp;lr>"]
    for status in (180, 200):
        response = await peer.response(status)
        assert response.headers.get_all("Record-Route") == expected, response.headers
    assert endpoint.calls[0].dialog.route_set == expected


@pytest.mark.parametrize("refusal", ["forbidden", "rate_limited"])
async def test_a_refused_invite_gets_exactly_one_response_no_bigger_than_itself(
    start_endpoint, sip_peer, refusal: str
) -> None:
    if refusal == "forbidden":
        endpoint = await start_endpoint(allowed_sources=("10.0.0.0/8",), timers=FAST)
    else:
        endpoint = await start_endpoint(invite_rate=0.01, invite_burst=1, timers=FAST)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    if refusal == "rate_limited":  # the one INVITE the burst allows: answered, then hung up on
        peer.send(invite(peer, port), port)
        await peer.response(200)
        await asyncio.sleep(0.2)
    request = invite(peer, port).encode()
    peer.send(request, port)
    got = await quiet_for(peer, 1.5)  # FAST timers: a stateful 403/503 would be resent 4 times by now
    mine = [m for m in got if isinstance(m, Response) and m.call_id in request.decode()]
    assert [m.status for m in mine] == [403 if refusal == "forbidden" else 503], mine
    assert len(mine[0].to_bytes()) <= len(request)
    assert mine[0].to.tag
    assert endpoint.metrics.refused_statelessly >= 1
    # a retransmission of the refused INVITE is refused again, once: nothing was kept to answer it from
    peer.send(request, port)
    again = await quiet_for(peer, 0.5)
    assert [m.status for m in again if isinstance(m, Response) and m.call_id in request.decode()] == [mine[0].status]


@pytest.mark.parametrize(
    "method,extra,status",
    [
        ("OPTIONS", "", 200),
        ("SUBSCRIBE", "", 405),
        ("FOO", "", 501),
        ("OPTIONS", "Require: nothingSupportsThis", 420),
        ("INVITE", "", 486),
        ("INVITE", "Accept: text/nobodyKnowsThis", 406),
        ("BYE", "", 481),
    ],
)
async def test_every_final_response_carries_a_to_tag(
    start_endpoint, sip_peer, method: str, extra: str, status: int
) -> None:
    endpoint = await start_endpoint(max_calls=0)  # any INVITE that gets through is 486 Busy Here
    port = endpoint.local_address[1]
    peer = await sip_peer()
    body = sdp_offer(4000) if method == "INVITE" else ""
    to_tag = new_id() if method == "BYE" else None
    peer.send(
        sip_request(method, peer.port, port, call_id=new_id(), branch=new_id(), body=body, extra=extra, to_tag=to_tag),
        port,
    )
    response = await peer.response(status, method)
    assert response.to.tag, f"{status} {response.reason} has no To tag: {response.headers.get('To')}"
    if to_tag is not None:  # an unknown dialog: the tag the peer sent is echoed, not replaced
        assert response.to.tag == to_tag


async def test_require_is_refused_with_420_and_unsupported_on_any_method(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(
        sip_request(
            "OPTIONS",
            peer.port,
            port,
            call_id=new_id(),
            branch=new_id(),
            extra="Require: nothingSupportsThis, nothingSupportsThisEither",
        ),
        port,
    )
    refused = await peer.response(420, "OPTIONS")
    assert refused.headers.get_all("Unsupported") == ["nothingSupportsThis", "nothingSupportsThisEither"]
    peer.send(invite(peer, port, extra="Require: 100rel"), port)
    assert (await peer.response(420)).headers.get("Unsupported") == "100rel"
    # Proxy-Require is for proxies: a UAS ignores it (RFC 3261 §20.29)
    peer.send(
        sip_request("OPTIONS", peer.port, port, call_id=new_id(), branch=new_id(), extra="Proxy-Require: foo"), port
    )
    await peer.response(200, "OPTIONS")
    assert endpoint.calls == []


@pytest.mark.parametrize(
    "uri", ["nobodyKnowsThisScheme:totallyopaquecontent", "http://example.com/shop", "mailto:shop@example.com"]
)
async def test_an_unknown_request_uri_scheme_gets_416_and_no_call(start_endpoint, sip_peer, uri: str) -> None:
    calls = []

    async def on_call(call) -> None:
        calls.append(call)

    endpoint = await start_endpoint(on_call)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(invite(peer, port, uri=uri), port)
    await peer.response(416)
    await asyncio.sleep(0.2)
    assert calls == [] and endpoint.metrics.calls_answered == 0
    assert not [m for m in peer.received if isinstance(m, Response) and m.status == 100]


async def test_max_forwards_zero_is_served_by_a_uas(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(
        sip_request("OPTIONS", peer.port, port, call_id=new_id(), branch=new_id()).replace(
            "Max-Forwards: 70", "Max-Forwards: 0"
        ),
        port,
    )
    await peer.response(200, "OPTIONS")
    peer.send(invite(peer, port).replace("Max-Forwards: 70", "Max-Forwards: 0"), port)
    ok = await peer.response(200)
    assert ok.headers.get("Content-Type") == "application/sdp"


@pytest.mark.parametrize(
    "accept,status",
    [
        ("text/nobodyKnowsThis", 406),
        ("", 406),  # an empty Accept admits no body, and our 200 must carry SDP
        ("text/plain, application/sdp;level=1", 200),
        ("application/*", 200),
        ("*/*", 200),
    ],
)
async def test_accept_must_admit_sdp(start_endpoint, sip_peer, accept: str, status: int) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(invite(peer, port, extra=f"Accept: {accept}"), port)
    response = await peer.response(status)
    if status == 406:
        assert response.headers.get("Accept") == "application/sdp"
        await asyncio.sleep(0.1)
        assert endpoint.metrics.calls_answered == 0


async def test_a_body_in_an_encoding_we_cannot_read_gets_415(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(invite(peer, port, extra="Content-Encoding: gzip"), port)
    refused = await peer.response(415)
    assert refused.headers.get("Accept-Encoding") == "identity"
    assert endpoint.metrics.calls_answered == 0
