"""The agent's own voice coming back on the line (line echo), taken out of the caller's audio before the VAD.

Analogue gateways and speakerphones return what we send 20-250 ms later at -10 to -25 dB. The VAD calls
that speech (it is), and Whisper hears the agent's words: left in, the agent would interrupt itself.
Per 20 ms frame: find the echo's delay by cross-correlating the last 250 ms of the caller's audio with
what we sent, fit a short filter around that delay by least squares, and subtract the predicted echo.
The fit is only updated while the echo dominates (high correlation) and only kept when it takes most of the
caller's audio out: while the caller talks over the agent (double talk) the previous fit is kept, so their
voice is not cancelled with the echo. A voice much like the agent's (the same synthetic voice, a caller
reading our words back) can correlate well enough to be fitted; such a fit leaves most of the audio in,
and kept, it would play the agent's voice into a silent line. So a fit must cancel, and a frame is never
made louder than it came.
"""

from __future__ import annotations

import numpy as np

RATE = 8000
MAX_DELAY = 300 * RATE // 1000  # echo later than this is not the line's
WINDOW = 250 * RATE // 1000  # of the caller's audio, to find and fit the echo
TAPS = 8  # around the delay: a hybrid's echo is a little smeared, not one copy
ADAPT_EVERY = 4  # frames between fits: the echo path changes slowly, the fit costs ~3 ms on a loaded core
ADAPT_CORRELATION = 0.6  # fit only when the caller's audio is this like what we sent (echo alone)
# A fit must take out at least 6 dB of the window it was fitted on (echo alone: ~30 dB). With 8 taps that
# asks for a correlation of about 0.87, so it, not ADAPT_CORRELATION, is the bar a fit must clear; the
# correlation test stays as the cheap first look.
FIT_RESIDUAL = 0.25
SILENT_REFERENCE = 1e4  # energy of what we sent (int16 units squared, summed) under which there is no echo


class EchoCanceller:
    """One call's canceller; `process(caller_frame, sent_frame)` gives the caller's frame without the echo."""

    def __init__(self) -> None:
        self._reference = np.zeros(MAX_DELAY + WINDOW + TAPS, dtype=np.float64)
        self._mic = np.zeros(WINDOW, dtype=np.float64)
        self._filter: np.ndarray | None = None  # TAPS coefficients
        self._delay = 0
        self._frames = 0

    def process(self, frame: np.ndarray, sent: np.ndarray) -> np.ndarray:
        """`sent` holds what we sent during this frame (zeros when nothing): same length as `frame`."""
        n = frame.size
        self._reference = np.concatenate([self._reference[n:], sent.astype(np.float64)])
        self._mic = np.concatenate([self._mic[n:], frame.astype(np.float64)])
        if float(np.dot(self._reference, self._reference)) < SILENT_REFERENCE:
            return frame  # we sent nothing lately: there is nothing to cancel
        self._frames += 1
        if self._filter is None or self._frames % ADAPT_EVERY == 0:
            self._adapt()
        if self._filter is None:
            return frame
        predicted = self._predict(n)
        residual = frame.astype(np.float64) - predicted
        frame_energy = float(np.dot(frame.astype(np.float64), frame))
        if (
            float(np.dot(residual, residual)) > frame_energy
            and float(np.dot(predicted, predicted)) > 0.5 * frame_energy
        ):
            # A large predicted echo that is not in the frame (a silent line): subtracting it would add the
            # agent's voice. (A small one under the caller's voice may raise a frame by chance: still cancelled.)
            return frame
        cleaned: np.ndarray = np.clip(np.rint(residual), -32768, 32767).astype(np.int16)
        return cleaned

    def _columns(self, delay: int, length: int) -> np.ndarray:
        """(length, TAPS) reference samples that, filtered, predict the last `length` caller samples."""
        end = self._reference.size - delay + TAPS // 2
        rows = np.arange(end - length, end)[:, None] - np.arange(TAPS)[None, :]
        columns: np.ndarray = self._reference[rows]
        return columns

    def _predict(self, length: int) -> np.ndarray:
        assert self._filter is not None
        predicted: np.ndarray = self._columns(self._delay, length) @ self._filter
        return predicted

    def _adapt(self) -> None:
        mic = self._mic
        mic_energy = float(np.dot(mic, mic))
        if mic_energy <= 0:
            return
        # Cross-correlation of the caller's window with the reference at every delay, by FFT.
        reference = self._reference[-(WINDOW + MAX_DELAY) :]
        size = 1 << int(np.ceil(np.log2(reference.size + WINDOW)))
        spectrum = np.fft.rfft(reference, size) * np.conj(np.fft.rfft(mic, size))
        correlation = np.fft.irfft(spectrum, size)[: MAX_DELAY + 1]  # index k: reference starting k later
        # reference[k:k+WINDOW] lines up with mic; delay = MAX_DELAY - k samples before now.
        energies = np.convolve(reference**2, np.ones(WINDOW), "valid")[: MAX_DELAY + 1]
        normalised = correlation / np.sqrt(np.maximum(energies, 1e-9) * mic_energy)
        best = int(np.argmax(normalised))
        if normalised[best] < ADAPT_CORRELATION:
            return  # the caller is talking (or the line is noisy): keep the last fit
        delay = MAX_DELAY - best
        columns = self._columns(delay, WINDOW)
        gram = columns.T @ columns + 1e-3 * np.eye(TAPS) * float(np.trace(columns.T @ columns)) / TAPS
        fitted = np.linalg.solve(gram, columns.T @ mic)
        residual = mic - columns @ fitted
        if float(np.dot(residual, residual)) > FIT_RESIDUAL * mic_energy:
            return  # correlated, but not an echo: most of the audio is something else
        self._filter, self._delay = fitted, delay
