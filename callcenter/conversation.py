"""One phone call's conversation: Call -> Endpointer -> Transcriber -> Session -> Synthesizer -> Call.

The caller can talk over the agent (barge-in): playback pauses at once; then the words decide. Real words
stop the agent (the running completion and synthesis are cancelled, and the session keeps only what the
caller heard); a cough, a noise or a backchannel ("mm-hm", "okay") resumes it where it stopped, and
nothing reaches the model. The agent's own voice coming back on the line is cancelled before the VAD.
Transcription starts at the caller's first pause (SpeechPaused), before the endpointer is sure the turn
has ended: when the silence lasts, the transcript is ready sooner by the rest of the end-of-turn silence.
With `early_reply`, the model starts on that transcript too (swarm.speculation: its stream is read ahead,
no tool runs, nothing is recorded); the turn takes it if the caller said no more, else it is dropped.
A caller who goes on before hearing a word of the reply is not talked over: the reply waits; a cough lets
it go on, words take it back (when it changed nothing) and the whole sentence is answered as one turn. So
do words over the reply's first second, before its first sentence has been heard to its end: the caller
was finishing their own sentence.

What the call does around the caller's turns (greeting, re-prompts, time limit, keypad and "0 for a person",
hand-over, goodbye, drain) is decided by the call rules (callcenter.call.rules), the same for every channel:
this loop feeds them the call's events and its clock, and does what they say.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping
from typing import Any, Protocol

import numpy as np

import speech
from callcenter.acknowledgement import Acknowledger
from callcenter.call.barge_in import WENT_ON_SAMPLES as WENT_ON_SAMPLES  # benchmarks/turn_taking.py reads it here
from callcenter.call.barge_in import AgentSoFar
from callcenter.call.heard import AnsweredWords, HeardAudio, HeldWords, after_held, whole_sentence
from callcenter.call.language import LanguageChecking, LanguageChecks
from callcenter.call.record import Transcript, TurnTiming
from callcenter.call.rules import (
    Action,
    CallRules,
    Disposition,
    EndCall,
    Escalate,
    HangUp,
    Interrupt,
    KeypadClosed,
    KeypadOpened,
    LetHear,
    RunDigits,
    Say,
    StartTurn,
    Step,
    Transfer,
    WaitForCaller,
    WaitForDigits,
)
from callcenter.call.settings import VoiceSettings
from callcenter.keypad import run_with_digits
from callcenter.playback import Playback
from speech.echo import EchoCanceller
from speech.endpointer import SpeechEnded, SpeechPaused, SpeechResumed, SpeechStarted
from speech.turn_words import BACKCHANNEL_PROMPT, heard_again, heard_unfinished
from speech.vad import PHONE_RATE
from swarm.events import DigitsRequested, EscalationReason
from swarm.session import Session
from swarm.speculation import Speculation
from telephony.call import Call

log = logging.getLogger(__name__)

TAKE_BACK_S = 1.0  # for a cancelled reply to unwind before it is taken back


# What a call needs of speech's parts (speech.Transcriber, LanguageCheck, Synthesizer, Endpointer), so that
# tests/voice_fakes.py can stand in for them.
class Transcribing(Protocol):
    async def transcribe(
        self, pcm16_8k: np.ndarray, *, prompt: str | None = None, call_id: str = "-"
    ) -> speech.Transcript: ...


class Synthesizing(Protocol):
    def synthesize_stream(self, text: str, call_id: str = "") -> AsyncGenerator[np.ndarray, None]: ...


class Endpointing(Protocol):
    def feed(self, frame: np.ndarray) -> list[speech.EndpointerEvent]: ...

    def finish(self) -> None:
        """The words before the current silence are a finished sentence: the turn may end sooner."""
        ...


class Conversation:
    def __init__(
        self,
        call: Call,
        session: Session,
        endpointer: Endpointing,
        transcriber: Transcribing,
        synthesizer: Synthesizing,
        settings: VoiceSettings,
        *,
        domain_prompt: str | None = None,
        on_turn: Callable[[TurnTiming], None] | None = None,
        language_check: LanguageChecking | None = None,
        fillers_audio: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """`fillers_audio`: the acknowledgements' audio rendered at start-up (callcenter.acknowledgement)."""
        self.call, self.session, self.settings = call, session, settings
        self._languages = LanguageChecks(language_check, call.call_id)
        self.endpointer, self.transcriber, self.synthesizer = endpointer, transcriber, synthesizer
        self.domain_prompt = domain_prompt
        self.on_turn = on_turn
        self.transcript = Transcript()
        fillers = settings.fillers
        self._acknowledger = (
            Acknowledger(fillers, synthesizer, call.call_id, fillers_audio) if fillers is not None else None
        )
        self.disposition: Disposition = "completed"
        self._turn: asyncio.Task[None] | None = None
        self._spoken: list[tuple[str, int]] = []  # sentences of the running turn and the sample where each ends
        self._playback = Playback(call)  # the running turn's audio: paused, resumed or stopped by the caller
        self._echo = EchoCanceller()
        self.rules = CallRules(settings, time.monotonic())  # greeting, re-prompts, keypad, hand-over, goodbye, drain
        self._keypad_pause: asyncio.TimerHandle | None = None
        self._finished = asyncio.Event()
        # Utterances being transcribed; one at a time, so the caller's words reach the model in order.
        self._hearing: set[asyncio.Task[None]] = set()
        self._transcribing = asyncio.Lock()
        self._early: tuple[SpeechPaused, asyncio.Task[speech.Transcript], HeardAudio] | None = None  # begun at a pause
        self._speculation: Speculation | None = None  # the model started on that transcription
        # Short sounds over the agent heard a second time, by the id of their SpeechEnded (one per utterance:
        # a second sound can end while the first is still being heard).
        self._second_hearings: dict[int, asyncio.Task[speech.Transcript]] = {}
        self._held: HeldWords | None = None  # words that stopped mid-sentence, waiting for the rest
        self._answered: AnsweredWords | None = None  # what the running turn answers
        self._agent_lines: list[dict[str, Any]] = []  # transcript lines of the running turn's sentences
        self._caller_quiet = asyncio.Event()  # clear while the caller is in the middle of an utterance
        self._caller_quiet.set()
        self._greeting: asyncio.Task[None] | None = None  # the turn that opens the call

    async def run(self, *, overflow: bool = False) -> str:
        """Serve the call until it ends; returns the disposition: completed, transferred, abandoned (the caller
        hung up before any turn, or stayed silent), or failed (no operator took an escalation, media stopped).
        An `overflow` call (the node is over its limits) is handed to the operator after the overload notice."""
        opening = self.rules.start(time.monotonic(), overflow=overflow)
        helpers = [asyncio.create_task(c) for c in (self._listen(), self._keys(), self._watch())]
        try:
            self._act(opening)
            self._greeting = None if overflow else self._turn
            closed = asyncio.create_task(self.call.closed.wait())
            finished = asyncio.create_task(self._finished.wait())
            await asyncio.wait({closed, finished}, return_when=asyncio.FIRST_COMPLETED)
            closed.cancel(), finished.cancel()
        finally:
            tasks = [
                *helpers,
                *self._hearing,
                *([self._turn] if self._turn else []),
                *([self._early[1]] if self._early else []),
            ]
            for task in tasks:
                task.cancel()
            self._drop_speculation()
            for again in self._second_hearings.values():
                again.cancel()
            if self._held is not None:
                self._held.cancel()
                self.transcript.add("caller", self._held.text)  # said, if never answered: the record keeps it
            await asyncio.gather(*tasks, return_exceptions=True)
            self._forget_unheard("call_ended")
            self._act(self.rules.call_ended())
            self.session.dispose()
        if self.call.end_reason == "transferred":
            self.disposition = "transferred"  # the call may end before transfer() has returned to us
        elif self.call.end_reason == "media_timeout":
            self.disposition = "failed"  # the caller's audio stopped reaching us
        elif self.disposition == "completed" and self.call.end_reason == "remote_hangup" and not self.transcript.turns:
            self.disposition = "abandoned"
        return self.disposition

    # --- the caller's side ------------------------------------------------------------------------------------

    async def _listen(self) -> None:
        async for frame in self.call.audio_in:
            frame = self._echo.process(frame, self._playback.sent(frame.size))
            for event in self.endpointer.feed(frame):
                if isinstance(event, SpeechStarted):
                    self.rules.activity(time.monotonic())
                    if self._held is not None:
                        self._held.cancel()  # the caller goes on: the rest comes with their next words
                    self._caller_quiet.clear()
                    # A reply not yet heard waits too: an agent does not start talking over the caller.
                    if not self.rules.closing and (
                        self._playback.pause() or (self._answered and self._playback.hold())
                    ):
                        # Silent within the VAD's onset; whether it was an interruption, the words will tell.
                        log.info(
                            "event=agent_paused call=%s heard=%d/%d",
                            self.call.call_id,
                            self._playback.heard,
                            self._playback.total,
                        )
                elif isinstance(event, SpeechPaused):
                    self._transcribe_early(event)
                elif isinstance(event, SpeechResumed):
                    self._drop_early()  # a short pause inside a sentence: its transcript and reply are moot
                elif isinstance(event, SpeechEnded):
                    self.rules.activity(time.monotonic())
                    self._caller_quiet.set()
                    self._turn_ended(event)

    def _transcribe_early(self, pause: SpeechPaused) -> None:
        self._drop_early()  # the caller spoke again since the last pause
        if not self.rules.closing:
            heard = self._to_transcribe(pause.audio, pause.start_s)
            task = asyncio.create_task(
                self.transcriber.transcribe(heard.audio, prompt=self.domain_prompt, call_id=self.call.call_id)
            )
            # A dropped run's failure is not the call's: retrieved here so that it is not reported as lost.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            task.add_done_callback(self._early_transcript_in)
            self._early = (pause, task, heard)

    def _early_transcript_in(self, task: asyncio.Task[speech.Transcript]) -> None:
        """The pause's transcript is in. Words of a finished sentence end the turn sooner (the endpointer's
        finished_silence_ms), and the model starts on them (early_reply), if the caller is still silent and
        nothing else is going on (the agent talking or thinking, a keypad request, the words of a barge-in to
        judge)."""
        if self._early is None or self._early[1] is not task or task.cancelled() or task.exception() is not None:
            return
        transcript = task.result()
        text = transcript.text.strip()
        busy = self._turn is not None and not self._turn.done()
        if not text or not transcript.confident or busy or self._hearing or self.rules.keypad or self.rules.closing:
            return
        if self._playback.paused or self._playback.talking:
            return
        finished = not heard_unfinished(text)
        if finished:
            self.endpointer.finish()
        # Held words: the model would start on the sentence's second half alone. Unfinished words wait for the
        # rest of the sentence (mid_sentence_wait), so a start on them would be dropped.
        if self.settings.early_reply and not self._held and (finished or self.settings.mid_sentence_wait_s is None):
            self._speculation = self.session.speculate(text)

    def _drop_early(self) -> None:
        if self._early is not None:
            self._early[1].cancel()  # a transcription not yet running never runs; a running one is ignored
            self._early = None
        self._drop_speculation()

    def _drop_speculation(self) -> None:
        if self._speculation is not None:
            self._speculation.cancel()
            self._speculation = None

    def _take_early(
        self, turn: SpeechEnded
    ) -> tuple[asyncio.Task[speech.Transcript], Speculation | None, HeardAudio] | None:
        """The transcription started at this turn's last pause (and the model's start on it), if it heard
        exactly the turn's audio (the caller said nothing more since) after the words held now."""
        early, self._early = self._early, None
        speculation, self._speculation = self._speculation, None
        if (
            early is not None
            and early[0].start_s == turn.start_s
            and early[0].audio.size == turn.audio.size
            and early[2].after is self._held
        ):
            return early[1], speculation, early[2]
        if early is not None:
            early[1].cancel()
        if speculation is not None:
            speculation.cancel()
        return None

    def _turn_ended(self, turn: SpeechEnded) -> None:
        if self.rules.closing:
            self._drop_early()
            return
        early, speculation, heard = self._take_early(turn) or (None, None, None)
        self._hear_short_sound_again(turn)
        task = asyncio.create_task(self._transcribe(turn, early, heard, time.monotonic(), speculation))
        self._hearing.add(task)
        task.add_done_callback(self._hearing.discard)

    async def _transcribe(
        self,
        turn: SpeechEnded,
        early: asyncio.Task[speech.Transcript] | None,
        heard: HeardAudio | None,
        ended: float,
        speculation: Speculation | None = None,
    ) -> None:
        """Answer what the caller said; noise (an empty transcript) leaves the agent's turn alone."""
        replying = False
        try:
            replying = await self._answer(turn, early, heard, ended, speculation)
        finally:
            if speculation is not None and not replying:
                speculation.cancel()  # no reply to these words: the model's start on them is dropped

    async def _answer(
        self,
        turn: SpeechEnded,
        early: asyncio.Task[speech.Transcript] | None,
        heard: HeardAudio | None,
        ended: float,
        speculation: Speculation | None,
    ) -> bool:
        """True when a reply turn was started (it has the speculation)."""
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
                    early
                    or self.transcriber.transcribe(heard.audio, prompt=self.domain_prompt, call_id=self.call.call_id)
                )
                language = await self._languages.another_language(turn, transcript)
                timing.transcript_s = time.monotonic() - ended
                return await self._answer_words(turn, transcript, language, heard, timing, ended, speculation)
        except Exception:
            self._playback.resume()  # nothing heard: the agent must not stay paused
            raise
        finally:
            if early is not None:
                early.cancel()  # when this turn was cancelled, so is its transcription
            again = self._second_hearings.pop(id(turn), None)
            if again is not None:
                again.cancel()  # heard, or not needed: the answer is decided

    async def _answer_words(
        self,
        turn: SpeechEnded,
        transcript: speech.Transcript,
        language: speech.Language | None,
        heard: HeardAudio,
        timing: TurnTiming,
        ended: float,
        speculation: Speculation | None,
    ) -> bool:
        text = transcript.text.strip()
        if self.rules.closing:
            return False
        if language is not None:
            self.transcript.add("caller", text)
            log.info("event=caller_language call=%s language=%s", self.call.call_id, language.text)
            self.hand_to_person("caller_language")  # nothing is answered: a colleague may speak it
            return False
        if self._playback.paused:
            # Over held words the caller is going on with their sentence ("... 4 5 8 2 1"), not humming.
            if self._held is None and not await self._barge_in(transcript, text, turn):
                log.info("event=agent_resumed call=%s heard_chars=%d", self.call.call_id, len(text))
                log.debug("event=agent_resumed call=%s heard=%r", self.call.call_id, text)
                self._playback.resume()
                return False
            await self._interrupt_reply()
            if self.rules.closing:
                return False  # a goodbye or a hand-over began meanwhile
        held, self._held = self._held, None
        if held is not None:
            held.cancel()
        words = whole_sentence(held, heard, text)
        if not words.text:
            return False  # noise or a cough while the agent was silent: nothing to answer
        if self._hold(words, ended, transcript.confident):
            return False
        text = words.text
        self._act(self.rules.spoke())  # the caller said it instead of typing it
        self.transcript.add("caller", text)
        if not transcript.confident:
            log.info("event=low_confidence call=%s chars=%d", self.call.call_id, len(text))
            log.debug("event=low_confidence call=%s text=%r", self.call.call_id, text)
            self._start_turn(self._run(self.rules.repeat()))
            return False
        self._start_reply(words, ended, timing, speculation)
        return True

    def _start_reply(
        self, words: HeldWords, ended: float, timing: TurnTiming, speculation: Speculation | None = None
    ) -> None:
        self._start_turn(self._reply(words.text, ended, timing, speculation))
        self._answered = AnsweredWords(words, self.transcript.lines[-1], timing, len(self.session.events))

    async def _interrupt_reply(self) -> None:
        """The caller's words stop the agent. If they heard nothing of its reply, or only its first words,
        they went on with what it answers (a pause in their sentence was answered): the turn is taken back
        and those words wait to be heard with these (_held)."""
        answered, turn = self._answered, self._turn
        went_on = answered is not None and self._agent_so_far().went_on()
        self._interrupt("barge_in")
        if not went_on or answered is None or turn is None:
            return
        await asyncio.wait({turn}, timeout=TAKE_BACK_S)  # its last words are recorded before they are taken back
        # A turn still running (a tool that finishes what it began) stands: what it does may be written.
        if turn.done() and self._held is None and self.session.retract(answered.words.text, answered.since):
            self.transcript.lines = [line for line in self.transcript.lines if line is not answered.line]
            self.transcript.turns = [timing for timing in self.transcript.turns if timing is not answered.timing]
            self._held = answered.words
            log.info("event=reply_taken_back call=%s", self.call.call_id)

    def _to_transcribe(self, audio: np.ndarray, start_s: float) -> HeardAudio:
        """The audio to transcribe: after held words, the sentence from its first breath on, so that Whisper
        hears the rest in context (alone, "eight two one" after "four five" once came out "A 2 1")."""
        held = self._held
        end_s = start_s + audio.size / PHONE_RATE
        joined = None if held is None else after_held(held, audio, start_s)
        return HeardAudio(audio, end_s) if joined is None else HeardAudio(joined, end_s, held)

    def _hold(self, held: HeldWords, ended: float, confident: bool) -> bool:
        """Words that stop mid-sentence wait for the rest (up to mid_sentence_wait_s after the end of the turn):
        the caller paused to think, or to read a number. The reply waited for these words anyway, so only a
        wrong guess costs time (the wait), and no words are lost: the rest is heard with them.
        Words Whisper was unsure of wait too: a head cut off mid-word is often what it cannot make out ("The
        parts of the ride." for "The parcel arrived but the"), and heard with the rest it may be clear; a
        caller who says no more is asked to repeat after the wait, not in their pause."""
        wait = self.settings.mid_sentence_wait_s
        if wait is None or self.rules.keypad is not None or (confident and not heard_unfinished(held.text)):
            return False
        held.unclear = not confident
        if self._turn is not None and not self._turn.done():
            self._interrupt("new_turn")  # the caller went on: the reply to their words before is out of date
        remaining = max(0.0, ended + wait - time.monotonic())
        self._held = held
        if not self._more_words_coming():
            self._held.timer = asyncio.get_running_loop().call_later(remaining, self._release_held)
        log.info("event=mid_sentence_wait call=%s wait_s=%.2f unclear=%s", self.call.call_id, remaining, held.unclear)
        return True

    def _more_words_coming(self) -> bool:
        """The caller is talking, or said more that is still being transcribed: the held words wait for it."""
        return not self._caller_quiet.is_set() or bool(self._hearing - {asyncio.current_task()})

    def _release_held(self) -> None:
        """The caller said no more: their words are answered as they are."""
        held = self._held
        if held is None or self.rules.closing or self._more_words_coming():
            return  # more words came after all: the next utterance takes the held ones along
        self._held = None
        self._act(self.rules.spoke())
        self.transcript.add("caller", held.text)
        if held.unclear:
            self._start_turn(self._run(self.rules.repeat()))
            return
        # The turn's clock starts here, when it is answered: the wait was chosen, not latency.
        self._start_reply(held, time.monotonic(), TurnTiming())

    def _hear_short_sound_again(self, turn: SpeechEnded) -> None:
        """A short sound over the paused agent is heard a second time, prompted with backchannels, beside the
        first hearing when Whisper's pool has a free worker (one per core by default), not after it."""
        if self._playback.paused and self._held is None and heard_again(turn.duration_s):
            task = asyncio.create_task(
                self.transcriber.transcribe(turn.audio, prompt=BACKCHANNEL_PROMPT, call_id=self.call.call_id)
            )
            task.add_done_callback(lambda done: done.cancelled() or done.exception())  # unused: not lost
            self._second_hearings[id(turn)] = task

    async def _barge_in(self, transcript: speech.Transcript, text: str, turn: SpeechEnded) -> bool:
        """Whether the words over the paused agent stop it: a short sound stops it only if its second hearing,
        prompted with backchannels, says so too (tiny.en writes hums as words)."""
        again = self._second_hearings.get(id(turn))
        if not self._agent_so_far().stopped_by(transcript.confident, text, turn.duration_s):
            return False
        if again is None or self._agent_so_far().answers_question():
            return True
        heard = await again
        stops = self._agent_so_far().stopped_by(heard.confident, heard.text.strip(), turn.duration_s)
        log.info("event=barge_in_heard_again call=%s stops=%s", self.call.call_id, stops)
        return stops

    def _agent_so_far(self) -> AgentSoFar:
        turn = self._turn
        done = turn is not None and turn.done()
        return AgentSoFar(tuple(self._spoken), self._playback.heard, done, turn is not None and turn is self._greeting)

    def _interrupt(self, reason: str) -> None:
        """Stop the agent's turn and its playback now; the session and the record keep only what was heard."""
        self._forget_unheard(reason)
        self._playback.stop()
        self._answered = None
        if self._turn is not None and not self._turn.cancelling():
            self._turn.cancel()  # once: a second cancel would reach a tool the first lets finish

    def _forget_unheard(self, reason: str) -> None:
        """Forget the sentences of the running turn that the caller has not heard (yet)."""
        played = self._playback.heard
        heard = [sentence for sentence, end in self._spoken if end <= played]
        if len(heard) < len(self._spoken):
            self.session.commit_heard(" ".join(heard))
            unheard = {id(line) for line in self._agent_lines[len(heard) :]}
            self.transcript.lines = [line for line in self.transcript.lines if id(line) not in unheard]
            log.info(
                "event=agent_interrupted call=%s reason=%s heard=%d/%d sentences",
                self.call.call_id,
                reason,
                len(heard),
                len(self._spoken),
            )
        self._spoken, self._agent_lines = [], []

    async def _keys(self) -> None:
        async for key in self.call.dtmf_in:
            actions = self.rules.key(key, time.monotonic(), self._playback.talking)
            if any(isinstance(action, Escalate) and action.reason == "caller_pressed_0" for action in actions):
                log.info("event=dtmf_operator call=%s", self.call.call_id)
            self._act(actions)

    def hand_to_person(self, reason: EscalationReason) -> bool:
        """Transfer the caller to the operator now (keypad 0, the supervisor's button); False when the call is
        already ending."""
        actions = self.rules.person(reason)
        self._act(actions)
        return bool(actions)

    def end_for_drain(self, goodbye: str) -> bool:
        """The node is going away: stop the agent, let the caller finish the sentence they are in (up to
        DRAIN_GRACE_S; what they say is not answered), say `goodbye`, hang up. False when already ending."""
        actions = self.rules.drain(goodbye)
        self._act(actions)
        return bool(actions)

    @property
    def drained(self) -> bool:
        """Ended by end_for_drain(): the node went away."""
        return self.rules.drained

    @property
    def state(self) -> str:
        """What the call is doing now, as the supervisor's page shows it."""
        if self.rules.closing:
            return "handing over" if self.session.escalated() else "ending"
        if self.rules.keypad is not None:
            return "keypad"
        if self._playback.talking:
            return "agent speaking"
        if self._hearing or (self._turn is not None and not self._turn.done()):
            return "thinking"
        return "listening"

    async def _watch(self) -> None:
        """The call rules' clock: re-prompts of a silent caller, the end of a call that stays silent or runs too
        long."""
        while not self.rules.clock_stopped:
            await asyncio.sleep(0.25)
            # A caller in the middle of a long sentence is not silent (seen: "Are you still there?" 8 s into one).
            speaking = not self._caller_quiet.is_set()
            answering = self._turn is not None and not self._turn.done()
            busy = answering or self._playback.talking or bool(self._hearing) or speaking
            self._act(self.rules.tick(time.monotonic(), busy))

    # --- what the call rules say to do ------------------------------------------------------------------------

    def _act(self, actions: list[Action]) -> None:
        """Do the call rules' actions now."""
        for action in actions:
            if isinstance(action, StartTurn):
                self._start_turn(self._run(action.steps))
            elif isinstance(action, Interrupt):
                self._interrupt(action.reason)
            elif isinstance(action, WaitForDigits):
                self._cancel_keypad_pause()
                self._keypad_pause = asyncio.get_running_loop().call_later(action.timeout_s, self._digits_due)
            elif isinstance(action, Escalate):
                self.session.escalate(action.reason)
            else:
                self._note(action)

    async def _run(self, steps: tuple[Step, ...]) -> None:
        """Do a turn's steps, one after the other."""
        for step in steps:
            if isinstance(step, Say):
                await self._say_prepared(step.text)
            elif isinstance(step, LetHear):
                self._playback.resume()  # what is said now is said to its end
                await self.call.wait_played()
            elif isinstance(step, EndCall):
                self.session.end_call(step.reason)
            elif isinstance(step, WaitForCaller):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._caller_quiet.wait(), step.timeout_s)
            elif isinstance(step, RunDigits):
                await self._typed(step.request, step.digits)
            elif isinstance(step, Transfer):
                await self._transfer(step.target)
            elif isinstance(step, HangUp):
                await self._hang_up(step.disposition)
            elif isinstance(step, Escalate):
                self.session.escalate(step.reason)
            else:
                self._note(step)

    def _note(self, note: KeypadOpened | KeypadClosed) -> None:
        if isinstance(note, KeypadOpened):
            request = note.request
            log.info(
                "event=keypad_open call=%s tool=%s argument=%s max_digits=%d",
                self.call.call_id,
                request.tool,
                request.argument,
                request.max_digits,
            )
        else:
            self._cancel_keypad_pause()
            log.info("event=keypad_closed call=%s reason=%s digits=%d", self.call.call_id, note.reason, note.digits)

    def _digits_due(self) -> None:
        self._keypad_pause = None
        self._act(self.rules.digits_due())

    def _cancel_keypad_pause(self) -> None:
        if self._keypad_pause is not None:
            self._keypad_pause.cancel()
            self._keypad_pause = None

    # --- the agent's side -------------------------------------------------------------------------------------

    def _start_turn(self, work: Coroutine[Any, Any, None]) -> None:
        """A newer turn replaces the running one; what the caller has not heard of it yet is never said."""
        self._interrupt("new_turn")
        self._playback.reset()
        self._turn = asyncio.create_task(self._guarded(work))

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        """A turn that fails still leaves the caller with something to hear, and the call going."""
        try:
            await work
        except Exception:
            log.exception("event=turn_failed call=%s closing=%s", self.call.call_id, self.rules.closing)
            if self.rules.closing:
                await self._hang_up("failed")
                return
            with contextlib.suppress(Exception):
                await self._run(self.rules.repeat())

    async def _reply(self, text: str, ended: float, timing: TurnTiming, speculation: Speculation | None = None) -> None:
        async def sentences() -> AsyncGenerator[str, None]:
            async for sentence in self.session.stream(text, speculation):
                if timing.first_sentence_s is None:
                    timing.first_sentence_s = time.monotonic() - ended
                yield sentence

        filling = self._fill_silence(ended, timing)
        try:
            await self._speak(sentences(), ended, timing)
        finally:  # an interrupted turn was still a turn, with its latencies
            if filling is not None:
                filling.cancel()
            if speculation is not None:
                timing.early_reply = speculation.taken
                speculation.cancel()  # also when this turn was replaced before it asked the model
            self.transcript.turns.append(timing)
            if self.on_turn:
                self.on_turn(timing)
            log.info(
                "event=turn call=%s %s",
                self.call.call_id,
                " ".join(f"{k}={v:.3f}" for k, v in timing.breakdown().items() if v is not None),
            )
        await self._after_turn()

    def _fill_silence(self, ended: float, timing: TurnTiming) -> asyncio.Task[None] | None:
        """Acknowledge a slow answer (callcenter.acknowledgement): heard and recorded, not in the model's history."""
        if self._acknowledger is None:
            return None

        def heard(text: str) -> None:
            if timing.acknowledged_s is None:
                timing.acknowledged_s = time.monotonic() - ended
            self.transcript.add("agent", text, via="acknowledgement")

        return asyncio.create_task(
            self._acknowledger.fill(self._playback, ended, lambda: timing.first_audio_s is not None, heard)
        )

    async def _speak(
        self, sentences: AsyncGenerator[str, None], ended: float | None = None, timing: TurnTiming | None = None
    ) -> None:
        async with contextlib.aclosing(sentences):
            async for sentence in sentences:
                async with contextlib.aclosing(
                    self.synthesizer.synthesize_stream(sentence, self.call.call_id)
                ) as chunks:
                    async for chunk in chunks:
                        if timing is not None and ended is not None and timing.first_audio_s is None:
                            timing.first_audio_s = time.monotonic() - ended
                            timing.behind_s = (self._playback.total - self._playback.heard) / PHONE_RATE
                        self._playback.play(chunk)
                self._spoken.append((sentence, self._playback.total))
                self.transcript.add("agent", sentence)
                self._agent_lines.append(self.transcript.lines[-1])

    async def _typed(self, request: DigitsRequested, digits: str) -> None:
        """The digits a tool asked for: the tool runs with them, and its answer is said."""
        self.transcript.add("caller", digits, via="keypad")
        say = await run_with_digits(self.session, request, digits)
        await self._run(self.rules.digits_answered(say))
        await self._after_turn()

    async def _say_prepared(self, text: str) -> None:
        self.session.emit(text)

        async def one() -> AsyncGenerator[str, None]:
            yield text

        await self._speak(one())

    async def _after_turn(self) -> None:
        escalation = self.session.escalated()
        await self._run(
            self.rules.after_turn(
                escalation.reason if escalation else None,
                self.session.ended() is not None,
                self.session.digit_request(),
            )
        )

    async def _transfer(self, target: str) -> None:
        try:
            transferred = await self.call.transfer(target)
        except ValueError as error:  # a malformed operator target in the config
            log.error("event=transfer_impossible call=%s error=%s", self.call.call_id, error)
            transferred = False
        if transferred:
            self._finished.set()
        else:
            await self._run(self.rules.transfer_failed())

    async def _hang_up(self, disposition: Disposition) -> None:
        self.disposition = disposition
        await self.call.hangup()
        self._finished.set()
