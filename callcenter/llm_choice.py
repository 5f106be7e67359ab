"""Which LLM serves the agents: built from config and the words of callcenter.llm_spec, with "auto" probing Ollama,
then the local model, at start-up."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field

from callcenter.config import Config, LLMConfig
from callcenter.llm_spec import LLMSpec, parse_llm, served
from callcenter.local_model import local_server, missing_local_model
from speech import ModelError
from swarm import Provider, ProviderError, Registry, resolve_tool_mode
from swarm.providers import LocalProvider, OpenAIProvider
from swarm.providers.ollama import OllamaProvider, check_ollama

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LLMChoice:
    """One provider per agent (None: the offline router), and a line saying what was chosen and why."""

    per_agent: dict[str, Provider | None]
    description: str
    # Local servers this process runs: stopped by close().
    local: tuple[LocalProvider, ...] = field(default=())

    def close(self) -> None:
        for provider in self.local:
            provider.server.stop()


def _ollama(llm: LLMConfig, model: str) -> OllamaProvider:
    return OllamaProvider(
        llm.host,
        model,
        options=dict(llm.options),
        timeout=llm.timeout,
        native_tools=llm.native_tools,
        name=f"ollama:{model}",
        tool_mode=resolve_tool_mode(llm.tool_mode, "ollama", llm.native_tools),
    )


def _openai(llm: LLMConfig, model: str) -> Provider:
    return OpenAIProvider(
        model,
        llm.base_url,
        api_key=os.environ.get(llm.api_key_env, "unused"),
        timeout=llm.timeout,
        name=f"openai:{model}",
        tool_mode=resolve_tool_mode(llm.tool_mode, "openai"),
    )


async def _local(llm: LLMConfig, agents: tuple[str, ...], why: str) -> LLMChoice:
    """Start the local model's server (joining its file on first use); raises ProviderError or ModelError."""
    # A slot per agent and call at once, each agent's requests pinned to its own (LocalProvider.slots) in the
    # call's lane (swarm.providers.local.Lanes): calls' turns run at once, batched, never on a cold slot.
    server = await asyncio.to_thread(
        local_server,
        llm.local_model,
        threads=llm.local_threads,
        batch_threads=llm.local_batch_threads,
        ctx=llm.local_ctx,
        parallel=len(agents) * llm.local_parallel_calls,
    )
    provider = LocalProvider(
        server,
        model=server.spec.name,
        timeout=llm.timeout,
        name=f"local:{server.spec.name}",
        tool_mode=resolve_tool_mode(llm.tool_mode, "local"),
        slots={agent: slot for slot, agent in enumerate(agents)},
        lanes=llm.local_parallel_calls,
    )
    await provider.start()
    description = (
        f"local model {server.spec.name} (llama.cpp on {server.url}, {llm.local_threads} threads, "
        f"{llm.local_batch_threads} reading prompts){why}"
    )
    return LLMChoice(dict.fromkeys(agents, provider), description, (provider,))


def chosen(config: Config, spec: str | LLMSpec | None = None) -> tuple[LLMSpec, LLMConfig]:
    """The LLM named (`spec`, else the config's [llm] provider) and the [llm] settings with its words on top."""
    named = served(spec if isinstance(spec, LLMSpec) else parse_llm(spec or config.llm.provider))
    return named, config.llm.choosing(named)


async def choose_llm(config: Config, agents: tuple[str, ...], spec: str | LLMSpec | None = None) -> LLMChoice:
    """Build the providers of the LLM named (`spec`, else the config's); "auto" takes Ollama when it answers with
    the model, else the local model when its packages are installed, else the offline router, and the
    description says why. Raises LLMSpecError, ProviderError or ModelError."""
    named, llm = chosen(config, spec)
    kind = named.kind
    if kind == "auto":
        no_ollama = await check_ollama(llm.host, llm.model)
        if no_ollama is None:
            kind = "ollama"
        elif missing := missing_local_model(llm.local_model):
            return LLMChoice(dict.fromkeys(agents), f"offline router ({no_ollama}; {missing})")
        else:
            try:
                return await _local(llm, agents, f", because {no_ollama}")
            except (ProviderError, ModelError) as error:
                return LLMChoice(
                    dict.fromkeys(agents), f"offline router ({no_ollama}; the local model failed: {error})"
                )
    if kind == "offline":
        return LLMChoice(dict.fromkeys(agents), "offline router (no LLM)")
    if kind == "local":
        return await _local(llm, agents, "")
    make = _ollama if kind == "ollama" else _openai
    built: dict[str, Provider] = {}
    per_agent: dict[str, Provider | None] = {}
    for agent in agents:
        model = llm.agent_models.get(agent, llm.model)
        per_agent[agent] = built.setdefault(model, make(llm, model))
    where = llm.host if kind == "ollama" else llm.base_url
    return LLMChoice(per_agent, f"{kind} at {where} with {', '.join(sorted(built))}")


async def check_llm(config: Config) -> str | None:
    """None when the configured LLM server answers, else why not (for `voiceswarm config --check`)."""
    named, llm = chosen(config)
    if named.kind == "offline":
        return None
    if named.kind == "local":
        return missing_local_model(llm.local_model)
    if named.kind == "openai":
        import httpx

        try:
            async with httpx.AsyncClient(timeout=3.0) as client:
                response = await client.get(llm.base_url.rstrip("/") + "/models")
            return None if response.status_code < 400 else f"{llm.base_url} answered HTTP {response.status_code}"
        except httpx.HTTPError as error:
            return f"no OpenAI-compatible server answers at {llm.base_url}: {error}"
    if named.kind == "auto":
        no_ollama = await check_ollama(llm.host, llm.model)
        if no_ollama:  # then the local model serves, as choose_llm decides
            missing = missing_local_model(llm.local_model)
            return f"{no_ollama}; {missing}" if missing else None
    for model in {llm.model, *llm.agent_models.values()}:
        problem = await check_ollama(llm.host, model)
        if problem:
            return problem
    return None


async def prefill(registry: Registry, swarm: str, llm_choice: LLMChoice) -> None:
    """Put each agent's first prompt (system prompt and tools) into its local server's prompt cache, so the
    first caller's first turn costs what the tenth caller's does."""
    if not llm_choice.local:
        return
    session = registry.session("prefill", swarm)
    try:
        for name, provider in llm_choice.per_agent.items():
            if isinstance(provider, LocalProvider):
                # The request a caller's first turn with this agent starts with, built by the session itself.
                await provider.prefill(session.completion_request(registry.agents[name]))
    finally:
        session.dispose()
