"""SIP over TCP and TLS against real peers on 127.0.0.1: sipp over TCP (-t t1; Debian's sipp is built without
OpenSSL, so it cannot do -t l1), baresip over TLS checking our certificate, and two endpoints dialling each
other with sips: and ;transport=tcp."""

from __future__ import annotations

import asyncio
import re
import shutil

import numpy as np
import pytest

from harness.certs import CertFiles
from harness.peers import LOCAL, SIPP_SCENARIOS, Peers, best_lag_correlation, chirp, read_wav, write_wav
from telephony.sip.tls import TlsConfig

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
    scenario.write_text(
        (SIPP_SCENARIOS / "bye_from_us.xml")
        .read_text()
        .replace("<sip:sipp@[local_ip]:[local_port]>", "<sip:sipp@[local_ip]:[local_port];transport=tcp>")
    )
    run = await peers.sipp(endpoint.address("TCP"), str(scenario), extra=("-t", "t1"), timeout_s=20)
    assert run.returncode == 0 and run.successful == 1, run.report()
    bye = sipp_messages(run, "BYE ")
    assert len(bye) == 1 and "Via: SIP/2.0/TCP" in bye[0], run.report()
    assert endpoint._streams[0].connections <= 1


async def test_baresip_calls_over_tls_and_hears_itself(
    start_endpoint, peers: Peers, certs: CertFiles, tmp_path
) -> None:
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
    run, recordings = await peers.baresip_call(
        f"sip:echo@{host}:{port};transport=tls", wav, seconds=20, cafile=certs.ca
    )
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


async def test_we_dial_a_sips_uri_over_tls_and_its_bye_comes_back_on_our_connection(
    start_endpoint, certs: CertFiles
) -> None:
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


# ---- configuration ---------------------------------------------------------------------------------------------


def _sip_config(tmp_path, **keys: str):
    from callcenter.config import load_config

    path = tmp_path / "voiceswarm.toml"
    path.write_text("[sip]\n" + "".join(f'{key} = "{value}"\n' for key, value in keys.items()))
    return load_config(path, environ={})


def test_config_maps_tcp_and_tls_onto_the_endpoint(tmp_path, certs: CertFiles) -> None:
    from callcenter.config import endpoint_config

    config = _sip_config(
        tmp_path,
        listen_tcp="127.0.0.1:5060",
        listen_tls="[::1]:5061",
        tls_cert=str(certs.cert),
        tls_key=str(certs.key),
        tls_ca=str(certs.ca),
    )
    endpoint = endpoint_config(config.sip)
    assert endpoint.listen_tcp == ("127.0.0.1", 5060) and endpoint.listen_tls == ("::1", 5061)
    assert endpoint.tls == TlsConfig(str(certs.cert), str(certs.key), str(certs.ca))


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"listen_tls": "127.0.0.1:5061"}, "sip.listen_tls needs sip.tls_cert and sip.tls_key"),
        ({"listen_tls": "127.0.0.1:5061", "tls_cert": "CERT"}, "both sip.tls_cert and sip.tls_key"),
        ({"listen_tls": "127.0.0.1:5061", "tls_cert": "/no/such.pem", "tls_key": "KEY"}, "/no/such.pem: No such file"),
        (
            {"listen_tls": "127.0.0.1:5061", "tls_cert": "CERT", "tls_key": "OTHER_KEY"},
            "does not belong to the certificate",
        ),
        ({"listen_tls": "127.0.0.1:5061", "tls_cert": "KEY", "tls_key": "KEY"}, "holds no PEM certificate"),
        ({"listen_tcp": "pbx.example.com:5060"}, "sip.listen_tcp must be an IP address"),
        ({"listen_tcp": "5060"}, "sip.listen_tcp is '5060'; write HOST:PORT"),
    ],
)
def test_a_bad_tls_or_tcp_setting_is_a_config_error_naming_it(
    tmp_path, certs: CertFiles, keys: dict, message: str
) -> None:
    from callcenter.config import ConfigError

    files = {"CERT": str(certs.cert), "KEY": str(certs.key)}
    if "OTHER_KEY" in keys.values():
        from harness.certs import make_certs

        files["OTHER_KEY"] = str(make_certs(tmp_path / "other").key)
    with pytest.raises(ConfigError, match=re.escape(message)):
        _sip_config(tmp_path, **{key: files.get(value, value) for key, value in keys.items()})


async def test_voiceswarm_echo_answers_sipp_over_tcp(peers: Peers) -> None:
    import os
    import signal
    import sys
    from pathlib import Path

    from harness.peers import free_sip_port

    port = free_sip_port()
    code = (
        "import callcenter.cli as c, sys; c.COMMAND_MODULES = ('callcenter.commands.echo',); "
        "sys.exit(c.main(sys.argv[1:]))"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        "echo",
        "--listen",
        f"{LOCAL}:{port}",
        "--listen-tcp",
        f"{LOCAL}:{port}",
        "--rtp-ports",
        "51000-51999",
        cwd=Path(__file__).resolve().parent.parent,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 15)).decode()
        assert f"{LOCAL}:{port} (SIP/TCP)" in line, line
        run = await peers.sipp((LOCAL, port), "uac", calls=2, rate=2, limit=2, extra=("-t", "t1"))
        assert run.returncode == 0 and run.successful == 2, run.report()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        output = (await asyncio.wait_for(process.communicate(), 15))[0].decode()
    assert output.count("ended (remote_hangup)") == 2, output


def test_voiceswarm_echo_refuses_a_bad_certificate_with_a_message(tmp_path, certs: CertFiles, capsys) -> None:
    from callcenter.commands import echo
    from tests.test_echo_command import echo_args

    args = echo_args(
        "--listen",
        f"{LOCAL}:0",
        "--listen-tls",
        f"{LOCAL}:0",
        "--tls-cert",
        str(certs.key),
        "--tls-key",
        str(certs.key),
    )
    assert echo.run(args) == 2
    assert f"voiceswarm echo: TLS certificate {certs.key} holds no PEM certificate" in capsys.readouterr().err
