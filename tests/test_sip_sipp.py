"""Our SIP endpoint against sipp (package sip-tester) on 127.0.0.1: built-in scenarios and the XML scenarios
in tests/sipp/. sipp's stats file (-trace_stat) says whether each call went as its scenario expects."""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest

from harness.peers import SIPP_SHARE, Peers, best_lag_correlation, chirp, pcap_rtp, read_pcap_payloads
from telephony.codec import PCMU
from telephony.g711 import alaw_decode
from telephony.rtp_packet import RtpPacket, parse

pytestmark = pytest.mark.timeout(90)


class Recorder:
    """An on_call that keeps every call's audio frames, DTMF keys and media directions."""

    def __init__(self, hangup_after: float | None = None, transfer_to: str | None = None) -> None:
        self.calls: list = []
        self.frames: dict[str, list[np.ndarray]] = {}
        self.keys: dict[str, list[str]] = {}
        self.directions: dict[str, list[str]] = {}
        self.transfers: list[bool] = []
        self.hangup_after, self.transfer_to = hangup_after, transfer_to

    async def __call__(self, call) -> None:
        self.calls.append(call)
        frames: list[np.ndarray] = []
        keys: list[str] = []
        directions = [call.media_direction]
        self.frames[call.call_id], self.keys[call.call_id], self.directions[call.call_id] = frames, keys, directions

        async def audio() -> None:
            async for frame in call.audio_in:
                frames.append(frame)
                if directions[-1] != call.media_direction:
                    directions.append(call.media_direction)

        async def dtmf() -> None:
            async for key in call.dtmf_in:
                keys.append(key)

        tasks = [asyncio.create_task(audio()), asyncio.create_task(dtmf())]
        try:
            if self.transfer_to is not None:
                await asyncio.sleep(0.3)
                self.transfers.append(await call.transfer(self.transfer_to))
            if self.hangup_after is not None:
                await asyncio.sleep(self.hangup_after)
                return  # the endpoint hangs up for us
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def audio(self, index: int = 0) -> np.ndarray:
        return np.concatenate(self.frames[self.calls[index].call_id])


def assert_sipp_ok(run, calls: int = 1) -> None:
    assert run.returncode == 0 and run.successful == calls and run.failed == 0, run.report()


def our_sdp_ports(run) -> list[int]:
    """The m=audio ports in the SDP of every 200 OK sipp received from us."""
    blocks = re.split(r"UDP message received \[\d+\] bytes :", run.logs.get("messages.log", ""))[1:]
    return [
        int(port)
        for block in blocks
        if block.lstrip().startswith("SIP/2.0 200 OK")
        for port in re.findall(r"m=audio (\d+)", block.split("----", 1)[0])
    ]


async def test_sipp_uac_calls_complete(start_endpoint, peers: Peers) -> None:
    endpoint = await start_endpoint()
    run = await peers.sipp(endpoint.local_address, "uac", calls=5, rate=5, limit=5)
    assert_sipp_ok(run, 5)
    await asyncio.sleep(0.2)
    metrics = endpoint.metrics
    assert (metrics.invites_received, metrics.calls_answered, metrics.calls_ended, metrics.calls_active) == (5, 5, 5, 0)
    assert metrics.malformed == metrics.bad_requests == metrics.internal_errors == 0


async def test_sipp_uac_pcap_sends_pcma_speech_in_exact_20ms_frames_and_a_dtmf_key(
    start_endpoint, peers: Peers
) -> None:
    recorder = Recorder()
    endpoint = await start_endpoint(recorder)
    run = await peers.sipp(endpoint.local_address, "uac_pcap", timeout_s=30)
    assert_sipp_ok(run)
    await asyncio.sleep(0.2)
    call = recorder.calls[0]
    frames = recorder.frames[call.call_id]
    assert frames and {len(frame) for frame in frames} == {160}
    assert all(frame.dtype == np.int16 for frame in frames)
    heard = recorder.audio()
    # The capture is 30 ms packets of A-law speech: what we heard must be that speech, sample for sample.
    packets = [parse(p) for p in read_pcap_payloads(SIPP_SHARE / "g711a.pcap")]
    speech = np.concatenate([alaw_decode(p.payload) for p in packets if p.payload_type == 8])
    correlation, _ = best_lag_correlation(heard, speech)
    assert correlation >= 0.95, f"correlation {correlation:.3f} with the capture's speech"
    assert np.sqrt(np.mean(heard.astype(np.float64) ** 2)) > 500, "no speech energy"
    assert recorder.keys[call.call_id] == ["1"]
    assert call.end_reason == "remote_hangup"


