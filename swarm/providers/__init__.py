"""The model back ends behind one protocol, `Provider`: a completion streamed as deltas.

On this face: `LocalProvider` (llama.cpp's server with a packaged model: `LocalServer`, `ServerSpec`),
`OpenAIProvider` (any OpenAI-compatible server), `OfflineRouter` (a keyword router for when no model answers, with a `Classifier` as its second opinion) and
`ScriptedProvider` with `reply` (tests and benchmarks). `swarm.providers.ollama` is imported from its module: its
client library (with pydantic and httpx) takes ~0.3 s to import, which every `import swarm` would pay.
"""

from swarm.providers.base import (
    Classifier,
    Completion,
    Delta,
    Provider,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
)
from swarm.providers.local import LocalProvider, LocalServer, ServerSpec
from swarm.providers.offline import OfflineRouter
from swarm.providers.openai_compat import OpenAIProvider
from swarm.providers.scripted import ScriptedProvider, reply

__all__ = [
    "Classifier",
    "Completion",
    "Delta",
    "LocalProvider",
    "LocalServer",
    "OfflineRouter",
    "OpenAIProvider",
    "Provider",
    "ProviderError",
    "ProviderTimeout",
    "ProviderUnavailable",
    "ScriptedProvider",
    "ServerSpec",
    "reply",
]
