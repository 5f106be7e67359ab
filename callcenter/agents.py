"""The shop's swarm: triage hands over to sales or refund, which call tools against the shop."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callcenter.shop import Shop
from callcenter.shop_tools import OPERATOR_PHRASES, PRECEDENCE, RETURN_PHRASES, SALES_PHRASES, shop_tools
from swarm.providers.base import Provider
from swarm.providers.offline import OfflineRouter
from swarm.registry import Agent, Registry, SwarmSpec, navigate_back_tool, navigate_tool
from swarm.tools import Tool, ToolContext

SWARM = "shop"

# Rules every agent follows: the caller hears these replies through a phone speaker.
VOICE_RULES = (
    "You are on a phone call. The caller hears your words through text-to-speech. "
    "Speak in one to three short sentences. Never use lists, markdown, JSON, emoji or abbreviations. "
    "Say prices in words, like twenty four euros ninety. Do not read out product codes unless asked. "
    "Never invent products, prices, stock or orders: only say what the tools return. "
    "When a tool result has a 'say' field, you may say it as it is."
)

TRIAGE_PROMPT = (
    "You are the first voice of an online shop's phone line. Find out whether the caller wants to buy "
    "something or to return something they bought. If they want to buy, call navigate_to_sales. If they want "
    "a return, refund, exchange, or have a problem with an order, call navigate_to_refund. If they ask for a "
    "person, call transfer_to_operator. If it is unclear, ask one short question: buy or return?"
)

SALES_PROMPT = (
    "You are the shop's sales assistant. Use search_products to find what the caller wants and tell them the "
    "price and whether it is in stock. To order, call place_order without confirmed first; it reads the order "
    "back. Only after the caller clearly says yes, call place_order again with confirmed true. Then tell them "
    "the order number. If the caller wants to return something instead, call navigate_back."
)

REFUND_PROMPT = (
    "You are the shop's returns assistant. Use find_order to find the caller's order, by the order number if "
    "they give one, otherwise by their phone number, which the tool knows, and the product they name. Read back "
    "which item from which order will be returned. Only after the caller clearly says yes, call create_return "
    "with confirmed true, then tell them the return number. If the caller wants to buy something instead, "
    "call navigate_back."
)

UNCLEAR = {
    "triage": "Would you like to buy something, or return something you bought?",
    "sales": "What product are you looking for?",
    "refund": "Which item would you like to return? The order number helps if you have it.",
}


def transfer_to_operator_tool() -> Tool:
    async def call(arguments: dict[str, Any], context: ToolContext) -> dict[str, str]:
        # The voice layer sees the escalation and transfers the call once this sentence is spoken.
        context.session.escalation = "the caller asked for a person"
        return {"say": "Of course. I'll put you through to a colleague now, please hold."}

    return Tool(
        "transfer_to_operator",
        "Transfer the caller to a human colleague, when they ask for a person or you cannot help.",
        {"type": "object", "properties": {}},
        call,
        examples=OPERATOR_PHRASES,
    )


AGENTS = ("triage", "sales", "refund")


def end_call_tool() -> Tool:
    async def call(arguments: dict[str, Any], context: ToolContext) -> dict[str, str]:
        # The voice layer hangs up once this goodbye has been played.
        context.session.ending = "the agent ended the call"
        return {"say": "Thank you for calling. Goodbye!"}

    return Tool(
        "end_call",
        "End the call politely, when the caller has what they needed and says goodbye.",
        {"type": "object", "properties": {}},
        call,
        examples=("goodbye", "bye", "that's all", "nothing else", "no thanks that's it", "thank you bye"),
    )


def build_registry(shop: Shop, brains: Mapping[str, Provider | None], *, fallback_to_offline: bool = False) -> Registry:
    """The registry for the shop swarm; an agent whose brain is None is served by the offline router."""
    registry = Registry()
    tools = [
        navigate_tool("sales", "Hand the caller over to sales when they want to buy something.", SALES_PHRASES),
        navigate_tool("refund", "Hand the caller over to returns when they want to return, refund or exchange.", RETURN_PHRASES),
        navigate_back_tool(),
        transfer_to_operator_tool(),
        end_call_tool(),
        *shop_tools(shop),
    ]
    for tool in tools:
        registry.add_tool(tool)
    # The router's phrases come from the tools themselves, so both brains share one vocabulary.
    registry.add_completion("offline", OfflineRouter({t.name: t.examples for t in tools}, UNCLEAR, precedence=PRECEDENCE))
    agents = {
        "triage": (TRIAGE_PROMPT, ("navigate_to_sales", "navigate_to_refund", "transfer_to_operator", "end_call")),
        "sales": (SALES_PROMPT, ("search_products", "place_order", "navigate_to_refund", "navigate_back", "transfer_to_operator", "end_call")),
        "refund": (REFUND_PROMPT, ("find_order", "create_return", "navigate_to_sales", "navigate_back", "transfer_to_operator", "end_call")),
    }
    for name, (prompt, tool_names) in agents.items():
        provider = brains.get(name)
        completion, fallback = "offline", None
        if provider is not None:
            if provider.name not in registry.completions:
                registry.add_completion(provider.name, provider)
            completion, fallback = provider.name, ("offline" if fallback_to_offline else None)
        registry.add_agent(Agent(name, prompt, completion, tool_names, (VOICE_RULES,), fallback))
    registry.add_swarm(SwarmSpec(SWARM, AGENTS, "triage"))
    registry.check()
    return registry