async def test_dtmf_scenario_gives_one_key_per_press_and_caller_details(start_endpoint, peers: Peers) -> None:
    recorder = Recorder()
    endpoint = await start_endpoint(recorder)
    run = await peers.sipp(endpoint.local_address, "dtmf.xml", timeout_s=30)
    assert_sipp_ok(run)
    await asyncio.sleep(0.2)
    call = recorder.calls[0]
    assert recorder.keys[call.call_id] == ["1", "5", "#"]
    assert (call.caller, call.caller_name, call.called) == ("+4930123456", "Sipp Caller", "service")
    assert call.headers["X-Customer-Id"] == "4711" and call.headers["Call-ID"] == call.call_id
    assert call.answered_at is not None and call.ended_at is not None and call.ended_at > call.answered_at


async def test_pcmu_only_offer_streams_pcmu_audio(start_endpoint, peers: Peers) -> None:
    signal = chirp(3.0, 300, 3400)
    packets = [
        RtpPacket(0, seq, seq * 160, 0x1234ABCD, PCMU.encode(signal[i : i + 160]), seq == 0).to_bytes()
        for seq, i in enumerate(range(0, len(signal), 160))
    ]
    recorder = Recorder()
    endpoint = await start_endpoint(recorder)
    workdir = peers.sipp_workdir({"pcmu.pcap": pcap_rtp(packets)})
    run = await peers.sipp(endpoint.local_address, "pcmu.xml", timeout_s=20, workdir=workdir)
    assert_sipp_ok(run)
    await asyncio.sleep(0.2)
    answer = re.search(r"m=audio \d+ RTP/AVP ([0-9 ]+)", run.logs["messages.log"].split("SIP/2.0 200 OK", 1)[1])
    assert answer is not None and answer[1].split() == ["0", "101"]
    correlation, _ = best_lag_correlation(recorder.audio(), signal)
    assert correlation >= 0.95


async def test_cancel_before_answer_gets_487_and_never_reaches_the_application(start_endpoint, peers: Peers) -> None:
    recorder = Recorder()
    endpoint = await start_endpoint(recorder, ring_ms=3000)
    run = await peers.sipp(endpoint.local_address, "cancel.xml", timeout_s=15)
    assert_sipp_ok(run)  # the scenario requires 200 for the CANCEL, then 487
    await asyncio.sleep(0.2)
    assert recorder.calls == []
    assert endpoint.metrics.calls_cancelled == 1 and endpoint.metrics.calls_answered == 0
    assert endpoint.calls == []


async def test_reinvite_hold_and_unhold_reuse_the_one_media_stream(start_endpoint, peers: Peers) -> None:
    recorder = Recorder()
    endpoint = await start_endpoint(recorder)
    workdir = peers.sipp_workdir()
    process, workdir = await peers.start_sipp(endpoint.local_address, "hold.xml", timeout_s=20, workdir=workdir)
    seen: list[str] = []
    async with asyncio.timeout(20):  # sample our direction while sipp puts us on hold and back
        while process.returncode is None:
            if recorder.calls and (not seen or seen[-1] != recorder.calls[0].media_direction):
                seen.append(recorder.calls[0].media_direction)
            await asyncio.sleep(0.05)
    run = await peers.wait_sipp(process, workdir)
    assert_sipp_ok(run)  # sipp checked a=sendrecv, then a=recvonly for its sendonly, then a=sendrecv
    assert seen[:3] == ["sendrecv", "recvonly", "sendrecv"]
    ports = our_sdp_ports(run)
    assert len(ports) == 3 and len(set(ports)) == 1, f"our answers used ports {ports}"


