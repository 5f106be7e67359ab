"""Whether what the caller said over the agent was meant to stop it: words, not sounds.

A backchannel ("mm-hm", "yeah", "okay", "right") tells the agent to go on; a cough or a noise burst gives
Whisper nothing, or a bracketed sound ("[coughs]"), or one of its stock hallucinations on non-speech.
"""

from __future__ import annotations

import re

BACKCHANNELS = frozenset(
    {
        "mm",
        "mmm",
        "mhm",
        "mmhm",
        "mmhmm",
        "mm-hm",
        "mm-hmm",
        "hm",
        "hmm",
        "uh-huh",
        "uhhuh",
        "uh",
        "um",
        "ah",
        "oh",
        "yeah",
        # Over the agent's statement "yes" agrees, as "yeah" does (and espeak's "Yeah" reaches Whisper as
        # "Yes."); over its question it answers, which callcenter/conversation.py decides before these words.
        "yes",
        "yep",
        "yup",
        "ya",
        "okay",
        "ok",
        "right",
        "alright",
        "all right",
        "sure",
        "i see",
        "got it",
        "cool",
        "great",
        "good",
        "fine",
        "aha",
        "ooh",
        "wow",
    }
)
# What Whisper writes for a cough, a breath or line noise when it writes anything.
NON_SPEECH = frozenset({"you", "thank you", "thanks", "bye", "so", "the", "a", "i"})
_SOUND = re.compile(r"[\[(*][^\])*]*[\])*]")  # [coughs], (laughing), *sigh*
_WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")


def words(text: str) -> list[str]:
    return _WORD.findall(_SOUND.sub(" ", text.lower()))


def is_interruption(text: str) -> bool:
    """True when the words ask the agent to stop; False for a backchannel, a sound, or nothing."""
    said = words(text)
    if not said:
        return False
    phrase = " ".join(said)
    if phrase in BACKCHANNELS or phrase in NON_SPEECH:
        return False
    # "yeah okay", "mm-hm right": backchannels strung together are still a backchannel.
    return not all(word in BACKCHANNELS for word in said)


def is_echo_of(text: str, agent_said: str, share: float = 0.7) -> bool:
    """The caller's words are mostly the agent's own (what came back on the line, if any got through)."""
    said, theirs = words(text), set(words(agent_said))
    return bool(said) and sum(word in theirs for word in said) >= share * len(said)


# People say at most ~4 words a second; more words than that in a short sound are Whisper's invention
# (a Piper "Mm-hm." came back as "And then make a chance.": benchmarks/turn_taking.py).
MAX_WORDS_PER_S = 6.0
PADS_S = 0.5  # the endpointer's pre- and post-roll around the voice in an utterance


def stops_agent(text: str, confident: bool, agent_said: str, duration_s: float | None = None) -> bool:
    """What the caller said over the (paused) agent stops it: clear words, not a backchannel, not its echo,
    and not more words than the sound (an utterance of `duration_s`, pads included) could hold."""
    if duration_s is not None and len(words(text)) > 1 + MAX_WORDS_PER_S * max(0.0, duration_s - PADS_S):
        return False
    return bool(text) and confident and is_interruption(text) and not is_echo_of(text, agent_said)
