"""Assembles the application from config: the shop, the LLM choice and the swarm registry. `open_agents` is the
one way an LLM is opened for a swarm (`serve`, `chat`, `web`, and the testbed's `eval` and `agent_under_test`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from callcenter.agents import SWARM, build_registry
from callcenter.config import Config
from callcenter.http_shop import HttpShop
from callcenter.llm_choice import LLMChoice, choose_llm, prefill
from callcenter.llm_spec import LLMSpec
from callcenter.shop import Shop
from callcenter.shop_backend import ShopBackend
from callcenter.swarm_file import SwarmFile, load_swarm_file
from callcenter.triage_classifier import shared_classifier
from swarm import Provider, Registry, Session


@dataclass
class App:
    config: Config
    shop: Shop
    registry: Registry
    llm: str
    llm_choice: LLMChoice | None = None
    # What the agents' shop tools use: `shop`, or the call centre's order system over HTTP ([shop.http]).
    backend: ShopBackend | None = None

    def session(self, client_id: str, caller: str = "") -> Session:
        return self.registry.session(client_id, SWARM, metadata={"caller": caller}, config=self.config.session)

    def close(self) -> None:
        self.shop.close()
        if self.backend is not None and self.backend is not self.shop:
            self.backend.close()
        if self.llm_choice is not None:
            self.llm_choice.close()


def agents_registry(
    config: Config, backend: ShopBackend, providers: Mapping[str, Provider | None], swarm: SwarmFile
) -> Registry:
    """The swarm's agents on `backend`, served by `providers`, as the config's [llm] and [callers] say."""
    return build_registry(
        backend,
        providers,
        fallback_to_offline=config.llm.fallback == "offline",
        route_first=config.llm.route_first,
        verification=config.callers,
        swarm=swarm,
        classifier=shared_classifier() if config.llm.triage_classifier else None,
        operator=bool(config.voice.operator.strip()),
    )


async def open_agents(
    config: Config, backend: ShopBackend, swarm: SwarmFile, spec: str | LLMSpec | None = None
) -> tuple[LLMChoice, Registry]:
    """The LLM named (`spec`, else the config's [llm] provider) and the swarm's registry on `backend`, with each
    local server's prompt cache holding its agent's first prompt. Raises LLMSpecError, ProviderError, ModelError
    or SwarmFileError."""
    llm_choice = await choose_llm(config, tuple(swarm.agents), spec)
    try:
        registry = agents_registry(config, backend, llm_choice.per_agent, swarm)
        if config.llm.triage_classifier:
            # Loading the model and embedding its examples takes about a second: not in a caller's first turn.
            await asyncio.to_thread(shared_classifier().warm)
        await prefill(registry, SWARM, llm_choice)
    except BaseException:
        llm_choice.close()
        raise
    return llm_choice, registry


async def open_app(config: Config, provider: str | LLMSpec | None = None) -> App:
    """The application on the config's shop; `provider`: the LLM in callcenter.llm_spec's words (default: the
    config's)."""
    # Migrations and the catalogue may wait for a database server: not on the event loop.
    shop = await asyncio.to_thread(
        Shop, config.database, config.catalogue or None, phone_region=config.callers.phone_region
    )
    backend: ShopBackend = shop
    if config.shop_http is not None:
        backend = HttpShop(config.shop_http, phone_region=config.callers.phone_region)
    llm_choice, registry = await open_agents(config, backend, load_swarm_file(config.swarm.file or None), provider)
    return App(config, shop, registry, llm_choice.description, llm_choice, backend)
