"""Registration against a scripted registrar (a plain UDP socket answering by hand): the answers Kamailio
does not give on demand — outages, 423, odd expiries, challenges we cannot answer — and the config checks."""

from __future__ import annotations

import asyncio

import pytest

from harness.peers import LOCAL, SipPeer
from telephony.endpoint import EndpointConfig
from telephony.sip.auth import verify
from telephony.sip.message import Request
from telephony.sip.registration import RegistrationConfig, backoff
from telephony.sip.transaction import Timers

pytestmark = pytest.mark.timeout(30)


def answer(request: Request, status: int, reason: str, *headers: str) -> str:
    names = ("Via", "From", "To", "Call-ID", "CSeq")
    copied = [f"{name}: {request.headers.get(name)}" for name in names]
    return "\r\n".join([f"SIP/2.0 {status} {reason}", *copied, *headers, "Content-Length: 0", "", ""])


FAST = Timers(t1=0.05, t2=0.2)  # a silent registrar at teardown costs 8*T1, not 4 s


def registration(peer: SipPeer, **options) -> RegistrationConfig:
    return RegistrationConfig(
        f"sip:{LOCAL}:{peer.port}", "agent", "s3cret", retry_min_s=0.1, retry_max_s=0.2, **options
    )


async def test_an_outage_is_retried_until_the_registrar_answers(start_endpoint, sip_peer) -> None:
    registrar = await sip_peer()
    endpoint = await start_endpoint(registration=registration(registrar, domain="pbx.example.com"), timers=FAST)
    assert endpoint.registration is not None
    first = await registrar.request("REGISTER")
    assert str(first.uri) == f"sip:{LOCAL}:{registrar.port}" and first.to.uri.host == "pbx.example.com"
    assert first.headers.get("Expires") == "300"
    registrar.send(answer(first, 503, "Service Unavailable"), first.vias[0].port)
    status = await endpoint.registration.wait_for("failing", timeout_s=3)
    assert status.last_error is not None and status.last_error.startswith("503 Service Unavailable")
    retry = await registrar.request("REGISTER", timeout=3)  # after the backoff, in the same Call-ID
    assert retry.call_id == first.call_id and retry.cseq[0] > first.cseq[0]
    contact = f"<sip:agent@{LOCAL}:{endpoint.local_address[1]}>"
    registrar.send(
        answer(
            retry,
            200,
            "OK",
            "Contact: <sip:other@192.0.2.9>;expires=5",
            f"Contact: {contact};expires=77",
            "Expires: 3600",
        ),
        retry.vias[0].port,
    )
    status = await endpoint.registration.wait_for("registered", timeout_s=3)
    assert status.expires_s == 77  # our binding's expiry, not another one's nor the Expires header
    assert status.failures == 0 and status.registrations == 1 and endpoint.metrics.registration_failures == 1


async def test_a_challenge_is_answered_and_423_raises_the_interval(start_endpoint, sip_peer) -> None:
    registrar = await sip_peer()
    endpoint = await start_endpoint(registration=registration(registrar, expires=30), timers=FAST)
    assert endpoint.registration is not None
    request = await registrar.request("REGISTER")
    challenge = 'Digest realm="pbx", nonce="abc123", algorithm=SHA-256, qop="auth"'
    registrar.send(
        answer(
            request,
            401,
            "Unauthorized",
            'WWW-Authenticate: Digest realm="pbx", nonce="x1"',
            f"WWW-Authenticate: {challenge}",
        ),
        request.vias[0].port,
    )
    request = await registrar.request("REGISTER")
    credentials = request.headers.get("Authorization") or ""
    assert "algorithm=SHA-256" in credentials, "the stronger of the two challenges is answered"
    assert verify(credentials, "REGISTER", "s3cret", "pbx")
    registrar.send(answer(request, 423, "Interval Too Brief", "Min-Expires: 120"), request.vias[0].port)
    request = await registrar.request("REGISTER")
    assert request.headers.get("Expires") == "120"
    registrar.send(answer(request, 200, "OK"), request.vias[0].port)
    status = await endpoint.registration.wait_for("registered", timeout_s=3)
    assert status.expires_s == 120  # no Contact in the 200: the Expires we asked for


