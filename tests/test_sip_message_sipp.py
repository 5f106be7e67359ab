"""The message layer against a real peer: sipp (Debian sip-tester) on 127.0.0.1.

A minimal responder built only from parse_message / validate_request / make_response answers
sipp's built-in `uac` call (INVITE, ACK, BYE) and a REGISTER that sipp authenticates with digest.
sipp exits 0 only when every response it got was well formed and matched its transaction.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from telephony.sip.auth import Challenge, verify
from telephony.sip.message import Request, Response, make_response, new_tag, parse_message, validate_request

pytestmark = pytest.mark.skipif(shutil.which("sipp") is None, reason="sipp (apt sip-tester) is not installed")

REGISTER_SCENARIO = """<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="register with digest">
  <send retrans="500"><![CDATA[
REGISTER sip:[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:alice@[remote_ip]>;tag=[pid]SIPpTag00[call_number]
To: <sip:alice@[remote_ip]>
Call-ID: [call_id]
CSeq: 1 REGISTER
Contact: <sip:alice@[local_ip]:[local_port]>
Max-Forwards: 70
Expires: 60
Content-Length: 0

]]></send>
  <recv response="401" auth="true"/>
  <send retrans="500"><![CDATA[
REGISTER sip:[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:alice@[remote_ip]>;tag=[pid]SIPpTag00[call_number]
To: <sip:alice@[remote_ip]>
Call-ID: [call_id]
CSeq: 2 REGISTER
Contact: <sip:alice@[local_ip]:[local_port]>
[authentication username=alice password=s3cret]
Max-Forwards: 70
Expires: 60
Content-Length: 0

]]></send>
  <recv response="200"/>
</scenario>
"""


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def responder() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    yield sock
    sock.close()


def _run_sipp(
    sock: socket.socket, args: list[str], handle: Callable[[Request], list[Response]], cwd: Path
) -> list[Request]:
    """Runs sipp against `sock`, answering each request with `handle`; returns what sipp sent."""
    port = sock.getsockname()[1]
    command = [
        "sipp",
        f"127.0.0.1:{port}",
        "-i",
        "127.0.0.1",
        "-p",
        str(_free_udp_port()),
        "-mp",
        str(_free_udp_port()),
        "-m",
        "1",
        "-nostdin",
        "-timeout",
        "10s",
        "-timeout_error",
        *args,
    ]
    received: list[Request] = []
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while process.poll() is None and time.monotonic() < deadline:
            try:
                data, peer = sock.recvfrom(65535)
            except TimeoutError:
                continue
            request = parse_message(data)
            assert isinstance(request, Request)
            validate_request(request)
            received.append(request)
            for response in handle(request):
                sock.sendto(response.to_bytes(), peer)
        assert process.wait(timeout=5) == 0, process.stderr.read().decode() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        if process.stderr:
            process.stderr.close()
    return received


def test_sipp_uac_call_is_answered(responder: socket.socket, tmp_path: Path) -> None:
    tag = new_tag()
    port = responder.getsockname()[1]

    def handle(request: Request) -> list[Response]:
        if request.method == "INVITE":
            contact = {"Contact": f"<sip:voiceswarm@127.0.0.1:{port}>"}
            return [
                make_response(request, 100),
                make_response(request, 180, to_tag=tag),
                make_response(request, 200, to_tag=tag, headers=contact),
            ]
        return [] if request.method == "ACK" else [make_response(request, 200, to_tag=tag)]

    received = _run_sipp(responder, ["-sn", "uac"], handle, tmp_path)
    methods = [r.method for r in received]
    assert methods[0] == "INVITE" and methods[-2:] == ["ACK", "BYE"] and set(methods) == {"INVITE", "ACK", "BYE"}
    invite, bye = received[0], received[-1]
    assert invite.from_.tag and invite.vias[0].branch.startswith("z9hG4bK")  # type: ignore[union-attr]
    assert invite.content_type == "application/sdp" and invite.body.startswith(b"v=0")
    assert bye.call_id == invite.call_id and bye.to.tag == tag  # sipp read our To tag back
    assert bye.cseq[0] > invite.cseq[0]


def test_sipp_register_digest_is_verified(responder: socket.socket, tmp_path: Path) -> None:
    (tmp_path / "register.xml").write_text(REGISTER_SCENARIO)
    challenge = 'Digest realm="voiceswarm", nonce="5f2b9c0e41d7", qop="auth", algorithm=MD5, opaque="x9"'
    verdicts: list[bool] = []

    def handle(request: Request) -> list[Response]:
        authorization = request.headers.get("Authorization")
        if authorization is None:
            return [make_response(request, 401, to_tag=new_tag(), headers={"WWW-Authenticate": challenge})]
        verdicts.append(verify(authorization, "REGISTER", "s3cret", "voiceswarm"))
        verdicts.append(verify(authorization, "REGISTER", "wrong", "voiceswarm"))
        return [make_response(request, 200 if verdicts[0] else 403, to_tag=new_tag())]

    received = _run_sipp(responder, ["-sf", "register.xml"], handle, tmp_path)
    assert [r.cseq for r in received[-2:]] == [(1, "REGISTER"), (2, "REGISTER")]
    assert verdicts == [True, False]
    assert Challenge.parse(challenge).opaque == "x9"
