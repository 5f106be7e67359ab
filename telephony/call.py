"""What the application sees of a phone call, whatever carries it (SIP + RTP, or Asterisk AudioSocket)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Literal, Protocol

import numpy as np

FRAME_SAMPLES = 160  # 20 ms at 8 kHz: every frame of audio_in has exactly this many samples
FRAME_BYTES = 2 * FRAME_SAMPLES  # the same frame as PCM16 bytes
SAMPLE_RATE = 8000

EndReason = Literal[
    "remote_hangup",  # the caller hung up (BYE, or the AudioSocket peer closed)
    "local_hangup",  # the application hung up
    "cancelled",  # the caller gave up before we answered (CANCEL)
    "transferred",  # a blind transfer succeeded and we left the call
    "media_timeout",  # no audio for the configured time
    "failed",  # signalling or transport failure
    "shutdown",  # the endpoint stopped
]


class MediaTap(Protocol):
    """Sees a call's audio on its media clock (a recorder). Called on the event loop that paces every call's
    media: it must only copy what it is given, never wait."""

    def slot(self, sent: bytes | None, skipped: int) -> None:
        """One 20 ms slot has gone out: `sent` is the queued audio it carried (PCM16, up to one frame), None when
        it carried none (silence, DTMF, hold); `skipped` slots before it went unsent because the loop was late."""

    def received(self, frame: np.ndarray) -> None:
        """A frame of the caller's audio, as it is put into audio_in (lost packets concealed, in order)."""


class Call(Protocol):
    call_id: str
    caller: str  # the caller's number or user part, as the PBX sent it
    caller_name: str | None
    called: str  # the number the caller dialled
    headers: Mapping[str, str]  # the initial request's headers (first value of each), for PBX-specific data
    closed: asyncio.Event  # set once the call is over, for whatever reason
    end_reason: EndReason | None
    tap: MediaTap | None  # set it to see the audio both ways as it is sent and received; None: nobody

    @property
    def audio_in(self) -> AsyncIterator[np.ndarray]:
        """The caller's audio: int16 arrays of FRAME_SAMPLES at 8 kHz, silent frames kept; ends when the call ends."""
        ...

    @property
    def dtmf_in(self) -> AsyncIterator[str]:
        """One key ("0"-"9", "*", "#", "A"-"D") per key press."""
        ...

    def play(self, pcm16: np.ndarray) -> None:
        """Queue 8 kHz PCM16 audio to be sent after what is already queued."""

    def flush(self) -> None:
        """Drop everything queued at once (the caller barged in)."""

    @property
    def playing(self) -> bool:
        """Queued audio is still being sent."""
        ...

    @property
    def played_samples(self) -> int:
        """Samples of queued audio sent so far in this call (monotonic; flushed audio does not count)."""
        ...

    async def wait_played(self) -> None:
        """Return once the playback queue is empty (or the call ended)."""

    async def transfer(self, target: str) -> bool:
        """Blind transfer to a number or SIP URI; True once the transfer is accepted and the call left."""

    async def hangup(self) -> None:
        """End the call; safe to call twice or after the caller hung up."""
