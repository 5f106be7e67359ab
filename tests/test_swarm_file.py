"""The swarm file: the packaged demo swarm read from TOML, a call centre's own file, and its mistakes named by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from callcenter.agents import SWARM, build_registry
from callcenter.config import ConfigError, load_config
from callcenter.shop import Shop
from callcenter.swarm_file import SwarmFile, SwarmFileError, load_swarm_file, parse_swarm_file
from swarm.events import ToolCalled

PACKAGED = Path(__file__).parent.parent / "callcenter" / "data" / "swarm.toml"
CALLER = "+49 170 1234567"


def packaged_text() -> str:
    return PACKAGED.read_text(encoding="utf-8")


def line_of(text: str, fragment: str, after: str = "") -> int:
    """The line of the first `fragment` after the line holding `after`: where a mistake was put in."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines[start:], start + 1) if fragment in line)


def registry_of(text: str) -> None:
    with Shop(":memory:") as shop:
        build_registry(shop, {}, swarm=parse_swarm_file(text, "own.toml"))


def test_the_packaged_file_is_the_demo_shops_swarm() -> None:
    swarm = load_swarm_file()
    assert (tuple(swarm.agents), swarm.default_agent) == (("triage", "sales", "refund"), "triage")
    with Shop(":memory:") as shop:
        registry = build_registry(shop, {})
    triage, sales, refund = (registry.agents[name] for name in swarm.agents)
    assert triage.tool_only and not triage.tool_on_entry
    assert sales.tool_on_entry and refund.tool_on_entry and not sales.tool_only
    assert sales.system == refund.system == (swarm.rules,) and "phone call" in swarm.rules
    assert registry.swarms[SWARM].default_agent == "triage"
    # The hand-overs are heard on the phrases of the lookup the agent then makes.
    assert registry.tools["navigate_to_sales"].examples == registry.tools["search_products"].examples
    assert registry.tools["navigate_to_refund"].examples == registry.tools["find_order"].examples
    assert "navigate_to_triage" not in registry.tools  # nobody hands over to triage


@pytest.mark.parametrize(
    ("change", "mistake", "after", "problem"),
    [
        (("\"search_products\",\n", "\"search_product\",\n"), '"search_product"', "[agents.sales]", "unknown tool"),
        (("\"navigate_to_sales\", \"navigate_back\"", "\"navigate_to_shop\", \"navigate_back\""), "navigate_to_shop", "",
         "hands over to 'shop', which is no agent"),
    ],
)  # fmt: skip
def test_a_wrong_name_is_named_with_its_line(change: tuple[str, str], mistake: str, after: str, problem: str) -> None:
    text = packaged_text()
    assert change[0] in text
    text = text.replace(change[0], change[1], 1)
    with pytest.raises(SwarmFileError, match=rf"own\.toml line {line_of(text, mistake, after)}: .*{problem}"):
        registry_of(text)


def test_shape_mistakes_are_named_with_their_line() -> None:
    text = packaged_text().replace("look_first = true", "look_frist = true", 1)
    with pytest.raises(
        SwarmFileError, match=rf"line {line_of(text, 'look_frist')}: unknown key 'agents.sales.look_frist'"
    ):
        parse_swarm_file(text, "own.toml")
    text = packaged_text().replace('default_agent = "triage"', 'default_agent = "reception"')
    with pytest.raises(SwarmFileError, match=rf"line {line_of(text, 'default_agent =')}: default_agent 'reception'"):
        parse_swarm_file(text, "own.toml")
    with pytest.raises(SwarmFileError, match=r"not valid TOML.*line 2"):
        parse_swarm_file('default_agent = "a"\nrules = \n', "own.toml")


FOURTH_AGENT = """
[agents.status]
tools = ["find_order", "navigate_back", "transfer_to_operator", "end_call"]
look_first = true
unclear = "Which order would you like to know about?"
hand_over = "Hand the caller over to order status when they ask where their order is."
hand_over_phrases = ["where is my order", "has my order shipped", "order status", "tracking"]
prompt = "You tell callers where their order is. Call find_order with the order number they say."
"""


def with_fourth_agent() -> str:
    text = packaged_text() + FOURTH_AGENT
    triage = '"end_call", "ask_buy_or_return"]'
    text = text.replace(triage, '"end_call", "ask_buy_or_return", "navigate_to_status"]', 1)
    # "order" is also a sales word: the status phrases, longer, win the tie.
    return text.replace(
        'precedence = ["transfer_to_operator",', 'precedence = ["navigate_to_status", "transfer_to_operator",'
    )


async def test_a_fourth_agent_from_the_file_takes_calls_without_python() -> None:
    swarm = parse_swarm_file(with_fourth_agent(), "own.toml")
    with Shop(":memory:") as shop:
        registry = build_registry(shop, {}, swarm=swarm)  # every agent on the offline router
        session = registry.session("call-1", SWARM, metadata={"caller": CALLER})
        reply = await session.complete("Hi, where is my order? I'd like the order status.")
    assert session.get_agent_name() == "status"
    # Handed the caller, it looks first (look_first): its one tool, on the caller's words; the reply is that tool's.
    called = [(e.agent, e.name) for e in session.events if isinstance(e, ToolCalled)]
    assert called == [("triage", "navigate_to_status"), ("status", "find_order")]
    assert "order number" in reply


def test_the_config_names_the_file_and_takes_its_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "swarm.toml"
    own.write_text(with_fourth_agent().replace('operator = ""', 'operator = "sip:queue@pbx.example"'))
    config_file = tmp_path / "voiceswarm.toml"
    config_file.write_text(f'[swarm]\nfile = "{own}"\n')
    monkeypatch.delenv("VOICESWARM_OPERATOR", raising=False)
    config = load_config(config_file, environ={})
    assert config.voice.operator == "sip:queue@pbx.example"
    assert load_config(config_file, environ={"VOICESWARM_OPERATOR": "200"}).voice.operator == "200"
    assert load_config(None, environ={}).voice.operator == ""  # the packaged file names nobody

    text = own.read_text().replace('"find_order", "navigate_back"', '"find_orders", "navigate_back"')
    own.write_text(text)
    with pytest.raises(ConfigError, match=rf"swarm\.toml line {line_of(text, 'find_orders')}: .*unknown tool"):
        load_config(config_file, environ={})


def test_every_mistake_is_listed_at_once() -> None:
    text = packaged_text().replace('"place_order",', '"place_orders",').replace('"create_return",', '"create_returns",')
    with pytest.raises(SwarmFileError) as caught:
        registry_of(text)
    assert str(caught.value).count("unknown tool") == 2


def test_the_file_is_a_frozen_value() -> None:
    swarm = load_swarm_file()
    assert isinstance(swarm, SwarmFile)
    with pytest.raises(AttributeError):
        swarm.default_agent = "sales"  # type: ignore[misc]
