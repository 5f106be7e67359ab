"""SIP over TCP and TLS against real peers on 127.0.0.1: sipp over TCP (-t t1; Debian's sipp is built without
OpenSSL, so it cannot do -t l1), baresip over TLS checking our certificate, and two endpoints dialling each
other with sips: and ;transport=tcp."""
from __future__ import annotations

import asyncio
import re
import shutil

import numpy as np
import pytest

from telephony.sip.tls import TlsConfig
from tests.certs import CertFiles, certs  # noqa: F401  (fixture)
from tests.peers import (  # noqa: F401  (fixtures)
    LOCAL,
    SIPP_SCENARIOS,
    Peers,
    best_lag_correlation,
    chirp,
    peers,
    read_wav,
    start_endpoint,
    write_wav,
)

pytestmark = pytest.mark.timeout(90)


def tls_options(certs: CertFiles) -> dict:
    return {"listen_tls": (LOCAL, 0), "tls": TlsConfig(str(certs.cert), str(certs.key), str(certs.ca))}


def sipp_messages(run, first_line: str) -> list[str]:
    """The messages sipp received that start with `first_line`."""
    blocks = re.split(r"(?:TCP|UDP|TLS) message received \[\d+\] bytes :", run.logs.get("messages.log", ""))[1:]
    return [block.split("\n----", 1)[0].strip() for block in blocks if block.lstrip().startswith(first_line)]


async def test_sipp_over_tcp_places_calls_that_end_with_its_bye(start_endpoint, peers: Peers) -> None:
    endpoint = await start_endpoint(listen_tcp=(LOCAL, 0))
    run = await peers.sipp(endpoint.address("TCP"), "uac", calls=3, rate=3, limit=3, extra=("-t", "t1"))
    assert run.returncode == 0 and run.successful == 3 and run.failed == 0, run.report()
    await asyncio.sleep(0.2)
    metrics = endpoint.metrics
    assert (metrics.calls_answered, metrics.calls_ended, metrics.calls_active) == (3, 3, 0)
    assert metrics.malformed == metrics.bad_requests == metrics.internal_errors == metrics.retransmissions == 0
    ok = sipp_messages(run, "SIP/2.0 200 OK")
    invite_ok = [message for message in ok if "CSeq: 1 INVITE" in message]
    assert len(invite_ok) == 3 and len(ok) == 6  # the INVITEs' and the BYEs', each exactly once: nothing resent
    port = endpoint.address("TCP")[1]
    assert f"<sip:voiceswarm@127.0.0.1:{port};transport=tcp>" in invite_ok[0], invite_ok[0]
    assert "Via: SIP/2.0/TCP" in invite_ok[0]
    assert endpoint._udp.metrics.datagrams_sent == metrics.datagrams_sent  # one counter: all went over TCP
    assert len(endpoint._streams[0]._connections) <= 1  # sipp -t t1: one connection for all calls


async def test_our_bye_reaches_a_tcp_caller_on_its_connection(start_endpoint, peers: Peers, tmp_path) -> None:
    async def hang_up_soon(call) -> None:
        await asyncio.sleep(0.5)

    endpoint = await start_endpoint(hang_up_soon, listen_tcp=(LOCAL, 0))
    scenario = tmp_path / "bye_from_us_tcp.xml"  # the caller's Contact says TCP, as a TCP phone's does
    scenario.write_text((SIPP_SCENARIOS / "bye_from_us.xml").read_text().replace(
        "<sip:sipp@[local_ip]:[local_port]>", "<sip:sipp@[local_ip]:[local_port];transport=tcp>"))
    run = await peers.sipp(endpoint.address("TCP"), str(scenario), extra=("-t", "t1"), timeout_s=20)
    assert run.returncode == 0 and run.successful == 1, run.report()
    bye = sipp_messages(run, "BYE ")
    assert len(bye) == 1 and "Via: SIP/2.0/TCP" in bye[0], run.report()
    assert endpoint._streams[0].connections <= 1


async def test_baresip_calls_over_tls_and_hears_itself(start_endpoint, peers: Peers, certs: CertFiles,
                                                       tmp_path) -> None:
    if shutil.which("baresip") is None:
        pytest.skip("apt-get install baresip-core")
    heard: list[np.ndarray] = []

    async def echo(call) -> None:
        async for frame in call.audio_in:
            heard.append(frame)
            call.play(frame)

    endpoint = await start_endpoint(echo, **tls_options(certs))
    host, port = endpoint.address("TLS")
    speech = chirp(4.0, 300, 3000)
    wav = write_wav(tmp_path / "caller.wav", speech)
    run, recordings = await peers.baresip_call(f"sip:echo@{host}:{port};transport=tls", wav, seconds=20,
                                               cafile=certs.ca)
    await asyncio.sleep(0.3)
    assert endpoint.metrics.calls_answered == 1 and endpoint.metrics.calls_ended == 1, run.report()
    assert endpoint.metrics.internal_errors == 0
    correlation, _ = best_lag_correlation(np.concatenate(heard), speech)
    assert correlation >= 0.95, f"we heard baresip with correlation {correlation:.3f}\n{run.report()}"
    decoded = sorted(recordings.glob("*dec*.wav"))
    assert decoded, run.report()
    theirs, _ = read_wav(decoded[0])
    # It hangs up when its WAV ends, so the echo of the last moments never reaches it: compare the first 3 s.
    correlation, _ = best_lag_correlation(theirs, speech[: 3 * 8000])
    assert correlation >= 0.9, f"baresip heard its echo with correlation {correlation:.3f}\n{run.report()}"


async def test_we_dial_a_sips_uri_over_tls_and_its_bye_comes_back_on_our_connection(start_endpoint,
                                                                                    certs: CertFiles) -> None:
    answered: list = []

    async def callee(call) -> None:
        answered.append(call)
        await asyncio.sleep(0.3)  # then the endpoint hangs up: a BYE from the callee to us

    server = await start_endpoint(callee, **tls_options(certs))
    client = await start_endpoint(**tls_options(certs))
    host, port = server.address("TLS")
    call = await client.dial(f"sips:echo@{host}:{port}", timeout_s=5)
    assert call.dialog.remote_target.scheme == "sips"  # the callee's Contact, as RFC 5630 wants for sips:
    await asyncio.wait_for(call.closed.wait(), 5)
    assert call.end_reason == "remote_hangup"
    assert answered and answered[0].headers["Contact"].startswith("<sips:")
    # one connection, opened by us, carried the INVITE, the ACK, the callee's BYE and every response
    assert client._streams[0].connections == 1 and server._streams[0].connections == 1
    assert client.metrics.retransmissions == server.metrics.retransmissions == 0


async def test_dialling_tcp_to_nobody_fails_at_once_not_after_timer_b(start_endpoint) -> None:
    client = await start_endpoint(listen_tcp=(LOCAL, 0))
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(Exception) as caught:
        await client.dial(f"sip:nobody@{LOCAL}:9;transport=tcp", timeout_s=10)
    assert getattr(caught.value, "status", None) == 503, caught.value
    assert loop.time() - started < 2


async def test_dialling_sips_without_a_tls_transport_says_what_to_configure(start_endpoint) -> None:
    client = await start_endpoint()
    with pytest.raises(ValueError, match="listen_tls"):
        await client.dial(f"sips:echo@{LOCAL}:5061")
