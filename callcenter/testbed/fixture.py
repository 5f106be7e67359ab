"""The agents under test, for a call centre's own pytest tests:

    async with agent_under_test("offline", orders={"kettle": [("KT-410", 1)]}) as s:
        r = await s.run("I want to return my kettle")
        r.expect.handoff("refund").called("find_order")

`llm` is any LLM `voiceswarm eval` takes, or pass `providers` (agent -> Provider) to reuse a model
already loaded; `swarm` (or `config`'s [swarm] file) is the call centre's own swarm file. The shop is a fresh SQLite file with the given past orders; `s.orders` holds their numbers.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from callcenter.agents import SWARM
from callcenter.app import agents_registry
from callcenter.config import Config
from callcenter.llm_spec import parse_llm
from callcenter.shop import Shop
from callcenter.swarm_file import SwarmFile, load_swarm_file
from callcenter.testbed.llms import open_llm
from callcenter.testbed.scenario import DEFAULT_CALLER, Scenario, SeedOrder
from callcenter.testbed.state import prepare_shop
from callcenter.testbed.textcall import Expect, TextCall, TurnResult
from swarm import Provider


@dataclass
class AgentUnderTest:
    call: TextCall
    shop: Shop
    orders: dict[str, str] = field(default_factory=dict)  # setup order name -> its order number

    async def run(self, text: str) -> TurnResult:
        """The caller says `text`; the result holds the reply and this turn's events, with `.expect`."""
        return await self.call.say(text)

    async def dtmf(self, keys: str) -> TurnResult:
        return await self.call.dtmf(keys)

    def silence(self, seconds: float) -> TurnResult:
        return self.call.silence(seconds)

    @property
    def expect(self) -> Expect:
        """Assertions over the whole call so far."""
        return Expect(self.call.events)

    @property
    def agent(self) -> str:
        return self.call.session.get_agent_name()


@contextlib.asynccontextmanager
async def agent_under_test(
    llm: str = "offline",
    *,
    providers: Mapping[str, Provider | None] | None = None,
    caller: str = DEFAULT_CALLER,
    orders: Mapping[str, Sequence[tuple[str, int]]] | None = None,
    sold_out: Sequence[str] = (),
    folder: Path | None = None,
    config: Config | None = None,
    swarm: SwarmFile | None = None,
) -> AsyncIterator[AgentUnderTest]:
    config = config or Config()
    # The swarm file given, else the config's ([swarm] file), else the demo shop's.
    swarm = swarm or load_swarm_file(config.swarm.file or None)
    setup = Scenario(
        "agent_under_test",
        Path("<agent_under_test>"),
        "",
        caller,
        (),
        seed_orders=tuple(SeedOrder(n, tuple(i)) for n, i in (orders or {}).items()),
        sold_out=tuple(s.upper() for s in sold_out),
    )
    with contextlib.ExitStack() as stack:
        where = folder or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agent-under-test-")))
        opened = None if providers is not None else await open_llm(parse_llm(llm), config, swarm)
        try:
            shop, values = prepare_shop(where / "shop.db", setup)
            stack.callback(shop.close)
            chosen = dict(providers) if providers is not None else opened.providers(values)  # type: ignore[union-attr]
            registry = agents_registry(config, shop, {a: chosen.get(a) for a in swarm.agents}, swarm)
            session = registry.session("agent-under-test", SWARM, metadata={"caller": caller}, config=config.session)
            names = {
                k.removeprefix("orders."): v
                for k, v in values.items()
                if k.startswith("orders.") and k.count(".") == 1  # not .spoken, .postcode
            }
            yield AgentUnderTest(TextCall(session), shop, names)
        finally:
            if opened is not None:
                opened.close()
