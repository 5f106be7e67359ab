"""Drain and admission: what a node answers the dispatcher's OPTIONS probes and new INVITEs in each state."""

from __future__ import annotations

import pytest

from callcenter.node import AdmissionLimits, NodeState
from harness.peers import sdp_offer, sip_request


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.cpu = 0.0


def node(
    limits: AdmissionLimits,
    calls: int = 0,
    stt: tuple[float, ...] = (),
    clock: Clock | None = None,
    draining: bool = False,
) -> NodeState:
    clock = clock or Clock()
    return NodeState(
        limits,
        lambda: calls,
        lambda: stt,
        lambda: draining,
        clock=lambda: clock.now,
        cpu_clock=lambda: clock.cpu,
        cores=2,
    )


def test_no_limit_is_on_by_default() -> None:
    state = node(AdmissionLimits(), calls=500, stt=(9.0,))
    assert state.admission() is None and state.state == "serving"


@pytest.mark.parametrize(
    ("limits", "calls", "stt", "reason"),
    [
        (AdmissionLimits(max_active_calls=4), 4, (), "4 calls (limit 4)"),
        (AdmissionLimits(max_stt_delay_s=1.5), 0, (0.5, 2.0, 2.5), "speech-to-text 2.00 s (limit 1.5 s)"),
    ],
)
def test_over_a_limit_new_calls_are_refused_with_retry_after(
    limits: AdmissionLimits, calls: int, stt: tuple[float, ...], reason: str
) -> None:
    state = node(limits, calls=calls, stt=stt)
    assert state.overload() == reason
    assert state.admission() == 30.0 and state.state == "overloaded" and state.refusals == 1
    assert node(limits, calls=calls - 1 if calls else 0, stt=stt[:1]).admission() is None


def test_cpu_is_measured_over_a_window_of_the_whole_machine() -> None:
    clock = Clock()
    state = node(AdmissionLimits(max_cpu_percent=80), clock=clock)
    clock.now, clock.cpu = 1.0, 2.0  # too short a window: no new sample yet
    assert state.cpu_percent() == 0.0
    clock.now, clock.cpu = 2.0, 3.4  # 3.4 s of CPU in 2 s on 2 cores
    assert state.cpu_percent() == pytest.approx(85.0)
    assert state.overload() == "CPU 85% (limit 80%)"
    clock.now, clock.cpu = 4.0, 4.0  # 0.6 s in the next 2 s
    assert state.admission() is None


def test_draining_wins_over_everything() -> None:
    assert node(AdmissionLimits(max_active_calls=1), calls=5, draining=True).state == "draining"
    assert node(AdmissionLimits(), draining=True).health()["state"] == "draining"


async def options(peer, endpoint_port: int, branch: str):  # the SipPeer fixture's object
    peer.send(sip_request("OPTIONS", peer.port, endpoint_port, call_id=f"probe-{branch}", branch=branch), endpoint_port)
    return await peer.expect(lambda message: getattr(message, "status", None) is not None)


async def test_the_endpoint_answers_503_with_retry_after_when_overloaded_and_when_draining(
    start_endpoint, sip_peer
) -> None:
    endpoint = await start_endpoint()
    port = endpoint.local_address[1]
    peer = await sip_peer()
    assert (await options(peer, port, "a")).status == 200
    overloaded = [True]
    endpoint.admission = lambda: 12.0 if overloaded[0] else None
    probe = await options(peer, port, "b")
    assert (probe.status, probe.headers.get("Retry-After")) == (503, "12")
    peer.send(sip_request("INVITE", peer.port, port, call_id="refused", branch="c", body=sdp_offer(40000)), port)
    refused = await peer.expect(lambda m: getattr(m, "status", 0) >= 200)
    assert (refused.status, refused.headers.get("Retry-After")) == (503, "12")
    assert endpoint.calls == []
    overloaded[0] = False
    assert (await options(peer, port, "d")).status == 200  # back under the limits: used again
    endpoint.drain()
    probe = await options(peer, port, "e")
    assert probe.status == 503 and "shutting down" in probe.reason
