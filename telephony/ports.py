"""An even RTP port and the RTCP port above it (RFC 3550 11), bound from a configurable range."""

from __future__ import annotations

import errno
import random
import socket

from telephony.errors import TelephonyError


class PortRangeExhausted(TelephonyError, RuntimeError):
    """Every even port pair in the RTP range is taken."""


def allocate(host: str, port_range: tuple[int, int]) -> tuple[socket.socket, socket.socket]:
    """Bind UDP sockets on an even port P and P+1 within port_range (inclusive), starting at a random pair.

    A random start keeps a port just freed by one call from going to the next, where the old peer's
    late packets would land.
    """
    low, high = port_range
    first = low + (low % 2)
    pairs = (high - first + 1) // 2
    if pairs < 1 or low < 1 or high > 65535:
        raise ValueError(f"RTP port range {low}-{high} holds no even/odd port pair within 1..65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    start = random.randrange(pairs)
    for index in range(pairs):
        port = first + 2 * ((start + index) % pairs)
        try:
            rtp = _bind(family, host, port)
        except _PortTaken:
            continue
        try:
            return rtp, _bind(family, host, port + 1)
        except BaseException as error:
            rtp.close()
            if not isinstance(error, _PortTaken):
                raise
    raise PortRangeExhausted(f"no free RTP port pair in {low}-{high} on {host}: widen the range or take fewer calls")


class _PortTaken(TelephonyError):
    pass


def _bind(family: int, host: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if error.errno in (errno.EADDRINUSE, errno.EACCES):
            raise _PortTaken from error
        raise OSError(error.errno, f"cannot bind RTP to {host}:{port}: {error.strerror}") from error
    sock.setblocking(False)
    return sock
