"""Assembles the application from config: the shop, the brains and the swarm registry."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.brains import Brains, choose_brains, prefill
from callcenter.config import Config
from callcenter.shop import Shop
from swarm.registry import Registry
from swarm.session import Session


@dataclass
class App:
    config: Config
    shop: Shop
    registry: Registry
    brain: str
    brains: Brains | None = None

    def session(self, client_id: str, caller: str = "") -> Session:
        return self.registry.session(client_id, SWARM, metadata={"caller": caller}, config=self.config.session)

    def close(self) -> None:
        self.shop.close()
        if self.brains is not None:
            self.brains.close()


async def open_app(config: Config, provider: str | None = None) -> App:
    # Migrations and the catalogue may wait for a database server: not on the event loop.
    shop = await asyncio.to_thread(Shop, config.database)
    brains = await choose_brains(config, AGENTS, provider)
    registry = build_registry(shop, brains.per_agent, fallback_to_offline=config.llm.fallback == "offline")
    await prefill(registry, SWARM, brains)
    return App(config, shop, registry, brains.description, brains)
