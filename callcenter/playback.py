"""The agent's running turn on its way to the caller: played, paused and resumed where it stopped, or stopped.

A sound from the caller pauses the agent at once (so a real interruption silences it within the VAD's
~160 ms); the words decide afterwards whether it resumes. The Call can only queue and flush, so a pause
is a flush that remembers where the caller stopped hearing, and a resume queues the rest again.
Positions count samples of this turn's audio (its "timeline"), whatever was flushed and queued again.
"""

from __future__ import annotations

import numpy as np

from telephony import Call


class Playback:
    def __init__(self, call: Call) -> None:
        self.call = call
        self.reset()

    def reset(self) -> None:
        """A new turn: an empty timeline."""
        self._chunks: list[np.ndarray] = []
        self.total = 0  # samples of the turn's audio so far
        self._from = 0  # timeline position of the first sample now in the call's queue
        self._base = self.call.played_samples  # the call's counter when that queue started
        self._sent = 0  # timeline position up to which `sent()` has handed out audio
        self.paused_at: int | None = None

    def play(self, chunk: np.ndarray) -> None:
        self._chunks.append(chunk)
        self.total += chunk.size
        if self.paused_at is None:
            self.call.play(chunk)

    @property
    def heard(self) -> int:
        """Timeline samples the caller has heard."""
        if self.paused_at is not None:
            return self.paused_at
        return min(self.total, self._from + self.call.played_samples - self._base)

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def talking(self) -> bool:
        """The caller hears the agent, or would if it were not paused."""
        return self.call.playing or (self.paused_at is not None and self.paused_at < self.total)

    def pause(self) -> bool:
        """Stop sending, remembering where; False when nothing was being played."""
        if self.paused_at is not None or not self.call.playing:
            return False
        self.paused_at = self.heard
        self.call.flush()
        return True

    def hold(self) -> bool:
        """Pause a turn of which nothing has been heard yet, whether or not its audio has begun; False when
        some was heard (pause() is for that) or it is already paused."""
        if self.paused_at is not None or self.heard > 0:
            return False
        self.paused_at = 0
        self.call.flush()
        return True

    def resume(self) -> None:
        """Send the rest from where the caller stopped hearing it."""
        if self.paused_at is None:
            return
        start, self.paused_at = self.paused_at, None
        self._from, self._base = start, self.call.played_samples
        self._sent = min(self._sent, start)
        rest = self._audio()[start:]
        if rest.size:
            self.call.play(rest)

    def cut(self, at: int) -> None:
        """End the turn's audio at `at`, a sample the caller has not heard yet: what follows it is dropped, and
        audio played next follows from there."""
        if not self.heard <= at < self.total:
            return
        audio = self._audio()[:at]
        self._chunks, self.total = [audio], at
        if self.paused_at is None:
            heard = self.heard
            self.call.flush()
            self._from, self._base = heard, self.call.played_samples
            self.call.play(audio[heard:])

    def stop(self) -> None:
        """Drop what the caller has not heard; the turn's positions stay readable until reset()."""
        self.paused_at = self.heard
        self.call.flush()

    def sent(self, samples: int) -> np.ndarray:
        """The audio sent to the caller since the last call, as `samples` samples (zeros where none was sent):
        the echo canceller's reference, aligned with the caller's frame of the same length."""
        heard = self.heard
        new = self._audio()[self._sent : heard] if heard > self._sent else np.zeros(0, dtype=np.int16)
        self._sent = max(self._sent, heard)
        if new.size >= samples:
            return new[-samples:]
        return np.concatenate([np.zeros(samples - new.size, dtype=np.int16), new])

    def _audio(self) -> np.ndarray:
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        return self._chunks[0] if self._chunks else np.zeros(0, dtype=np.int16)