@pytest.mark.parametrize(
    "challenge,expected",
    [
        ('Digest realm="pbx", nonce="n", qop="auth-int"', "without a digest challenge we can answer"),
        ('Digest realm="pbx", nonce="n", algorithm=SHA-1', "without a digest challenge we can answer"),
        ('Basic realm="pbx"', "without a digest challenge we can answer"),
    ],
)
async def test_an_unanswerable_challenge_fails_clearly(start_endpoint, sip_peer, challenge: str, expected: str) -> None:
    registrar = await sip_peer()
    endpoint = await start_endpoint(registration=registration(registrar))
    assert endpoint.registration is not None
    request = await registrar.request("REGISTER")
    registrar.send(
        answer(request, 407, "Proxy Authentication Required", f"Proxy-Authenticate: {challenge}"), request.vias[0].port
    )
    status = await endpoint.registration.wait_for("failing", timeout_s=3)
    assert expected in (status.last_error or "") and "407" in (status.last_error or "")


async def test_a_silent_registrar_times_out_and_stop_does_not_hang(start_endpoint, sip_peer) -> None:
    registrar = await sip_peer()
    endpoint = await start_endpoint(registration=registration(registrar), timers=Timers(t1=0.02, t2=0.08))
    assert endpoint.registration is not None
    status = await endpoint.registration.wait_for("failing", timeout_s=5)
    assert "no answer from" in (status.last_error or "") and "408" in (status.last_error or "")
    sent = [m for m in registrar.received if isinstance(m, Request)]
    assert len(sent) >= 3 and len({m.cseq[0] for m in sent}) == 1  # retransmissions of the one REGISTER
    await endpoint.stop(0.2)
    assert endpoint.registration.status.state == "unregistered"
    assert [m for m in registrar.received if isinstance(m, Request) and m.headers.get("Expires") == "0"] == []


async def test_stop_removes_the_binding_with_expires_zero(start_endpoint, sip_peer) -> None:
    registrar = await sip_peer()
    endpoint = await start_endpoint(
        registration=registration(registrar, outbound_proxy=f"sip:{LOCAL}:{registrar.port}")
    )
    assert endpoint.registration is not None
    request = await registrar.request("REGISTER")
    assert request.headers.get("Route") == f"<sip:{LOCAL}:{registrar.port};lr>"
    registrar.send(answer(request, 200, "OK"), request.vias[0].port)
    await endpoint.registration.wait_for("registered", timeout_s=3)
    stopping = asyncio.create_task(endpoint.stop(0.2))
    removal = await registrar.request("REGISTER")
    assert removal.headers.get("Expires") == "0" and removal.call_id == request.call_id
    assert removal.headers.get("Contact") == request.headers.get("Contact")
    registrar.send(answer(removal, 200, "OK"), removal.vias[0].port)
    await asyncio.wait_for(stopping, 3)
    assert endpoint.registration.status.state == "unregistered"


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    for failures, ceiling in [(1, 2.0), (2, 4.0), (3, 8.0), (6, 60.0), (50, 60.0)]:
        delays = [backoff(failures, 2.0, 60.0) for _ in range(200)]
        assert ceiling / 2 <= min(delays) and max(delays) <= ceiling
        assert len(set(delays)) > 100  # jittered, not one fixed value


@pytest.mark.parametrize(
    "options,message",
    [
        ({"registrar": "pbx.example.com"}, "must be a SIP URI"),
        ({"registrar": "sip:100@pbx.example.com"}, "no user part"),
        ({"registrar": "sip:pbx.example.com;transport=sctp"}, "transport=tcp|tls"),
        ({"username": "a b"}, "not a valid SIP user part"),
        ({"expires": 0}, "expires must be"),
        ({"retry_min_s": 10, "retry_max_s": 1}, "retry_min_s <= retry_max_s"),
        ({"outbound_proxy": "proxy:5060"}, "outbound_proxy must be"),
    ],
)
def test_bad_registration_config_says_what_to_fix(options: dict, message: str) -> None:
    arguments = {"registrar": "sip:pbx.example.com", "username": "100", "password": "x"} | options
    with pytest.raises(ValueError, match=message):
        RegistrationConfig(**arguments)
    with pytest.raises(ValueError, match="RegistrationConfig"):
        EndpointConfig(registration="sip:pbx.example.com")  # type: ignore[arg-type]
