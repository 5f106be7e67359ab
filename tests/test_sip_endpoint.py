"""SipEndpoint calling itself on 127.0.0.1, and scripted peers for what sipp scenarios cannot show well:
DTMF sending, transfer failures and timeouts, dial failures, configuration errors."""

from __future__ import annotations

import asyncio
import secrets

import numpy as np
import pytest

from harness.peers import LOCAL, sdp_offer, sip_request
from telephony.endpoint import CallFailed, EndpointConfig
from telephony.sip.message import Request, Response

pytestmark = pytest.mark.timeout(30)


async def test_our_call_to_ourselves_carries_dtmf_and_hangs_up_both_sides(start_endpoint) -> None:
    answered: list = []
    keys: list[str] = []

    async def on_call(call) -> None:
        answered.append(call)
        async for key in call.dtmf_in:
            keys.append(key)

    callee = await start_endpoint(on_call)
    caller = await start_endpoint()
    call = await caller.dial(f"sip:+4930555@127.0.0.1:{callee.local_address[1]}", from_user="agent7")
    for digit in "42#":
        await call.send_dtmf(digit, 60)
    await asyncio.sleep(0.2)
    await call.hangup()
    await asyncio.wait_for(answered[0].closed.wait(), 3)
    assert keys == ["4", "2", "#"]
    assert (answered[0].caller, answered[0].called) == ("agent7", "+4930555")
    assert (call.end_reason, answered[0].end_reason) == ("local_hangup", "remote_hangup")
    assert caller.calls == [] and callee.calls == []


@pytest.mark.parametrize("caller_mode,callee_mode", [("require", "require"), ("offer", "offer"), ("require", "offer")])
async def test_our_call_to_ourselves_is_encrypted_when_srtp_is_on(
    start_endpoint, caller_mode: str, callee_mode: str
) -> None:
    answered: list = []

    async def on_call(call) -> None:
        answered.append(call)
        async for frame in call.audio_in:
            call.play(frame)  # echo: the caller hears its own tone back only if both directions decrypt

    callee = await start_endpoint(on_call, srtp=callee_mode)
    caller = await start_endpoint(srtp=caller_mode)
    call = await caller.dial(f"sip:echo@127.0.0.1:{callee.local_address[1]}")
    tone = (8000 * np.sin(2 * np.pi * 440 * np.arange(8000) / 8000)).astype(np.int16)
    call.play(tone)
    heard = []
    async with asyncio.timeout(5):
        async for frame in call.audio_in:
            heard.append(frame)
            if len(heard) >= 40:
                break
    assert call.srtp_suite is not None and call.srtp_suite == answered[0].srtp_suite
    assert np.abs(np.concatenate(heard)).max() > 4000  # the tone came back, not silence or noise
    assert call._rtp.stats.srtp_rejected == 0
    await call.hangup()


async def test_a_caller_requiring_srtp_fails_against_a_plain_callee(start_endpoint) -> None:
    callee = await start_endpoint(srtp="off")
    caller = await start_endpoint(srtp="require")
    with pytest.raises(CallFailed) as failed:
        await caller.dial(f"sip:agent@127.0.0.1:{callee.local_address[1]}", timeout_s=3)
    assert failed.value.status == 488


async def test_dial_failures_raise_call_failed(start_endpoint, sip_peer) -> None:
    busy = await start_endpoint(max_calls=0)
    caller = await start_endpoint()
    with pytest.raises(CallFailed) as failure:
        await caller.dial(f"sip:agent@127.0.0.1:{busy.local_address[1]}")
    assert failure.value.status == 486 and busy.metrics.busy == 1
    silent = await sip_peer()
    with pytest.raises(CallFailed) as failure:
        await caller.dial(f"sip:agent@127.0.0.1:{silent.port}", timeout_s=1.0)
    assert failure.value.status == 408
    invites = [m for m in silent.received if isinstance(m, Request) and m.method == "INVITE"]
    assert len(invites) >= 2  # timer A retransmitted it (0.5 s, then 1 s)
    assert caller.metrics.dial_failures == 2 and caller.calls == []


def reply(request: Request, status: int, reason: str) -> str:
    names = ("Via", "From", "To", "Call-ID", "CSeq")
    return "\r\n".join(
        [f"SIP/2.0 {status} {reason}", *(f"{n}: {request.headers.get(n)}" for n in names), "Content-Length: 0", "", ""]
    )


@pytest.mark.parametrize("refer_status", [403, 202])  # 202 but no NOTIFY: transfer_timeout_s runs out
async def test_a_refused_or_unfinished_transfer_returns_false_and_keeps_the_call(
    start_endpoint, sip_peer, refer_status: int
) -> None:
    results: list[bool] = []
    done = asyncio.Event()

    async def on_call(call) -> None:
        results.append(await call.transfer("+49301234"))
        done.set()
        await call.closed.wait()

    endpoint = await start_endpoint(on_call, transfer_timeout_s=0.5)
    port = endpoint.local_address[1]
    peer = await sip_peer()
    call_id = secrets.token_hex(6)
    peer.send(
        sip_request("INVITE", peer.port, port, call_id=call_id, branch=secrets.token_hex(6), body=sdp_offer(4000)), port
    )
    ok = await peer.response(200)
    peer.send(sip_request("ACK", peer.port, port, call_id=call_id, branch=secrets.token_hex(6), to_tag=ok.to.tag), port)
    refer = await peer.request("REFER")
    # a number is sent to the host the call came from (the PBX)
    assert refer.headers.get("Refer-To") == f"<sip:+49301234@{LOCAL}:{peer.port}>"
    peer.send(reply(refer, refer_status, "Accepted" if refer_status == 202 else "Forbidden"), port)
    await asyncio.wait_for(done.wait(), 3)
    assert results == [False]
    live = endpoint.calls
    assert len(live) == 1 and not live[0].closed.is_set() and live[0].end_reason is None
    assert endpoint.metrics.transfers_failed == 1
    # a NOTIFY after we gave up is refused: the implicit subscription is no longer ours
    peer.send(
        sip_request(
            "NOTIFY",
            peer.port,
            port,
            call_id=call_id,
            branch=secrets.token_hex(6),
            cseq=2,
            from_tag="peer1",
            to_tag=ok.to.tag,
            body="SIP/2.0 200 OK\r\n",
            content_type="message/sipfrag",
            extra="Event: refer\nSubscription-State: terminated",
        ),
        port,
    )
    assert isinstance(await peer.response(481, "NOTIFY"), Response)


def test_endpoint_config_errors_say_what_to_change() -> None:
    with pytest.raises(ValueError, match="needs advertised_host"):
        EndpointConfig(listen_host="0.0.0.0")
    with pytest.raises(ValueError, match="must be an IP address"):
        EndpointConfig(listen_host="127.0.0.1", advertised_host="pbx.local")
    with pytest.raises(ValueError, match="not a network"):
        EndpointConfig(allowed_sources=("10.0.0.0/33",))
    with pytest.raises(ValueError, match="invite_rate must be > 0"):
        EndpointConfig(invite_rate=0)
    assert EndpointConfig(listen_host="0.0.0.0", advertised_host="192.0.2.7").media_host == "192.0.2.7"
