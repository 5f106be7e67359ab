"""A small jitter buffer: RTP packets back in sequence order, duplicates dropped, losses declared.

In-order packets leave at once (no added delay on a clean path). When one is missing, later packets are
held until `depth` of them wait; then the missing ones are declared lost and the caller conceals them.
At most depth + 1 packets are ever held.
"""

from __future__ import annotations

from collections import deque

from telephony.rtp_packet import RtpPacket

MAX_MISORDER = 100  # RFC 3550 A.1: further behind than this, the sender restarted its sequence
MAX_DROPOUT = 3000  # further ahead than this, likewise


def _ahead(seq: int, of: int) -> int:
    """How far seq is ahead of `of` in 16-bit sequence space (negative: behind)."""
    return ((seq - of + 0x8000) & 0xFFFF) - 0x8000


class JitterBuffer:
    def __init__(self, depth: int = 3) -> None:
        if depth < 0:
            raise ValueError(f"jitter buffer depth must be 0 or more packets, got {depth}")
        self.depth = depth
        self.late = self.duplicate = self.reordered = self.lost = self.restarts = 0
        self._next: int | None = None
        self._highest = 0
        self._held: dict[int, RtpPacket] = {}
        self._released: deque[int] = deque(maxlen=MAX_MISORDER)

    def reset(self) -> None:
        """Forget the sequence (a new SSRC or a pause in reception); counters are kept."""
        self._next = None
        self._held.clear()
        self._released.clear()

    def push(self, packet: RtpPacket) -> list[tuple[RtpPacket, int]]:
        """Take one packet; return those now due, in order, each with the count of lost packets before it."""
        if self._next is None:
            self._next = self._highest = packet.seq
        ahead = _ahead(packet.seq, self._next)
        if -MAX_MISORDER <= ahead < 0:
            if packet.seq in self._released:
                self.duplicate += 1
            else:
                self.late += 1  # it arrived after it was given up as lost
            return []
        if ahead < 0 or ahead > MAX_DROPOUT:
            self.restarts += 1
            self.reset()
            self._next = self._highest = packet.seq
        if packet.seq in self._held:
            self.duplicate += 1
            return []
        if _ahead(packet.seq, self._highest) < 0:
            self.reordered += 1
        else:
            self._highest = packet.seq
        self._held[packet.seq] = packet
        return self._release()

    def _release(self) -> list[tuple[RtpPacket, int]]:
        assert self._next is not None
        due: list[tuple[RtpPacket, int]] = []
        missing = 0
        while self._held:
            packet = self._held.pop(self._next, None)
            if packet is None:
                if len(self._held) <= self.depth:
                    break
                skip = min(_ahead(seq, self._next) for seq in self._held)
                self.lost += skip
                missing += skip
                self._next = (self._next + skip) & 0xFFFF
                continue
            due.append((packet, missing))
            missing = 0
            self._released.append(packet.seq)
            self._next = (self._next + 1) & 0xFFFF
        return due
