"""Words over the agent: do they stop it, answer its question, or finish the caller's own sentence? Decided on
what the running turn has said (its sentences, and where each ends in its audio) and how much of it was heard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from speech import PHONE_RATE, stops_agent

# A word over the last second of the agent's question answers it ("yeah"), it does not acknowledge it (except
# the greeting's: see AgentSoFar.answers_question).
QUESTION_END_SAMPLES = 8000
# A caller who speaks again this early into a reply (its first words, plus the ~0.25 s the VAD takes to pause
# it) was finishing their own sentence, not answering: the reply is taken back and the whole sentence answered.
WENT_ON_SAMPLES = PHONE_RATE


@dataclass(frozen=True)
class AgentSoFar:
    """The running turn as the caller hears it now."""

    spoken: Sequence[tuple[str, int]]  # its sentences, and the sample of its audio where each ends
    heard: int  # samples of its audio the caller has heard
    done: bool  # the turn has said all it will (no sentence is still coming)
    greeting: bool  # the turn is the call's greeting

    def answers_question(self) -> bool:
        """The turn ended on a question and the caller heard nearly all of it: their words answer it.
        The greeting's "How can I help you today?" asks for the caller's errand: an "okay" or a "yeah" over its
        end acknowledges the hello (the question itself mostly unheard), and the greeting goes on."""
        if not self.done or not self.spoken or self.greeting:
            return False
        last, end = self.spoken[-1]
        return last.rstrip().endswith("?") and end - self.heard <= QUESTION_END_SAMPLES

    def went_on(self) -> bool:
        """The caller spoke again before hearing the reply's first sentence to its end, and within its first
        WENT_ON_SAMPLES: too soon to be answering or interrupting it."""
        first_end = self.spoken[0][1] if self.spoken else None
        if self.heard > 0 and self.answers_question():
            return False  # a short question, nearly all heard: the words answer it
        return self.heard <= WENT_ON_SAMPLES and (first_end is None or self.heard < first_end)

    def stopped_by(self, confident: bool, text: str, duration_s: float) -> bool:
        """Whether what the caller said over the paused agent was meant to stop it."""
        if text and confident and self.answers_question():
            return True  # the agent asked and is only finishing the question: "yeah" is the answer
        return stops_agent(text, confident, " ".join(sentence for sentence, _ in self.spoken[-3:]), duration_s)
