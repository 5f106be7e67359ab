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
# A hum of assent, in whatever spelling Whisper picks ("Mmmm", "Hmmm", "Mm-hmm", "Uhh", "Umm", "Uh-huh"), by
# its shape rather than a list. Not the hum for "no" ("Mm-mm", "Hm-mm": no h after the break), not "huh?".
_HUM = re.compile(r"h*m{2,}|h+m+|m+-?h+m+(?:-?h+m+)*|u+h*m*|u+h+-?h+u+h+")


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
    said = phrase.replace("uh huh", "uh-huh").split()
    return not all(word in BACKCHANNELS or _HUM.fullmatch(word) for word in said)


def is_echo_of(text: str, agent_said: str, share: float = 0.7) -> bool:
    """The caller's words are mostly the agent's own (what came back on the line, if any got through)."""
    said, theirs = words(text), set(words(agent_said))
    return bool(said) and sum(word in theirs for word in said) >= share * len(said)


# People say at most ~4 words a second; more words than that in a short sound are Whisper's invention
# (a Piper "Mm-hm." came back as "And then make a chance.": benchmarks/turn_taking.py).
MAX_WORDS_PER_S = 6.0
PADS_S = 0.5  # the endpointer's pre- and post-roll around the voice in an utterance


# Whisper tiny.en writes a hum over the agent as words often enough ("and make sense." for "Mhm.", "MMA cam."
# for "Mm-hm."); prompted with backchannels it hears most hums as hums, but alone it then invents words on
# other backchannels ("Right, I think." for "Right."). So a short sound that the first hearing calls an
# interruption is heard once more with this prompt, and stops the agent only if both hearings say so
# (benchmarks/turn_taking.py). Longer words, the real interruptions, are not delayed by a second hearing.
BACKCHANNEL_PROMPT = "Mm-hmm. Yeah. Okay. Right."
SECOND_HEARING_MAX_S = 2.5  # an utterance, pads included: "Mm-hm, mm-hm." is ~2.1 s


def heard_again(duration_s: float) -> bool:
    """Whether words over the paused agent that stop it are heard a second time, prompted with backchannels."""
    return duration_s <= SECOND_HEARING_MAX_S


def stops_agent(text: str, confident: bool, agent_said: str, duration_s: float | None = None) -> bool:
    """What the caller said over the (paused) agent stops it: clear words, not a backchannel, not its echo,
    and not more words than the sound (an utterance of `duration_s`, pads included) could hold."""
    if duration_s is not None and len(_once(words(text))) > 1 + MAX_WORDS_PER_S * max(0.0, duration_s - PADS_S):
        return False
    return bool(text) and confident and is_interruption(text) and not is_echo_of(text, agent_said)


