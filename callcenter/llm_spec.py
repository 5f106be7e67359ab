"""The words that name an LLM, the same in the config (`[llm] provider`, VOICESWARM_LLM), on `--llm` of chat, serve
and web, and in `voiceswarm eval --llm`:

    auto                          Ollama when it answers, else the local model, else the offline router
    offline                       the offline router, no LLM
    local[:0.5b|1.5b|FILE.gguf]   llama.cpp run by VoiceSwarm; without a model, [llm] local_model
    ollama[:MODEL]                Ollama at [llm] host; without a model, [llm] model and [llm.agents]
    openai[:MODEL[@URL]]          an OpenAI-compatible server; without a URL, [llm] base_url
    scripted:FILE                 a scripted LLM's rules (TOML), for the testbed: eval and agent_under_test

A model named here serves every agent. What the words leave out comes from `[llm]` (config.LLMConfig.choosing).
"""

from __future__ import annotations

from dataclasses import dataclass

from callcenter.errors import CallCenterError
from callcenter.local_model import PACKAGED

KINDS = ("auto", "offline", "local", "ollama", "openai", "scripted")
LOCAL_ALIASES = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}
# What the service (config, chat, serve, web) runs; the testbed also a scripted LLM.
SERVED = "auto, offline, local[:0.5b|1.5b|FILE.gguf], ollama[:MODEL], openai[:MODEL[@URL]]"
USAGE = f"{SERVED} or scripted:FILE"


class LLMSpecError(CallCenterError):
    """Words that name no LLM; the message says which part is wrong and what is expected."""


@dataclass(frozen=True)
class LLMSpec:
    text: str  # as given: the LLM's name in reports
    kind: str  # one of KINDS
    model: str = ""  # ollama's or openai's model, local's packaged model or .gguf file; "": from [llm]
    url: str = ""  # openai's base URL; "": [llm] base_url
    file: str = ""  # scripted's rules


def parse_llm(text: str) -> LLMSpec:
    """The LLM `text` names; raises LLMSpecError."""
    kind, colon, rest = text.partition(":")
    if kind not in KINDS:
        raise LLMSpecError(f"unknown LLM {text!r}; use {USAGE}")
    if colon and not rest:
        raise LLMSpecError(f"LLM {text!r}: nothing after the colon; use {USAGE}")
    if kind in ("auto", "offline"):
        if colon:
            raise LLMSpecError(f"LLM {text!r}: {kind} takes no model; use {USAGE}")
        return LLMSpec(text, kind)
    if kind == "local":
        model = LOCAL_ALIASES.get(rest, rest)
        if model and model not in PACKAGED and not model.endswith(".gguf"):
            raise LLMSpecError(
                f"LLM {text!r}: the local model is {', '.join(LOCAL_ALIASES)}, {' or '.join(PACKAGED)}, "
                f"or the path of a .gguf file"
            )
        return LLMSpec(text, kind, model)
    if kind == "ollama":
        return LLMSpec(text, kind, rest)
    if kind == "openai":
        model, at, url = rest.partition("@")
        if at and not (model and url.startswith(("http://", "https://"))):
            raise LLMSpecError(f"LLM {text!r}: use openai:MODEL@URL, the URL starting with http:// or https://")
        return LLMSpec(text, kind, model, url)
    if not rest:
        raise LLMSpecError(f"LLM {text!r}: name the scripted LLM's rules, scripted:FILE")
    return LLMSpec(text, kind, file=rest)


def served(spec: LLMSpec) -> LLMSpec:
    """`spec`, if the service (config, chat, serve, web) can run it: any LLM but a scripted one. Raises LLMSpecError."""
    if spec.kind == "scripted":
        raise LLMSpecError(
            f"LLM {spec.text!r}: a scripted LLM answers only in the testbed (eval --llm, agent_under_test)"
        )
    return spec
