"""Which LLM serves the agents: built from config, with "auto" probing Ollama once at start-up."""
from __future__ import annotations

import os
from dataclasses import dataclass

from callcenter.config import Config, LLMConfig
from swarm.providers.base import Provider
from swarm.providers.ollama import OllamaProvider, check_ollama


@dataclass(frozen=True)
class Brains:
    """One provider per agent (None: the offline router), and a line saying what was chosen."""

    per_agent: dict[str, Provider | None]
    description: str


def _ollama(llm: LLMConfig, model: str) -> OllamaProvider:
    return OllamaProvider(
        llm.host, model, options=dict(llm.options), timeout=llm.timeout, native_tools=llm.native_tools,
        name=f"ollama:{model}",
    )


def _openai(llm: LLMConfig, model: str) -> Provider:
    from swarm.providers.openai_compat import OpenAIProvider

    return OpenAIProvider(model, llm.base_url, api_key=os.environ.get(llm.api_key_env, "unused"), timeout=llm.timeout, name=f"openai:{model}")


async def choose_brains(config: Config, agents: tuple[str, ...], provider: str | None = None) -> Brains:
    """Build the providers; with "auto", Ollama when it answers with the model, else the offline router."""
    llm = config.llm
    kind = provider or llm.provider
    if kind == "auto":
        problem = await check_ollama(llm.host, llm.model)
        if problem:
            return Brains({a: None for a in agents}, f"offline router ({problem})")
        kind = "ollama"
    if kind == "offline":
        return Brains({a: None for a in agents}, "offline router (no LLM)")
    make = _ollama if kind == "ollama" else _openai
    built: dict[str, Provider] = {}
    per_agent: dict[str, Provider | None] = {}
    for agent in agents:
        model = llm.agent_models.get(agent, llm.model)
        per_agent[agent] = built.setdefault(model, make(llm, model))
    where = llm.host if kind == "ollama" else llm.base_url
    return Brains(per_agent, f"{kind} at {where} with {', '.join(sorted(built))}")


async def check_llm(config: Config) -> str | None:
    """None when the configured LLM server answers, else why not (for `voiceswarm config --check`)."""
    llm = config.llm
    if llm.provider == "offline":
        return None
    if llm.provider == "openai":
        import httpx

        try:
            async with httpx.AsyncClient(timeout=3.0) as client:
                response = await client.get(llm.base_url.rstrip("/") + "/models")
            return None if response.status_code < 400 else f"{llm.base_url} answered HTTP {response.status_code}"
        except httpx.HTTPError as error:
            return f"no OpenAI-compatible server answers at {llm.base_url}: {error}"
    for model in {llm.model, *llm.agent_models.values()}:
        problem = await check_ollama(llm.host, model)
        if problem:
            return problem
    return None
