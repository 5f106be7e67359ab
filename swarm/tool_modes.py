"""How tools reach a model: native tool calls, the `<tool_call>` text protocol, or constrained decoding."""

from __future__ import annotations

TOOL_MODES = ("native", "text", "constrained")

# The default per provider kind when the config says "auto", from benchmarks/triage_llm.py on Qwen2.5-Coder
# 1.5B behind llama.cpp's server: constrained 81% right on 32 untouched + held-out sentences (no feedback
# rounds, no JSON spoken), text 69% on 16 (it hands unclear callers over), native 75% on 20 tuning ones with
# 35 feedback rounds per 100 turns. With the one-key reply and the 1.5B prompts (callcenter/agents.py):
# constrained 91% on the 80 untouched, 90% on the 40 held-out, 78% on 40 fresh sentences, no feedback rounds.
# An OpenAI-compatible server of unknown model keeps native tool calls
# (what large models do best); Ollama too, unless the model has none (native_tools = false).
AUTO = {"local": "constrained", "openai": "native", "ollama": "native"}


def resolve_tool_mode(mode: str, provider: str, native_tools: bool = True) -> str:
    """The tool mode to use: `mode` itself, or for "auto" the measured best for this kind of provider."""
    if mode != "auto":
        if mode not in TOOL_MODES:
            raise ValueError(f"tool mode {mode!r}: use auto or one of {', '.join(TOOL_MODES)}")
        return mode
    if provider == "ollama" and not native_tools:
        return "text"
    return AUTO.get(provider, "native")