def _once(said: list[str]) -> list[str]:
    """The words with Whisper's loop undone: prompted with backchannels, it wrote a 0.9 s "Wait a minute." as
    "Wait a minute. Wait a minute.", too many words for the sound, and the agent went on (3 of 30 short
    interruptions). A phrase written over and over is counted once."""
    for size in range(1, len(said) // 2 + 1):
        if len(said) % size == 0 and said == said[:size] * (len(said) // size):
            return said[:size]
    return said


# Whisper reads its prompt as the call so far and writes in its style. With only finished sentences there,
# a caller who stops after "the" was written finished ("I want to return that."), and the words rule
# had nothing to hold. Heads that trail off in the prompt (inside the shop's, callcenter.voice.domain_prompt)
# let it write the "the ..." it heard: of 182 heads spoken alone (107 tuning sentences, Piper and
# espeak-ng), 73 -> 96 held (100 blind sentences: 60 -> 83 of 164); finished sentences held 5 -> 10 of 214
# (blind: 3 -> 11 of 200; benchmarks/trailing_off.py).
TRAILING_OFF_PROMPT = "I'd like to buy the... My order number is 4 2... Can you tell me how..."


# No sentence ends on these, a question neither: Whisper writes a head spoken with a rise as one ("How do I
# send back a?", "Can I speak to A?": 5 of 91 heads heard so, none of 414 finished sentences). Not "his",
# "her", "its": a question may end on them ("Did you ask her?").
DETERMINERS = frozenset({"a", "an", "the", "my", "your", "our", "their", "every", "each"})
# Words an English sentence does not end on: a caller who falls silent after one is in the middle of it
# ("I want to return the ...", "can you tell me how ..."). Closed classes, chosen by grammar: articles and
# possessives, prepositions that are rarely a verb's particle (so not "on", "in", "up": "hold on", "log in"),
# conjunctions, "to" before its verb, fillers. Words that often do end a sentence stay out ("this", "that",
# "so", "do", "can", "it").
UNFINISHED_AFTER = frozenset(
    {
        *DETERMINERS,
        *("his", "her", "its"),
        *("of", "for", "with", "from", "at", "into", "onto", "by", "than", "about", "between", "during", "via"),
        *("and", "or", "but", "because", "if", "although", "unless", "whether", "to"),
        *("how", "which", "whose"),
        *("uh", "um", "er", "erm", "uhm"),
    }
)
# "is" after a noun waits for its complement ("my order number is ..."); after a pronoun it is often the end
# ("yes it is", "here it is").
COPULAS = frozenset({"is", "was", "are", "were"})
PRONOUNS = frozenset({"it", "that", "this", "there", "here", "what", "which", "who", "he", "she", "they", "you", "we"})
DIGIT_WORDS = frozenset({"zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"})
# No order or phone number is shorter than this: fewer digits after "number" are the start of one.
MIN_NUMBER_DIGITS = 4
# A question may leave its preposition or "is" at the end ("who am I speaking to", "how much the headphones
# are"): after a question word, or in a sentence that opens with an auxiliary, that end is the end.
QUESTION_WORDS = frozenset({"who", "whom", "what", "which", "where", "how"})
AUXILIARIES = frozenset({"is", "are", "was", "do", "does", "did", "can", "could", "would", "will", "have", "has"})
STRANDABLE = COPULAS | {"to", "for", "with", "from", "at", "about", "of", "by", "into"}
# Words that answer a question by themselves ("Sure.", "Yes, please.", "No, thank you."). Not the hums: "Uh-huh..."
# or "Um..." may well go on.
ANSWERS = frozenset(
    {
        *("yes", "yeah", "yep", "yup", "no", "nope", "sure", "okay", "ok", "right", "alright", "fine", "great"),
        *("good", "perfect", "correct", "exactly", "absolutely", "definitely", "please", "thanks"),
    }
)
_TOKEN = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def _tokens(text: str) -> list[str]:
    """The words and numbers said, without Whisper's bracketed sounds."""
    return _TOKEN.findall(_SOUND.sub(" ", text.lower()))


def unfinished(text: str) -> bool:
    """The words stop where a sentence cannot: the caller paused in the middle of it."""
    said = _tokens(text)
    if not said:
        return False
    if text.rstrip().endswith("?"):
        return said[-1] in DETERMINERS  # else Whisper heard a question: the caller's voice rose to its end
    if text.rstrip().endswith(("...", "\u2026")):
        # Whisper's own mark of speech that trails off ("I'd like to buy a new..."); but the prompt's heads that
        # trail off have it write a lone "Sure." so too (3 of 11 Piper takes), and an answer is finished.
        return not set(" ".join(said).replace("thank you", "thanks").split()) <= ANSWERS
    last, before = said[-1], said[-2] if len(said) > 1 else ""
    if last in STRANDABLE and (said[0] in AUXILIARIES or QUESTION_WORDS.intersection(said[:-1])):
        return False
    if last in UNFINISHED_AFTER or (last == "like" and before in ("would", "i'd")):
        return True
    if last.endswith("'s"):
        return True  # "the number's ...", "it's ...": a contracted "is" has its complement after it
    if last in COPULAS and before and before not in PRONOUNS:
        return True
    return _number_begun(said)


def heard_unfinished(text: str) -> bool:
    """What Whisper wrote of a turn stops mid-sentence: by its words (`unfinished`), or because Whisper closed
    it with no full stop, question or exclamation mark, as it writes speech that goes on ("I'd like to buy a
    new"; none of 414 finished sentences, Piper and espeak-ng through the phone, came back so)."""
    stripped = text.rstrip()
    return unfinished(stripped) or (bool(_tokens(stripped)) and not stripped.endswith((".", "?", "!", "\u2026")))


def _number_begun(said: list[str]) -> bool:
    """ "... number is four five": the digits said after "number" are too few to be one yet."""
    digits, n = 0, len(said)
    while n and (said[n - 1] in DIGIT_WORDS or said[n - 1].isdigit()):
        n -= 1
        digits += 1 if said[n] in DIGIT_WORDS else len(said[n])
    return 0 < digits < MIN_NUMBER_DIGITS and "number" in said[max(0, n - 3) : n]
