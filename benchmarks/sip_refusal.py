"""What a refused request costs us and the sender: datagrams and bytes sent back for one request.

A SIP endpoint on the internet is sent INVITEs from forged sources (the "victim" then gets our answers): a
stateful refusal (100 Trying, then a 403 retransmitted until timer H) multiplies what the attacker sends.
For each kind of refusal, one request goes to a SipEndpoint on 127.0.0.1 and everything that comes back
within 35 s (past timer H at the default T1 = 0.5 s) is counted; the target is one response, no bigger
than the request (amplification <= 1).

Usage: .venv/bin/python benchmarks/sip_refusal.py [--wait 35]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telephony.endpoint import EndpointConfig, SipEndpoint

LOCAL = "127.0.0.1"
SDP = (
    f"v=0\r\no=peer 1 1 IN IP4 {LOCAL}\r\ns=-\r\nc=IN IP4 {LOCAL}\r\nt=0 0\r\n"
    "m=audio 4000 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n"
)


class Counter(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.datagrams: list[bytes] = []

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.datagrams.append(data)


def invite(port: int, target_port: int, *, uri: str | None = None, extra: str = "") -> bytes:
    uri = uri or f"sip:shop@{LOCAL}:{target_port}"
    lines = [
        f"INVITE {uri} SIP/2.0",
        f"Via: SIP/2.0/UDP {LOCAL}:{port};branch=z9hG4bK{secrets.token_hex(6)};rport",
        f"From: <sip:scanner@{LOCAL}>;tag={secrets.token_hex(4)}",
        f"To: <sip:shop@{LOCAL}>",
        f"Call-ID: {secrets.token_hex(8)}",
        "CSeq: 1 INVITE",
        f"Contact: <sip:scanner@{LOCAL}:{port}>",
        "Max-Forwards: 70",
        *([extra] if extra else []),
        "Content-Type: application/sdp",
        f"Content-Length: {len(SDP)}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n" + SDP).encode()


CASES: list[tuple[str, dict, Callable[[int, int], bytes]]] = [
    ("403 source not allowed", {"allowed_sources": ("10.0.0.0/8",)}, invite),
    ("503 rate limit", {"invite_rate": 0.001, "invite_burst": 1}, invite),
    ("416 unknown URI scheme", {}, lambda p, t: invite(p, t, uri="nobodyKnowsThisScheme:opaque")),
    ("420 Require", {}, lambda p, t: invite(p, t, extra="Require: nothingSupportsThis")),
    ("406 Accept", {}, lambda p, t: invite(p, t, extra="Accept: text/nobodyKnowsThis")),
]


async def measure(options: dict, build: Callable[[int, int], bytes], wait_s: float) -> tuple[int, int, int]:
    async def hang_up(call) -> None:
        await call.hangup()

    endpoint = SipEndpoint(EndpointConfig(listen_host=LOCAL, listen_port=0, **options), hang_up)
    await endpoint.start()
    loop = asyncio.get_running_loop()
    transport, counter = await loop.create_datagram_endpoint(Counter, local_addr=(LOCAL, 0))
    port, target = transport.get_extra_info("sockname")[1], endpoint.local_address[1]
    try:
        if "invite_burst" in options:  # spend the one INVITE the burst allows, from another port of the host
            spender, _ = await loop.create_datagram_endpoint(Counter, local_addr=(LOCAL, 0))
            spender.sendto(invite(spender.get_extra_info("sockname")[1], target), (LOCAL, target))
            await asyncio.sleep(0.5)
            spender.close()
        request = build(port, target)
        transport.sendto(request, (LOCAL, target))
        await asyncio.sleep(wait_s)
        return len(request), len(counter.datagrams), sum(map(len, counter.datagrams))
    finally:
        transport.close()
        await endpoint.stop(0.5)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wait", type=float, default=35.0, help="seconds to count responses (timer H is 32 s)")
    args = parser.parse_args()
    results = await asyncio.gather(*(measure(options, build, args.wait) for _, options, build in CASES))
    print(f"{'refusal':<26} {'request B':>9} {'datagrams':>9} {'bytes back':>10} {'amplification':>13}")
    for (name, _, _), (sent, datagrams, received) in zip(CASES, results, strict=True):
        print(f"{name:<26} {sent:>9} {datagrams:>9} {received:>10} {received / sent:>13.2f}")


if __name__ == "__main__":
    asyncio.run(main())
