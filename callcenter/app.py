"""Assembles the application from config: the shop, the LLM choice and the swarm registry."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from callcenter.agents import SWARM, build_registry
from callcenter.config import Config
from callcenter.http_shop import HttpShop
from callcenter.llm_choice import LLMChoice, choose_llm, prefill
from callcenter.shop import Shop
from callcenter.shop_backend import ShopBackend
from callcenter.swarm_file import load_swarm_file
from swarm.registry import Registry
from swarm.session import Session


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


async def open_app(config: Config, provider: str | None = None) -> App:
    # Migrations and the catalogue may wait for a database server: not on the event loop.
    shop = await asyncio.to_thread(
        Shop, config.database, config.catalogue or None, phone_region=config.callers.phone_region
    )
    backend: ShopBackend = shop
    if config.shop_http is not None:
        backend = HttpShop(config.shop_http, phone_region=config.callers.phone_region)
    swarm = load_swarm_file(config.swarm.file or None)
    llm_choice = await choose_llm(config, tuple(swarm.agents), provider)
    registry = build_registry(
        backend,
        llm_choice.per_agent,
        fallback_to_offline=config.llm.fallback == "offline",
        route_first=config.llm.route_first,
        verification=config.callers,
        swarm=swarm,
    )
    await prefill(registry, SWARM, llm_choice)
    return App(config, shop, registry, llm_choice.description, llm_choice, backend)
