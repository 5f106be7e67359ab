"""SRTP with SDES keys against a real peer: baresip (module srtp) calls `voiceswarm echo`'s call handler.

What baresip hears back must correlate with what it sent (its key decrypts what we encrypt with ours, and the
other way round), and what reached our RTP socket must not be plain G.711 of its microphone. The same check on
a plain call shows the wire test can tell the two apart. A caller without keys is refused with 488 when SRTP
is required.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

import telephony.rtp as rtp_module
from callcenter.commands.echo import echo_call
from harness.peers import LOCAL, Peers, best_lag_correlation, chirp, read_wav, sdp_offer, sip_request, write_wav
from telephony.g711 import ulaw_decode
from telephony.ports import allocate
from telephony.rtp_packet import is_rtcp, parse
from telephony.sip.message import Response

needs_baresip = pytest.mark.skipif(shutil.which("baresip") is None, reason="apt-get install baresip-core")
pytestmark = pytest.mark.timeout(90)
ECHO_DELAY_S = 0.5


class WireTap(socket.socket):
    """An RTP socket that keeps every datagram the session reads: the bytes as they were on the wire."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock.family, sock.type, sock.proto, fileno=sock.detach())
        self.setblocking(False)
        self.datagrams: list[bytes] = []

    def recvmsg(self, *args):
        result = super().recvmsg(*args)
        self.datagrams.append(result[0])
        return result


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> list[WireTap]:
    taps: list[WireTap] = []

    def tapped(host: str, port_range: tuple[int, int]) -> tuple[socket.socket, socket.socket]:
        rtp, rtcp = allocate(host, port_range)
        taps.append(WireTap(rtp))
        return taps[-1], rtcp

    monkeypatch.setattr(rtp_module, "allocate", tapped)  # where RtpSession.open looks it up
    return taps


def dec_recording(recordings: Path) -> np.ndarray:
    found = sorted(recordings.glob("dump-*-dec.wav"))
    assert found, f"baresip wrote no *-dec.wav in {recordings}: {list(recordings.iterdir())}"
    pcm, rate = read_wav(found[0])
    assert rate == 8000
    return pcm


@needs_baresip
@pytest.mark.parametrize(
    "mediaenc, mode, suite",
    [
        ("srtp", "offer", "AES_CM_128_HMAC_SHA1_80"),  # RTP/AVP with a=crypto: RFC 4568 best effort
        ("srtp-mand", "require", "AES_CM_128_HMAC_SHA1_80"),  # RTP/SAVP
        ("srtp", "off", None),  # we do not answer the keys: baresip falls back to plain RTP
    ],
)
async def test_baresip_srtp_call_echoes_back_and_the_wire_is_encrypted(
    start_endpoint, peers: Peers, wire: list[WireTap], tmp_path: Path, mediaenc: str, mode: str, suite: str | None
) -> None:
    sweep = chirp(3.0, 300, 3400)
    silence = np.zeros(8000, np.int16)  # the echo of the sweep's end comes back while this plays
    caller_wav = write_wav(tmp_path / "caller.wav", np.concatenate([silence[:2400], sweep, silence]))
    calls = []

    async def on_call(call) -> None:
        calls.append(call)
        await echo_call(call, ECHO_DELAY_S)

    endpoint = await start_endpoint(on_call, srtp=mode)
    run, recordings = await peers.baresip_call(
        f"sip:echo@{LOCAL}:{endpoint.local_address[1]}", caller_wav, seconds=20, mediaenc=mediaenc
    )
    assert calls and calls[0].end_reason == "remote_hangup", run.report()
    assert calls[0].srtp_suite == suite
    # what came back to baresip is its own sweep, half a second later
    correlation, lag = best_lag_correlation(dec_recording(recordings), sweep)
    assert correlation >= 0.9, f"baresip heard its echo with correlation {correlation:.3f}\n{run.report()}"
    assert lag / 8000 >= ECHO_DELAY_S
    # what was on the wire towards us
    [tap] = wire
    rtp = [data for data in tap.datagrams if not is_rtcp(data)]
    assert len(rtp) > 100, run.report()
    packets = [parse(data) for data in rtp]  # the RTP header stays readable under SRTP
    assert {packet.payload_type for packet in packets} == {0}
    tag_bytes = {"AES_CM_128_HMAC_SHA1_80": 10, "AES_CM_128_HMAC_SHA1_32": 4}.get(suite or "", 0)
    assert {len(packet.payload) for packet in packets} == {160 + tag_bytes}
    as_if_plain = np.concatenate([ulaw_decode(packet.payload[:160]) for packet in packets])
    wire_correlation, _ = best_lag_correlation(as_if_plain, sweep)
    if suite is None:
        assert wire_correlation >= 0.95  # plain G.711: the sweep, readable by anyone on the path
    else:
        assert wire_correlation < 0.2, f"the SRTP payload reads as the caller's audio ({wire_correlation:.3f})"


@needs_baresip
async def test_require_refuses_a_plain_baresip_call_with_488(start_endpoint, peers: Peers, tmp_path: Path) -> None:
    calls = []

    async def on_call(call) -> None:
        calls.append(call)

    endpoint = await start_endpoint(on_call, srtp="require")
    caller_wav = write_wav(tmp_path / "caller.wav", chirp(1.0))
    run, _ = await peers.baresip_call(f"sip:echo@{LOCAL}:{endpoint.local_address[1]}", caller_wav, seconds=8)
    assert not calls
    assert "488" in run.stdout + run.stderr, run.report()
    assert endpoint.metrics.no_common_codec == 1


@pytest.mark.parametrize(
    "mode, offered, warning",
    [
        ("require", "RTP/AVP", "SRTP is required here"),
        ("off", "RTP/SAVP", "needs SRTP, which is off here"),
    ],
)
async def test_an_invite_without_usable_srtp_gets_488_with_the_reason(
    start_endpoint, sip_peer, mode: str, offered: str, warning: str
) -> None:
    endpoint = await start_endpoint(srtp=mode)
    peer = await sip_peer()
    port = endpoint.local_address[1]
    body = sdp_offer(30000).replace("RTP/AVP", offered)
    peer.send(sip_request("INVITE", peer.port, port, call_id="srtp-488", branch="srtp1", body=body), port)
    response = await peer.response(488)
    assert isinstance(response, Response) and warning in (response.headers.get("Warning") or "")
    assert not endpoint.calls