async def test_application_hangs_up_with_bye(start_endpoint, peers: Peers) -> None:
    recorder = Recorder(hangup_after=1.0)
    endpoint = await start_endpoint(recorder)
    run = await peers.sipp(endpoint.local_address, "bye_from_us.xml", timeout_s=15)
    assert_sipp_ok(run)
    assert recorder.calls[0].end_reason == "local_hangup"


@pytest.mark.parametrize(
    "scenario, counter",
    [("options.xml", None), ("unknown_method.xml", "not_implemented"), ("no_codec.xml", "no_common_codec")],
)
async def test_out_of_call_requests(start_endpoint, peers: Peers, scenario: str, counter: str | None) -> None:
    recorder = Recorder()
    endpoint = await start_endpoint(recorder)
    run = await peers.sipp(endpoint.local_address, scenario, timeout_s=10)
    assert_sipp_ok(run)  # OPTIONS -> 200 with Allow/Accept, FROBNICATE -> 501, G.729 only -> 488
    assert recorder.calls == []
    if counter:
        assert getattr(endpoint.metrics, counter) == 1


async def test_invite_without_sdp_gets_our_offer_and_takes_the_answer_from_the_ack(
    start_endpoint, peers: Peers
) -> None:
    recorder = Recorder()
    endpoint = await start_endpoint(recorder)
    run = await peers.sipp(endpoint.local_address, "late_offer.xml", timeout_s=15)
    assert_sipp_ok(run)  # sipp checked that our 200 carried an offer of PCMU, PCMA and telephone-event
    call = recorder.calls[0]
    # on_call starts with the 200, before the ACK: media waits for the answer the ACK carries
    assert recorder.directions[call.call_id][0] == "inactive" and call.media_direction == "sendrecv"


@pytest.mark.parametrize("scenario, succeeds", [("transfer_ok.xml", True), ("transfer_busy.xml", False)])
async def test_blind_transfer_follows_the_notify_sipfrags(
    start_endpoint, peers: Peers, scenario: str, succeeds: bool
) -> None:
    recorder = Recorder(transfer_to="1234")
    endpoint = await start_endpoint(recorder)
    run = await peers.sipp(endpoint.local_address, scenario, timeout_s=15)
    assert_sipp_ok(run)  # sipp checked Refer-To: <sip:1234@127.0.0.1...> and, on success, got our BYE
    assert recorder.transfers == [succeeds]
    call = recorder.calls[0]
    assert call.end_reason == ("transferred" if succeeds else "remote_hangup")
    metrics = endpoint.metrics
    assert (metrics.transfers_succeeded, metrics.transfers_failed) == (int(succeeds), int(not succeeds))


async def test_dial_sipp_uas_with_rtp_echo_hears_its_own_audio(start_endpoint, peers: Peers) -> None:
    endpoint = await start_endpoint()
    from harness.peers import free_udp_port

    port = free_udp_port()
    process, workdir = await peers.start_sipp(None, "uas", sip_port=port, timeout_s=20, extra=("-rtp_echo",))
    await asyncio.sleep(0.5)  # sipp binds its socket
    call = await endpoint.dial(f"sip:service@127.0.0.1:{port}", from_user="tester", timeout_s=5)
    assert call.caller == "tester" and call.called == "service" and call.answered_at is not None
    signal = chirp(1.5, 400, 3000)
    call.play(signal)
    heard: list[np.ndarray] = []
    async with asyncio.timeout(5):
        async for frame in call.audio_in:
            heard.append(frame)
            if len(heard) * 160 >= len(signal) + 8000:
                break
    await call.hangup()
    run = await peers.wait_sipp(process, workdir)
    assert_sipp_ok(run)
    correlation, _ = best_lag_correlation(np.concatenate(heard), signal)
    assert correlation >= 0.95
    assert call.end_reason == "local_hangup" and call.played_samples == len(signal)
