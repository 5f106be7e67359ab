"""What one call says and how long it waits: the call rules' prepared lines and clocks, and the hearing's waits."""

from __future__ import annotations

from dataclasses import dataclass

from callcenter.acknowledgement import Fillers
from callcenter.config import VoiceConfig


def _mid_sentence_wait_s(voice: VoiceConfig) -> float | None:
    """From the end of the turn (end_silence_ms after the voice) up to turn_max_silence_ms after it."""
    return (voice.turn_max_silence_ms - voice.end_silence_ms) / 1000 if voice.mid_sentence_wait else None


def _fillers(voice: VoiceConfig) -> Fillers | None:
    if not voice.acknowledge_after_ms:
        return None
    return Fillers(voice.acknowledge_after_ms / 1000, voice.still_working_ms / 1000)


DEFAULT_FILLERS = _fillers(VoiceConfig())


@dataclass(frozen=True)
class VoiceSettings:
    """What one call says and how long it waits. The fields [voice] configures take their defaults from
    VoiceConfig, so each default is written once (config.py); the rest are not configurable."""

    greeting: str = VoiceConfig.greeting
    reprompt_after_s: float = VoiceConfig.reprompt_after_s
    reprompts_before_hangup: int = VoiceConfig.reprompts_before_hangup
    reprompt: str = "Are you still there? How can I help you?"
    silence_goodbye: str = "I can't hear anything, so I'll end the call now. Please call again. Goodbye."
    repeat: str = "Sorry, I didn't catch that. Could you say it again?"
    max_call_s: float = VoiceConfig.max_call_s
    max_call_goodbye: str = "I'm sorry, we have to end the call here. Please call again. Goodbye."
    # Where a person takes over (a number or SIP URI of the operator queue); None: nobody.
    operator: str | None = VoiceConfig.operator or None
    handover: str = "Please hold, I'm putting you through to a colleague."
    no_operator: str = "I'm sorry, no colleague can take your call right now. Please call again later. Goodbye."
    # A call the node took over its admission limits (voice.overload = "transfer") hears this instead of the greeting.
    overload_notice: str = "All our agents are busy, I'm putting you through to a colleague."
    # Digits a tool asked for end with #, at the tool's maximum, or after this pause.
    digit_timeout_s: float = 3.0
    digits_not_taken: str = "Sorry, I couldn't use those digits. Could you say the number instead?"
    early_reply: bool = VoiceConfig.early_reply
    # A turn whose words stop mid-sentence ("my order number is ...") waits this much longer for the rest
    # (None: answered at once): up to turn_max_silence_ms after the caller's voice.
    mid_sentence_wait_s: float | None = _mid_sentence_wait_s(VoiceConfig())
    # What a slow answer's silence is filled with (callcenter.acknowledgement); None: nothing.
    fillers: Fillers | None = DEFAULT_FILLERS

    @classmethod
    def from_config(cls, voice: VoiceConfig) -> VoiceSettings:
        """The one mapping from [voice] to a call's settings."""
        return cls(
            greeting=voice.greeting,
            operator=voice.operator or None,
            reprompt_after_s=voice.reprompt_after_s,
            reprompts_before_hangup=voice.reprompts_before_hangup,
            max_call_s=voice.max_call_s,
            early_reply=voice.early_reply,
            mid_sentence_wait_s=_mid_sentence_wait_s(voice),
            fillers=_fillers(voice),
        )
