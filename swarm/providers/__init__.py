"""The model back ends behind one protocol, `swarm.providers.base.Provider`: a completion streamed as deltas.

`local` (llama.cpp's server with a packaged model), `openai_compat` (any OpenAI-compatible server), `ollama`,
`offline` (a keyword router for when no model answers) and `scripted` (tests and benchmarks). Each pulls in its
own client library, so import the one you use from its module.
"""

from swarm.providers.base import Completion, Delta, Provider, ProviderError, ProviderTimeout, ProviderUnavailable

__all__ = ["Completion", "Delta", "Provider", "ProviderError", "ProviderTimeout", "ProviderUnavailable"]
