"""The hearing of one call: the endpointer's events, transcripts begun at the caller's pauses, held half-sentences,
second hearings of short sounds over the agent, and the language check, turned into what the caller said.

Transcription starts at the caller's first pause (SpeechPaused), before the endpointer is sure the turn has ended:
when the silence lasts, the transcript is ready sooner by the rest of the end-of-turn silence. With `early_reply`,
the model starts on that transcript too (swarm.speculation: its stream is read ahead, no tool runs, nothing is
recorded); the turn takes it if the caller said no more, else it is dropped.
Over the paused agent the words decide: real words stop it, a cough, a noise or a backchannel ("mm-hm", "okay")
lets it go on, and nothing reaches the model (callcenter.call.barge_in). Words that stop mid-sentence, or that
Whisper is unsure of, wait for the rest (held words: callcenter.call.heard), and the whole sentence is heard as one.

The hearing does nothing to the agent itself: it asks the call that drives it (a `Listener`, the conversation)
what the agent is doing, and tells it what was heard: `Heard` in another language, or `CallerSaid` to answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import speech
from callcenter.call.heard import CallerSaid, Heard, HeardAudio, HeldWords, after_held, whole_sentence
from callcenter.call.language import LanguageChecking, LanguageChecks
from callcenter.call.record import TurnTiming
from callcenter.call.seams import Endpointing, Listener, Transcribing
from callcenter.call.settings import VoiceSettings
from speech import (
    BACKCHANNEL_PROMPT,
    PHONE_RATE,
    SpeechEnded,
    SpeechPaused,
    SpeechResumed,
    SpeechStarted,
    heard_again,
    heard_unfinished,
)
from swarm import Speculation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AtPause:
    """A transcription begun at the caller's pause, before the end of their turn, of `heard`."""

    pause: SpeechPaused
    transcription: asyncio.Task[speech.Transcript]
    heard: HeardAudio


