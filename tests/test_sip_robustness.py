"""Bad input, protocol corner cases and timers, driven from plain UDP sockets on 127.0.0.1 (a scripted peer
writes the SIP by hand), with a real sipp call afterwards to show the endpoint still works."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets

import numpy as np
import pytest

from harness.peers import LOCAL, Peers, SipPeer, sdp_offer, sip_request
from telephony.rtp_packet import parse as parse_rtp
from telephony.sip.message import Request, Response
from telephony.sip.transaction import Timers

pytestmark = pytest.mark.timeout(60)
FAST = Timers(t1=0.05, t2=0.4, t4=0.5)  # 64*T1 = 3.2 s


def new_id() -> str:
    return secrets.token_hex(6)


async def answered_call(peer: SipPeer, port: int, rtp_port: int, call_id: str) -> Response:
    """INVITE from the scripted peer, wait for the 200, ACK it; returns the 200."""
    peer.send(sip_request("INVITE", peer.port, port, call_id=call_id, branch=new_id(), body=sdp_offer(rtp_port)), port)
    ok = await peer.response(200)
    ack = sip_request("ACK", peer.port, port, call_id=call_id, branch=new_id(), to_tag=ok.to.tag)
    peer.send(ack, port)
    return ok


class RtpSink(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.packets: list[bytes] = []

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.packets.append(data)


async def rtp_sink() -> tuple[asyncio.DatagramTransport, RtpSink]:
    loop = asyncio.get_running_loop()
    return await loop.create_datagram_endpoint(RtpSink, local_addr=(LOCAL, 0))


# ---- bad datagrams -----------------------------------------------------------------------------------------


async def test_bad_datagrams_are_counted_answered_when_possible_and_never_stop_the_endpoint(
    start_endpoint, sip_peer, peers: Peers, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    caplog.set_level(logging.WARNING, logger="telephony.sip.transport")
    good = sip_request("OPTIONS", peer.port, port, call_id=new_id(), branch=new_id())
    for garbage in (os.urandom(300), b"\x00" * 64, b"INVITE", b"hello\r\n\r\n", bytes(range(256)) * 4):
        peer.transport.sendto(garbage, (LOCAL, port))
    # truncated in the middle of the headers, then a Content-Length larger than the body
    peer.send(good[: good.index("Max-Forwards") + 5], port)
    peer.send(
        sip_request("OPTIONS", peer.port, port, call_id="wrong-length", branch=new_id()).replace(
            "Content-Length: 0", "Content-Length: 500"
        ),
        port,
    )
    peer.send(good.replace("CSeq: 1 OPTIONS", "CSeq: one OPTIONS"), port)  # parses, fails validation
    # the largest datagram IPv4 UDP carries (65,507 bytes) is still a message we read
    padding = 65_507 - len(good) - len("X-Padding: \r\n")
    peer.send(good.replace("\r\n\r\n", "\r\nX-Padding: " + "a" * padding + "\r\n\r\n"), port)
    bad = [await peer.response(400, "OPTIONS") for _ in range(3)]
    assert "wrong-length" in {m.headers.get("Call-ID") for m in bad}
    assert any("Content-Length 500" in (m.headers.get("Warning") or "") for m in bad)
    assert any("CSeq 'one OPTIONS'" in (m.headers.get("Warning") or "") for m in bad)
    await peer.response(200, "OPTIONS")
    metrics = endpoint.metrics
    assert metrics.malformed == 7 and metrics.bad_requests == 3
    assert metrics.internal_errors == 0
    # logged once a minute per source and kind, not once a datagram
    malformed_lines = [r for r in caplog.records if "event=sip_malformed" in r.getMessage()]
    assert len(malformed_lines) == 1
    run = await peers.sipp(endpoint.local_address, "uac", calls=1)
    assert run.returncode == 0 and run.successful == 1, run.report()


async def test_a_message_over_64_kb_is_refused_before_parsing(start_endpoint, sip_peer) -> None:
    # IPv4 UDP cannot carry more than 65,507 bytes, so hand the protocol such a message directly, as a
    # stream transport would.
    endpoint = await start_endpoint()
    peer = await sip_peer()
    good = sip_request("OPTIONS", peer.port, endpoint.local_address[1], call_id=new_id(), branch=new_id())
    big = good.replace("\r\n\r\n", "\r\nX-Padding: " + "a" * 70_000 + "\r\n\r\n").encode()
    endpoint._udp.datagram_received(big, (LOCAL, peer.port))
    refused = await peer.response(513, "OPTIONS")
    assert "over 64 KB" in refused.headers.get("Warning")
    assert endpoint.metrics.oversized == 1 and endpoint.metrics.internal_errors == 0


async def test_an_invite_flood_from_one_source_gets_503_with_retry_after(
    start_endpoint, sip_peer, peers: Peers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="telephony.sip.transport")
    endpoint = await start_endpoint(invite_rate=1.0, invite_burst=3, timers=FAST)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    for _ in range(30):
        peer.send(sip_request("INVITE", peer.port, port, call_id=new_id(), branch=new_id(), body=sdp_offer(4000)), port)
    refused = [await peer.response(503) for _ in range(27)]
    assert all(m.headers.get("Retry-After") == "1" for m in refused)
    assert endpoint.metrics.rate_limited == 27 and endpoint.metrics.invites_received == 3
    assert len([r for r in caplog.records if "event=sip_rate_limited" in r.getMessage()]) == 1
    # the limit is per source IP and refills at invite_rate: a second later a real call goes through
    await asyncio.sleep(1.1)
    run = await peers.sipp(endpoint.local_address, "uac", calls=1)
    assert run.returncode == 0 and run.successful == 1, run.report()


async def test_sources_outside_the_allow_list_get_403(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint(allowed_sources=("10.0.0.0/8", "192.168.1.7/32"))
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(sip_request("INVITE", peer.port, port, call_id=new_id(), branch=new_id(), body=sdp_offer(4000)), port)
    peer.send(sip_request("OPTIONS", peer.port, port, call_id=new_id(), branch=new_id()), port)
    assert (await peer.response(403)).reason.startswith("Forbidden")
    await peer.response(403, "OPTIONS")
    assert endpoint.metrics.forbidden == 2 and endpoint.calls == []
    allowed = await start_endpoint(allowed_sources=("127.0.0.0/8",))
    peer.send(
        sip_request("OPTIONS", peer.port, allowed.local_address[1], call_id=new_id(), branch=new_id()),
        allowed.local_address[1],
    )
    await peer.response(200, "OPTIONS")


async def test_unknown_dialog_and_merged_requests(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint(ring_ms=1000)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(sip_request("BYE", peer.port, port, call_id="nobody-" + new_id(), branch=new_id(), to_tag="gone"), port)
    assert (await peer.response(481, "BYE")).status == 481
    # the same INVITE (From tag, Call-ID, CSeq) arriving again with another branch: a fork that looped back
    call_id = new_id()
    peer.send(sip_request("INVITE", peer.port, port, call_id=call_id, branch="first", body=sdp_offer(4000)), port)
    await peer.response(180)
    peer.send(sip_request("INVITE", peer.port, port, call_id=call_id, branch="second", body=sdp_offer(4000)), port)
    merged = await peer.response(482)
    assert merged.vias[0].branch == "z9hG4bKsecond"
    # a retransmission of the first INVITE is answered from the transaction, not taken as a new call
    peer.send(sip_request("INVITE", peer.port, port, call_id=call_id, branch="first", body=sdp_offer(4000)), port)
    again = await peer.response(180)
    assert again.vias[0].branch == "z9hG4bKfirst"
    await peer.response(200)
    metrics = endpoint.metrics
    assert (metrics.unknown_dialog, metrics.loops, metrics.retransmissions) == (1, 1, 1)
    assert metrics.invites_received == 1


# ---- timers --------------------------------------------------------------------------------------------------


async def test_the_200_is_retransmitted_until_the_ack_and_a_missing_ack_ends_the_call_with_bye(
    start_endpoint, sip_peer
) -> None:
    calls = []

    async def on_call(call) -> None:
        calls.append(call)
        await call.closed.wait()

    endpoint = await start_endpoint(on_call, timers=FAST)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(sip_request("INVITE", peer.port, port, call_id=new_id(), branch=new_id(), body=sdp_offer(4000)), port)
    bye = await peer.request("BYE", timeout=6)
    oks = [m for m in peer.received if isinstance(m, Response) and m.status == 200]
    # T1=50 ms doubling to T2=400 ms within 64*T1=3.2 s: 50+100+200+400*7 -> about 10 copies
    assert 7 <= len(oks) <= 12, len(oks)
    assert bye.call_id == oks[0].call_id and bye.to.tag == "peer1"
    assert calls[0].end_reason == "failed" and endpoint.metrics.ack_timeouts == 1

    peer2 = await sip_peer()
    await answered_call(peer2, port, 4000, new_id())
    await asyncio.sleep(1.0)
    assert len([m for m in peer2.received if isinstance(m, Response) and m.status == 200]) == 1


async def test_our_bye_is_retransmitted_until_timer_f_and_a_repeated_bye_is_answered_again(
    start_endpoint, sip_peer
) -> None:
    hung_up = asyncio.Event()

    async def on_call(call) -> None:
        await call.hangup()  # the peer never answers this BYE
        hung_up.set()

    endpoint = await start_endpoint(on_call, timers=FAST)
    peer = await sip_peer()
    await answered_call(peer, endpoint.local_address[1], 4000, new_id())
    await asyncio.wait_for(hung_up.wait(), 6)
    byes = [m for m in peer.received if isinstance(m, Request) and m.method == "BYE"]
    assert len({m.vias[0].branch for m in byes}) == 1
    # timer E: 50, 100, 200, then every 400 ms until 64*T1 = 3.2 s
    assert 8 <= len(byes) <= 12, len(byes)

    other = await start_endpoint()
    port = other.local_address[1]
    call_id = new_id()
    ok = await answered_call(peer, port, 4000, call_id)
    bye = sip_request("BYE", peer.port, port, call_id=call_id, branch="bye1", cseq=2, to_tag=ok.to.tag)
    peer.send(bye, port)
    peer.send(bye, port)
    first, second = await peer.response(200, "BYE"), await peer.response(200, "BYE")
    assert first.to.tag == second.to.tag == ok.to.tag
    assert other.metrics.retransmissions == 1 and other.metrics.calls_ended == 1


async def test_media_timeout_hangs_up_with_bye(start_endpoint, sip_peer) -> None:
    calls = []

    async def on_call(call) -> None:
        calls.append(call)
        await call.closed.wait()

    endpoint = await start_endpoint(on_call, no_media_timeout_s=1.0)
    peer = await sip_peer()
    await answered_call(peer, endpoint.local_address[1], 4000, new_id())
    bye = await peer.request("BYE", timeout=5)
    peer.send(
        f"SIP/2.0 200 OK\r\nVia: {bye.headers.get('Via')}\r\nFrom: {bye.headers.get('From')}\r\n"
        f"To: {bye.headers.get('To')}\r\nCall-ID: {bye.call_id}\r\nCSeq: {bye.headers.get('CSeq')}\r\n"
        "Content-Length: 0\r\n\r\n",
        endpoint.local_address[1],
    )
    await asyncio.sleep(0.1)
    assert calls[0].end_reason == "media_timeout" and endpoint.metrics.media_timeouts == 1


async def test_reinvite_with_a_new_address_moves_the_media(start_endpoint, sip_peer) -> None:
    async def on_call(call) -> None:
        call.play(np.full(8000 * 10, 1000, np.int16))
        await call.closed.wait()

    endpoint = await start_endpoint(on_call)
    port = endpoint.local_address[1]
    first_transport, first = await rtp_sink()
    second_transport, second = await rtp_sink()
    try:
        peer = await sip_peer()
        call_id = new_id()
        ok = await answered_call(peer, port, first_transport.get_extra_info("sockname")[1], call_id)
        await asyncio.sleep(0.3)
        assert len(first.packets) >= 5 and not second.packets
        reinvite = sip_request(
            "INVITE",
            peer.port,
            port,
            call_id=call_id,
            branch=new_id(),
            cseq=2,
            to_tag=ok.to.tag,
            body=sdp_offer(second_transport.get_extra_info("sockname")[1]),
        )
        peer.send(reinvite, port)
        ok2 = await peer.response(200)
        assert ok2.to.tag == ok.to.tag
        peer.send(sip_request("ACK", peer.port, port, call_id=call_id, branch=new_id(), cseq=2, to_tag=ok.to.tag), port)
        before = len(first.packets)
        await asyncio.sleep(0.3)
        assert len(second.packets) >= 5 and len(first.packets) <= before + 1
        ssrcs = {parse_rtp(p).ssrc for p in first.packets + second.packets}
        assert len(ssrcs) == 1, "a second RTP stream was started"
        assert len(endpoint.calls) == 1
    finally:
        first_transport.close()
        second_transport.close()


async def test_stale_cseq_in_a_dialog_gets_500(start_endpoint, sip_peer) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    call_id = new_id()
    ok = await answered_call(peer, port, 4000, call_id)
    peer.send(sip_request("OPTIONS", peer.port, port, call_id=call_id, branch=new_id(), cseq=5, to_tag=ok.to.tag), port)
    await peer.response(200, "OPTIONS")
    peer.send(sip_request("OPTIONS", peer.port, port, call_id=call_id, branch=new_id(), cseq=4, to_tag=ok.to.tag), port)
    assert (await peer.response(500, "OPTIONS")).reason == "CSeq Out Of Order"
    peer.send(sip_request("INFO", peer.port, port, call_id=call_id, branch=new_id(), cseq=6, to_tag=ok.to.tag), port)
    await peer.response(405, "INFO")


# ---- shutdown --------------------------------------------------------------------------------------------------


async def test_stop_byes_live_calls_and_leaves_no_task_or_socket(start_endpoint, sip_peer) -> None:
    started = asyncio.Event()
    ends = []

    async def on_call(call) -> None:
        started.set()
        try:
            async for _ in call.audio_in:
                pass
        finally:
            ends.append(call.end_reason)

    before = asyncio.all_tasks()
    endpoint = await start_endpoint(on_call)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    peer.send(sip_request("INVITE", peer.port, port, call_id=new_id(), branch=new_id(), body=sdp_offer(4000)), port)
    ok = await peer.response(200)
    await started.wait()
    peer.send(sip_request("ACK", peer.port, port, call_id=ok.call_id, branch=new_id(), to_tag=ok.to.tag), port)
    ringing = new_id()  # a call still ringing when we stop
    slow = await start_endpoint(ring_ms=10_000)
    peer.send(
        sip_request("INVITE", peer.port, slow.local_address[1], call_id=ringing, branch=new_id(), body=sdp_offer(4000)),
        slow.local_address[1],
    )
    await peer.response(180)
    await asyncio.wait_for(asyncio.gather(endpoint.stop(0.2), slow.stop(0.2)), 5)
    bye = await peer.request("BYE")
    assert bye.call_id == ok.call_id
    refused = [m for m in peer.received if isinstance(m, Response) and m.status == 503]
    assert [m.call_id for m in refused] == [ringing]
    assert ends == ["shutdown"]
    leftover = asyncio.all_tasks() - before
    assert leftover == set(), leftover
    for transport_owner in (endpoint, slow):
        assert transport_owner._udp._transport is None
