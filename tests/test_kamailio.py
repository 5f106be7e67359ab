"""Extension mode against Kamailio (registrar + proxy, digest auth): we register, callers reach us through it,
and a REFER transfer from our call reaches another registered extension."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from harness.kamailio import Kamailio
from harness.peers import LOCAL, SIPP_SHARE, Peers, best_lag_correlation, chirp, read_pcap_payloads, read_wav, write_wav
from telephony.g711 import alaw_decode
from telephony.rtp_packet import parse
from telephony.sip.registration import RegistrationConfig
from tests.test_sip_sipp import Recorder, assert_sipp_ok

pytestmark = pytest.mark.timeout(60)


def extension(kamailio: Kamailio, username: str, password: str, **options) -> RegistrationConfig:
    return RegistrationConfig(kamailio.uri, username, password, retry_min_s=0.2, retry_max_s=1.0, **options)


async def test_wrong_password_fails_clearly_then_the_right_one_registers_and_stop_unregisters(
    start_kamailio, start_endpoint
) -> None:
    kamailio = await start_kamailio({"agent": "s3cret"})
    wrong = await start_endpoint(registration=extension(kamailio, "agent", "guess"))
    assert wrong.registration is not None
    status = await wrong.registration.wait_for("failing", timeout_s=5)
    assert "401" in (status.last_error or "") and "wrong username or password" in (status.last_error or "")
    assert await kamailio.contacts("agent") == []

    right = await start_endpoint(registration=extension(kamailio, "agent", "s3cret"))
    assert right.registration is not None
    status = await right.registration.wait_for("registered", timeout_s=5)
    assert status.expires_s == 300 and status.last_error is None
    port = right.local_address[1]
    assert await kamailio.contacts("agent") == [f"sip:agent@{LOCAL}:{port}"], kamailio.log
    # the failing one keeps retrying with backoff (retry_min_s 0.2 s, capped at 1 s): its failures pile up
    await asyncio.sleep(1.0)
    assert wrong.registration.status.failures >= 3 and wrong.registration.status.state == "failing"

    await right.stop(0.2)
    assert right.registration.status.state == "unregistered"
    assert await kamailio.contacts("agent") == [], kamailio.log


@pytest.mark.parametrize("algorithm,challenge", [("MD5", "www"), ("SHA-256", "www"), ("SHA-256", "proxy")])
async def test_md5_sha256_and_a_407_challenge_register(
    start_kamailio, start_endpoint, algorithm: str, challenge: str
) -> None:
    kamailio = await start_kamailio({"7001": "pa55"}, algorithm=algorithm, challenge=challenge)
    endpoint = await start_endpoint(registration=extension(kamailio, "7001", "pa55", contact_user="voiceswarm-1"))
    assert endpoint.registration is not None
    await endpoint.registration.wait_for("registered", timeout_s=5)
    assert await kamailio.contacts("7001") == [f"sip:voiceswarm-1@{LOCAL}:{endpoint.local_address[1]}"]
    line = next(line for line in kamailio.log.splitlines() if "event=kamailio_authenticated user=7001" in line)
    answered, other = (
        ("authorization", "proxy_authorization") if challenge == "www" else ("proxy_authorization", "authorization")
    )
    assert f"{answered}=Digest " in line and f"{other}=<null>" in line, line
    assert f"algorithm={algorithm}" in line and "qop=auth" in line, line


async def test_the_granted_expiry_is_honoured_and_refreshed_at_half(start_kamailio, start_endpoint) -> None:
    kamailio = await start_kamailio({"agent": "s3cret"}, max_expires=2)
    endpoint = await start_endpoint(registration=extension(kamailio, "agent", "s3cret", expires=300))
    assert endpoint.registration is not None
    status = await endpoint.registration.wait_for("registered", timeout_s=5)
    assert status.expires_s == 2
    await asyncio.sleep(3.2)  # refreshes at 1 s intervals; without them the binding would lapse after 2 s
    assert endpoint.registration.status.registrations >= 3
    assert await kamailio.contacts("agent") == [f"sip:agent@{LOCAL}:{endpoint.local_address[1]}"]


async def test_a_sipp_caller_reaches_our_extension_through_kamailio(
    start_kamailio, start_endpoint, peers: Peers
) -> None:
    kamailio = await start_kamailio({"agent": "s3cret"})
    recorder = Recorder()
    endpoint = await start_endpoint(
        recorder, registration=extension(kamailio, "agent", "s3cret"), allowed_sources=(f"{LOCAL}/32",)
    )
    assert endpoint.registration is not None
    await endpoint.registration.wait_for("registered", timeout_s=5)
    run = await peers.sipp(("127.0.0.1", kamailio.port), "uac_pcap", timeout_s=30, extra=("-s", "agent"))
    assert_sipp_ok(run)
    await asyncio.sleep(0.2)
    call = recorder.calls[0]
    assert call.called == "agent" and call.end_reason == "remote_hangup"
    assert call.headers.get("Record-Route", "").startswith(f"<sip:{LOCAL}:{kamailio.port}"), call.headers
    heard = recorder.audio()
    packets = [parse(p) for p in read_pcap_payloads(SIPP_SHARE / "g711a.pcap")]
    speech = np.concatenate([alaw_decode(p.payload) for p in packets if p.payload_type == 8])
    correlation, _ = best_lag_correlation(heard, speech)
    assert correlation >= 0.95, f"correlation {correlation:.3f} with the capture's speech"
    assert recorder.keys[call.call_id] == ["1"]
    assert "event=kamailio_relay method=INVITE" in kamailio.log


async def test_a_refer_from_our_call_reaches_the_operator_extension_through_kamailio(
    start_kamailio, start_endpoint, peers: Peers, tmp_path: Path
) -> None:
    kamailio = await start_kamailio({"agent": "s3cret", "operator": "0per"})
    transfers: list[bool] = []
    agent_calls: list = []

    async def agent(call) -> None:  # hears the caller a moment, then hands over to the operator
        agent_calls.append(call)
        await asyncio.sleep(1.0)
        transfers.append(await call.transfer("operator"))

    operator = Recorder()
    greeting = chirp(2.0, 400, 3000)

    async def operator_answers(call) -> None:
        call.play(greeting)
        await operator(call)

    agent_endpoint = await start_endpoint(agent, registration=extension(kamailio, "agent", "s3cret"))
    operator_endpoint = await start_endpoint(operator_answers, registration=extension(kamailio, "operator", "0per"))
    for endpoint in (agent_endpoint, operator_endpoint):
        assert endpoint.registration is not None
        await endpoint.registration.wait_for("registered", timeout_s=5)
    voice = chirp(6.0, 300, 3400, amplitude=6000)
    wav = write_wav(tmp_path / "caller.wav", voice)
    # The caller is a phone of this PBX: its address is at Kamailio, so "operator" means the PBX's extension.
    run, recordings = await peers.baresip_call(
        f"sip:agent@{LOCAL}:{kamailio.port}", wav, seconds=25, aor=f"sip:caller@{LOCAL}:{kamailio.port}", calls=2
    )
    await asyncio.sleep(0.3)
    assert transfers == [True], f"{kamailio.log[-3000:]}\n{run.report()}"
    assert agent_calls[0].end_reason == "transferred"
    assert len(operator.calls) == 1, run.report()
    call = operator.calls[0]
    assert (call.caller, call.called) == ("caller", "operator")
    assert f"Call established: sip:operator@{LOCAL}:{kamailio.port}" in run.stdout, run.report()
    assert call.call_id != agent_calls[0].call_id  # baresip's new INVITE, not our dialog
    # both INVITEs went through Kamailio, the second to the operator's registered Contact
    assert f"to=sip:agent@{LOCAL}:{agent_endpoint.local_address[1]}" in kamailio.log
    assert f"to=sip:operator@{LOCAL}:{operator_endpoint.local_address[1]}" in kamailio.log
    assert agent_calls[0].headers["Record-Route"].startswith(f"<sip:{LOCAL}:{kamailio.port}")  # REFER took that path
    # audio both ways on the transferred call: baresip starts its WAV again for the new call
    heard = operator.audio()
    correlation, _ = best_lag_correlation(heard, voice)
    assert len(heard) >= 4 * 8000 and correlation >= 0.95, f"operator heard {len(heard)} samples, r={correlation:.3f}"
    decoded = sorted(recordings.glob("dump-*-dec.wav"))[-1]  # the last call's: the operator's
    correlation, _ = best_lag_correlation(read_wav(decoded)[0], greeting)
    assert correlation >= 0.95, f"baresip heard the operator with r={correlation:.3f}"


async def _registered_behind_an_operator_proxy(start_kamailio, start_endpoint, on_call=None):
    """Kamailio routes in-dialog requests by their Route only (loose_route, else 404), as operators run it.
    The sipp caller sends no RTP: the no-media timeout is off, so only signalling can end the call."""
    kamailio = await start_kamailio({"agent": "s3cret"}, relookup=False)
    endpoint = await start_endpoint(
        on_call, registration=extension(kamailio, "agent", "s3cret"), no_media_timeout_s=None
    )
    assert endpoint.registration is not None
    await endpoint.registration.wait_for("registered", timeout_s=5)
    return kamailio, endpoint


@pytest.mark.timeout(90)
async def test_a_call_through_a_record_routing_proxy_outlives_the_ack_timeout_and_the_caller_hangs_up(
    start_kamailio, start_endpoint, peers: Peers
) -> None:
    recorder = Recorder()
    kamailio, endpoint = await _registered_behind_an_operator_proxy(start_kamailio, start_endpoint, recorder)
    # 33.5 s: past the 64*T1 = 32 s after which an unacknowledged 200 ends the call
    run = await peers.sipp(
        ("127.0.0.1", kamailio.port), "record_route.xml", timeout_s=50, extra=("-s", "agent", "-d", "33500")
    )
    assert_sipp_ok(run)
    await asyncio.sleep(0.2)
    call = recorder.calls[0]
    assert call.end_reason == "remote_hangup", f"{call.end_reason}\n{kamailio.log[-3000:]}"
    assert call.answered_at is not None and call.ended_at is not None
    assert call.ended_at - call.answered_at >= 33.0
    assert endpoint.metrics.ack_timeouts == 0
    assert "event=kamailio_loose_route method=ACK" in kamailio.log
    assert "event=kamailio_loose_route method=BYE" in kamailio.log
    assert "event=kamailio_in_dialog_refused" not in kamailio.log


async def test_our_bye_reaches_the_caller_through_the_record_routing_proxy(
    start_kamailio, start_endpoint, peers: Peers
) -> None:
    ended = []

    async def hang_up_soon(call) -> None:
        await asyncio.sleep(1.0)
        await call.hangup()
        ended.append(call)

    kamailio, _endpoint = await _registered_behind_an_operator_proxy(start_kamailio, start_endpoint, hang_up_soon)
    run = await peers.sipp(
        ("127.0.0.1", kamailio.port), "record_route_bye_from_us.xml", timeout_s=15, extra=("-s", "agent")
    )
    assert_sipp_ok(run)
    assert ended and ended[0].end_reason == "local_hangup"
    # our BYE carried the route set: Kamailio forwarded it by its Route header to the caller
    assert "event=kamailio_loose_route method=BYE" in kamailio.log, kamailio.log[-3000:]
    assert "event=kamailio_in_dialog_refused" not in kamailio.log