class Hearing:
    """One call's hearing: fed the caller's audio frame by frame (echo removed), it tells its Listener what the
    caller said, one utterance at a time, so that the caller's words reach the model in order."""

    def __init__(
        self,
        listener: Listener,
        endpointer: Endpointing,
        transcriber: Transcribing,
        settings: VoiceSettings,
        *,
        call_id: str,
        speculate: Callable[[str], Speculation | None],
        domain_prompt: str | None = None,
        language_check: LanguageChecking | None = None,
    ) -> None:
        self.listener, self.endpointer, self.transcriber, self.settings = listener, endpointer, transcriber, settings
        self.call_id, self.domain_prompt, self._speculate = call_id, domain_prompt, speculate
        self._languages = LanguageChecks(language_check, call_id)
        # Utterances being transcribed; one at a time, so the caller's words reach the model in order.
        self._hearing: set[asyncio.Task[None]] = set()
        self._transcribing = asyncio.Lock()
        self._at_pause: AtPause | None = None
        self._speculation: Speculation | None = None  # the model started on that transcription
        # Short sounds over the agent heard a second time, by the id of their SpeechEnded (one per utterance:
        # a second sound can end while the first is still being heard).
        self._second_hearings: dict[int, asyncio.Task[speech.Transcript]] = {}
        self._held: HeldWords | None = None  # words that stopped mid-sentence, waiting for the rest
        self._quiet = asyncio.Event()  # clear while the caller is in the middle of an utterance
        self._quiet.set()

    # --- what the driver sees -----------------------------------------------------------------------------------

    @property
    def transcribing(self) -> bool:
        """The caller's words are being heard (transcribed, then answered or held)."""
        return bool(self._hearing)

    @property
    def caller_speaking(self) -> bool:
        """The caller is in the middle of an utterance."""
        return not self._quiet.is_set()

    async def caller_quiet(self) -> None:
        """Until the caller is not in the middle of an utterance."""
        await self._quiet.wait()

    @property
    def held(self) -> HeldWords | None:
        """Words that stopped mid-sentence, waiting for the rest."""
        return self._held

    @property
    def at_pause(self) -> AtPause | None:
        """The transcription begun at the caller's last pause, while their turn may still go on."""
        return self._at_pause

    @property
    def speculation(self) -> Speculation | None:
        """The model's start on the words heard at the pause (early_reply)."""
        return self._speculation

    def take_back(self, words: HeldWords) -> None:
        """The reply to `words` was taken back: they wait to be heard with what the caller says next."""
        self._held = words

    def stop(self) -> list[asyncio.Task[None] | asyncio.Task[speech.Transcript]]:
        """The call ends: everything being heard is cancelled (returned, to be awaited); the held words stay."""
        tasks: list[asyncio.Task[None] | asyncio.Task[speech.Transcript]] = [
            *self._hearing,
            *([self._at_pause.transcription] if self._at_pause else []),
        ]
        for task in tasks:
            task.cancel()
        self._drop_speculation()
        for again in self._second_hearings.values():
            again.cancel()
        if self._held is not None:
            self._held.cancel()
        return tasks

    # --- the endpointer's events --------------------------------------------------------------------------------

    def feed(self, frame: np.ndarray) -> None:
        """One frame of the caller's audio, the agent's echo removed."""
        for event in self.endpointer.feed(frame):
            if isinstance(event, SpeechStarted):
                if self._held is not None:
                    self._held.cancel()  # the caller goes on: the rest comes with their next words
                self._quiet.clear()
                self.listener.caller_started()
            elif isinstance(event, SpeechPaused):
                self._transcribe_early(event)
            elif isinstance(event, SpeechResumed):
                self._drop_early()  # a short pause inside a sentence: its transcript and reply are moot
            elif isinstance(event, SpeechEnded):
                self.listener.caller_stopped()
                self._quiet.set()
                self._turn_ended(event)

    # --- at the caller's pause ----------------------------------------------------------------------------------

    def _transcribe_early(self, pause: SpeechPaused) -> None:
        self._drop_early()  # the caller spoke again since the last pause
        if not self.listener.closing:
            heard = self._to_transcribe(pause.audio, pause.start_s)
            task = asyncio.create_task(
                self.transcriber.transcribe(heard.audio, prompt=self.domain_prompt, call_id=self.call_id)
            )
            # A dropped run's failure is not the call's: retrieved here so that it is not reported as lost.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            task.add_done_callback(self._early_transcript_in)
            self._at_pause = AtPause(pause, task, heard)

    def _early_transcript_in(self, task: asyncio.Task[speech.Transcript]) -> None:
        """The pause's transcript is in. Words of a finished sentence end the turn sooner (the endpointer's
        finished_silence_ms), and the model starts on them (early_reply), if the caller is still silent and
        nothing else is going on (the agent talking or thinking, a keypad request, the words of a barge-in to
        judge)."""
        at_pause = self._at_pause
        if at_pause is None or at_pause.transcription is not task or task.cancelled() or task.exception() is not None:
            return
        transcript = task.result()
        text = transcript.text.strip()
        if not text or not transcript.confident or self._hearing or self.listener.agent_busy():
            return
        finished = not heard_unfinished(text)
        if finished:
            self.endpointer.finish()
        # Held words: the model would start on the sentence's second half alone. Unfinished words wait for the
        # rest of the sentence (mid_sentence_wait), so a start on them would be dropped.
        if self.settings.early_reply and not self._held and (finished or self.settings.mid_sentence_wait_s is None):
            self._speculation = self._speculate(text)

    def _drop_early(self) -> None:
        if self._at_pause is not None:
            # A transcription not yet running never runs; a running one is ignored.
            self._at_pause.transcription.cancel()
            self._at_pause = None
        self._drop_speculation()

    def _drop_speculation(self) -> None:
        if self._speculation is not None:
            self._speculation.cancel()
            self._speculation = None

    def _take_early(self, turn: SpeechEnded) -> tuple[AtPause, Speculation | None] | None:
        """The transcription started at this turn's last pause (and the model's start on it), if it heard
        exactly the turn's audio (the caller said nothing more since) after the words held now."""
        at_pause, self._at_pause = self._at_pause, None
        speculation, self._speculation = self._speculation, None
        if (
            at_pause is not None
            and at_pause.pause.start_s == turn.start_s
            and at_pause.pause.audio.size == turn.audio.size
            and at_pause.heard.after is self._held
        ):
            return at_pause, speculation
        if at_pause is not None:
            at_pause.transcription.cancel()
        if speculation is not None:
            speculation.cancel()
        return None

    # --- at the end of the caller's turn ------------------------------------------------------------------------

    def _turn_ended(self, turn: SpeechEnded) -> None:
        if self.listener.closing:
            self._drop_early()
            return
        at_pause, speculation = self._take_early(turn) or (None, None)
        self._hear_short_sound_again(turn)
        task = asyncio.create_task(self._transcribe(turn, at_pause, time.monotonic(), speculation))
        self._hearing.add(task)
        task.add_done_callback(self._hearing.discard)

    async def _transcribe(
        self, turn: SpeechEnded, at_pause: AtPause | None, ended: float, speculation: Speculation | None = None
    ) -> None:
        """Answer what the caller said; noise (an empty transcript) leaves the agent's turn alone."""
        replying = False
        try:
            replying = await self._hear(turn, at_pause, ended, speculation)
        finally:
            if speculation is not None and not replying:
                speculation.cancel()  # no reply to these words: the model's start on them is dropped

    async def _hear(
        self, turn: SpeechEnded, at_pause: AtPause | None, ended: float, speculation: Speculation | None
    ) -> bool:
        """True when a reply turn was started (it has the speculation)."""
        early = None if at_pause is None else at_pause.transcription
        heard = None if at_pause is None else at_pause.heard
        timing = TurnTiming(early=early is not None)
        try:
            # Under the lock: the caller's later words wait for these to be answered (or to take the reply
            # back), never overtake them.
            async with self._transcribing:
                if early is not None and heard is not None and heard.after is not self._held:
                    early.cancel()  # the words held changed since the pause: it heard the wrong ones first
                    early, heard = None, None
                heard = heard or self._to_transcribe(turn.audio, turn.start_s)
                transcript = await (
                    early or self.transcriber.transcribe(heard.audio, prompt=self.domain_prompt, call_id=self.call_id)
                )
                language = await self._languages.another_language(turn, transcript)
                timing.transcript_s = time.monotonic() - ended
                return await self._heard(Heard(turn, transcript, heard, language, ended, timing), speculation)
        except Exception:
            self.listener.resume_agent()  # nothing heard: the agent must not stay paused
            raise
        finally:
            if early is not None:
                early.cancel()  # when this turn was cancelled, so is its transcription
            again = self._second_hearings.pop(id(turn), None)
            if again is not None:
                again.cancel()  # heard, or not needed: the answer is decided

    async def _heard(self, heard: Heard, speculation: Speculation | None) -> bool:
        text = heard.text
        if self.listener.closing:
            return False
        if heard.language is not None:
            self.listener.other_language(heard)
            return False
        if self.listener.agent_paused:
            # Over held words the caller is going on with their sentence ("... 4 5 8 2 1"), not humming.
            if self._held is None and not await self._stops_agent(heard):
                log.info("event=agent_resumed call=%s heard_chars=%d", self.call_id, len(text))
                log.debug("event=agent_resumed call=%s heard=%r", self.call_id, text)
                self.listener.resume_agent()
                return False
            await self.listener.stop_agent()
            if self.listener.closing:
                return False  # a goodbye or a hand-over began meanwhile
        held, self._held = self._held, None
        if held is not None:
            held.cancel()
        words = whole_sentence(held, heard.audio, text)
        if not words.text:
            return False  # noise or a cough while the agent was silent: nothing to answer
        if self._hold(words, heard.ended, heard.transcript.confident):
            return False
        return self.listener.answer(
            CallerSaid(words, heard.transcript.confident, heard.ended, heard.timing, speculation)
        )

    def _to_transcribe(self, audio: np.ndarray, start_s: float) -> HeardAudio:
        """The audio to transcribe: after held words, the sentence from its first breath on, so that Whisper
        hears the rest in context (alone, "eight two one" after "four five" once came out "A 2 1")."""
        held = self._held
        end_s = start_s + audio.size / PHONE_RATE
        joined = None if held is None else after_held(held, audio, start_s)
        return HeardAudio(audio, end_s) if joined is None else HeardAudio(joined, end_s, held)

    # --- held words ---------------------------------------------------------------------------------------------

    def _hold(self, held: HeldWords, ended: float, confident: bool) -> bool:
        """Words that stop mid-sentence wait for the rest (up to mid_sentence_wait_s after the end of the turn):
        the caller paused to think, or to read a number. The reply waited for these words anyway, so only a
        wrong guess costs time (the wait), and no words are lost: the rest is heard with them.
        Words Whisper was unsure of wait too: a head cut off mid-word is often what it cannot make out ("The
        parts of the ride." for "The parcel arrived but the"), and heard with the rest it may be clear; a
        caller who says no more is asked to repeat after the wait, not in their pause."""
        wait = self.settings.mid_sentence_wait_s
        if wait is None or self.listener.keypad_open or (confident and not heard_unfinished(held.text)):
            return False
        held.unclear = not confident
        self.listener.reply_outdated()  # the caller went on: the reply to their words before is out of date
        remaining = max(0.0, ended + wait - time.monotonic())
        self._held = held
        if not self._more_words_coming():
            self._held.timer = asyncio.get_running_loop().call_later(remaining, self._release_held)
        log.info("event=mid_sentence_wait call=%s wait_s=%.2f unclear=%s", self.call_id, remaining, held.unclear)
        return True

    def _more_words_coming(self) -> bool:
        """The caller is talking, or said more that is still being transcribed: the held words wait for it."""
        return not self._quiet.is_set() or bool(self._hearing - {asyncio.current_task()})

    def _release_held(self) -> None:
        """The caller said no more: their words are answered as they are."""
        held = self._held
        if held is None or self.listener.closing or self._more_words_coming():
            return  # more words came after all: the next utterance takes the held ones along
        self._held = None
        # The turn's clock starts here, when it is answered: the wait was chosen, not latency.
        self.listener.answer(CallerSaid(held, not held.unclear, time.monotonic(), TurnTiming(), waited=True))

    # --- short sounds over the agent ----------------------------------------------------------------------------

    def _hear_short_sound_again(self, turn: SpeechEnded) -> None:
        """A short sound over the paused agent is heard a second time, prompted with backchannels, beside the
        first hearing when Whisper's pool has a free worker (one per core by default), not after it."""
        if self.listener.agent_paused and self._held is None and heard_again(turn.duration_s):
            task = asyncio.create_task(
                self.transcriber.transcribe(turn.audio, prompt=BACKCHANNEL_PROMPT, call_id=self.call_id)
            )
            task.add_done_callback(lambda done: done.cancelled() or done.exception())  # unused: not lost
            self._second_hearings[id(turn)] = task

    async def _stops_agent(self, heard: Heard) -> bool:
        """Whether the words over the paused agent stop it: a short sound stops it only if its second hearing,
        prompted with backchannels, says so too (tiny.en writes hums as words)."""
        turn = heard.turn
        again = self._second_hearings.get(id(turn))
        if not self.listener.agent_so_far().stopped_by(heard.transcript.confident, heard.text, turn.duration_s):
            return False
        if again is None or self.listener.agent_so_far().answers_question():
            return True
        second = await again
        stops = self.listener.agent_so_far().stopped_by(second.confident, second.text.strip(), turn.duration_s)
        log.info("event=barge_in_heard_again call=%s stops=%s", self.call_id, stops)
        return stops
