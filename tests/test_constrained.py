"""Constrained decoding: the reply schema, the say string streamed as it is decoded, and the providers' requests."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import pytest

from harness.fake_ollama import FakeOllama, Reply
from swarm.constrained import SayStream, constrained_prompt, reply_schema
from swarm.messages import Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, collect
from swarm.providers.ollama import OllamaProvider
from swarm.providers.openai_compat import OpenAIProvider
from tests.fake_openai import FakeServer, answering, chunk, items, request

SEARCH = ToolSpec(
    "search_products",
    "Search the catalogue.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
BACK = ToolSpec("navigate_back", "Hand the caller back.")


def test_schema_allows_say_or_a_valid_call_and_nothing_else() -> None:
    validator = jsonschema.Draft202012Validator(reply_schema((SEARCH, BACK)))
    assert validator.is_valid({"say": "Hello."})
    assert validator.is_valid({"search_products": {"query": "kettle"}})
    assert validator.is_valid({"navigate_back": {}})
    assert not validator.is_valid({"place_order": {}})  # not this agent's
    assert not validator.is_valid({"search_products": {}})  # required argument missing
    assert not validator.is_valid({"navigate_back": {"x": 1}})  # invented argument
    assert not validator.is_valid({"say": "Hi.", "navigate_back": {}})
    assert not validator.is_valid({"search_products": {"query": "a"}, "navigate_back": {}})  # one choice only
    assert not validator.is_valid({"say": ""})


async def test_a_tool_only_agent_gets_no_say_and_native_tools_are_required(server: FakeServer) -> None:
    # Triage (Agent.tool_only) routes: the 1.5B model asked "hello" said "Hello! How can I assist you today?".
    validator = jsonschema.Draft202012Validator(reply_schema((SEARCH, BACK), say=False))
    assert validator.is_valid({"navigate_back": {}}) and not validator.is_valid({"say": "Hello."})
    server.handler = answering([chunk({"content": '{"navigate_back": {}}'})])
    asked = replace(request(Message("user", "hi"), tools=(SEARCH, BACK)), tool_required=True)
    for mode in ("constrained", "native"):
        provider = OpenAIProvider("m", server.base_url, tool_mode=mode, timeout=5)
        await items(provider, asked)
        await provider.aclose()
    constrained, native = server.requests
    assert constrained["response_format"]["json_schema"]["schema"] == reply_schema((SEARCH, BACK), say=False)
    # The prompt is the agent's usual one (the server's cache holds it); only the grammar forbids speech.
    assert constrained["messages"][0]["content"] == constrained_prompt((SEARCH, BACK))
    assert native["tool_choice"] == "required" and "tool_choice" not in server.requests[0]


def test_first_sentence_is_out_before_the_reply_is_complete() -> None:
    reply = '{\n  "say": "Sure, we have it. It costs \\"twenty\\" euros\\u0021 Shall I order it?"\n}'
    stream = SayStream()
    given = [stream.feed(ch) for ch in reply]
    joined = "".join(given)
    assert joined == 'Sure, we have it. It costs "twenty" euros! Shall I order it?'
    # "Sure, we have it." was given out while more than half of the JSON was still to come.
    cut = next(i for i in range(len(given)) if "".join(given[: i + 1]).startswith("Sure, we have it."))
    assert cut < len(reply) / 2
    assert stream.finish(["search_products"]) == (joined, ())


def test_a_call_is_never_given_out_as_speech() -> None:
    stream = SayStream()
    reply = '{"search_products": {"query": "say \\"hi\\""}}'
    assert "".join(stream.feed(ch) for ch in reply) == ""
    assert stream.finish(["search_products"]) == ("", (ToolCall("call_0", "search_products", {"query": 'say "hi"'}),))


def test_a_reply_cut_by_the_token_limit_keeps_what_was_said() -> None:
    stream = SayStream()
    stream.feed('{"say": "Hello there. And then and then and')
    assert stream.finish([]) == ("Hello there. And then and then and", ())


async def test_openai_constrained_request_and_streamed_say(server: FakeServer) -> None:
    pieces = ['{"say": "Hello', " there.", " How can", ' I help?"}']
    server.handler = answering([chunk({"content": p}) for p in pieces])
    provider = OpenAIProvider("m", server.base_url, tool_mode="constrained", timeout=5)
    got = await items(provider, request(Message("system", "You sell."), Message("user", "hi"), tools=(SEARCH,)))
    await provider.aclose()
    assert [i.text for i in got if isinstance(i, Delta)] == ["Hello", " there.", " How can", " I help?"]
    assert got[-1] == Completion("Hello there. How can I help?")
    sent = server.requests[0]
    assert "tools" not in sent and sent["max_tokens"] == 256
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == reply_schema((SEARCH,))
    assert "search_products" in sent["messages"][1]["content"]


async def test_openai_text_protocol_parses_blocks_and_never_streams_them(server: FakeServer) -> None:
    pieces = [
        "One moment. <tool",
        '_call>{"name": "search_products", ',
        '"arguments": {"query": "kettle"}}</tool_call>',
    ]
    server.handler = answering([chunk({"content": p}) for p in pieces])
    provider = OpenAIProvider("m", server.base_url, tool_mode="text", timeout=5)
    history = request(
        Message("user", "kettle?"),
        Message("assistant", "", tool_calls=(ToolCall("c0", "search_products", {"query": "tea"}),)),
        Message("tool", "none", tool_name="search_products"),
        tools=(SEARCH,),
    )
    got = await items(provider, history)
    await provider.aclose()
    assert "".join(i.text for i in got if isinstance(i, Delta)).strip() == "One moment."
    assert got[-1] == Completion("One moment.", (ToolCall("call_0", "search_products", {"query": "kettle"}),))
    sent = server.requests[0]
    assert "tools" not in sent and [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert "<tool_call>" in sent["messages"][2]["content"] and "<tool_response" in sent["messages"][3]["content"]


async def test_ollama_constrained_sends_the_schema_as_format() -> None:
    async with FakeOllama([Reply('{"navigate_back": {}}')]) as fake:
        done = await collect(
            OllamaProvider(fake.url, "qwen3:4b", tool_mode="constrained", timeout=5),
            request(Message("user", "I want a return"), tools=(SEARCH, BACK)),
        )
    assert done == Completion("", (ToolCall("call_0", "navigate_back", {}),))
    sent = fake.requests[0]
    assert sent["format"] == reply_schema((SEARCH, BACK)) and not sent.get("tools")
    assert sent["options"]["num_predict"] == 256


def test_unknown_tool_mode_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="tool_mode"):
        OpenAIProvider("m", "http://127.0.0.1:9/v1", tool_mode="guess")
    assert json.dumps(reply_schema(()))  # no tools: only speech


def test_auto_tool_mode_is_the_measured_default_per_provider_and_config_checks_it() -> None:
    from callcenter.config import ConfigError, load_config
    from swarm.tool_modes import AUTO, resolve_tool_mode

    assert resolve_tool_mode("auto", "local") == AUTO["local"]
    assert resolve_tool_mode("auto", "ollama", native_tools=False) == "text"
    assert resolve_tool_mode("text", "local") == "text"
    assert load_config(environ={"VOICESWARM_TOOL_MODE": "constrained"}).llm.tool_mode == "constrained"
    with pytest.raises(ConfigError, match=r"llm\.tool_mode"):
        load_config(environ={"VOICESWARM_TOOL_MODE": "json"})
    with pytest.raises(ValueError):
        OllamaProvider("http://127.0.0.1:9", "m", tool_mode="json")


async def test_the_session_speaks_the_first_sentence_while_the_constrained_reply_is_still_coming(
    server: FakeServer,
) -> None:
    import asyncio

    from aiohttp import web

    from swarm.registry import Agent, Registry, SwarmSpec

    first_heard = asyncio.Event()

    async def handle(http: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(http)
        pieces = ['{"say": "We have', " it in stock.", " Shall I", ' order one?"}']
        for piece in pieces[:3]:
            await response.write(f"data: {json.dumps(chunk({'content': piece}))}\n\n".encode())
        # The rest comes only once the first sentence reached the speaker: without streaming, a deadlock.
        await asyncio.wait_for(first_heard.wait(), 5)
        await response.write(f"data: {json.dumps(chunk({'content': pieces[3]}))}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    server.handler = handle
    provider = OpenAIProvider("m", server.base_url, tool_mode="constrained", timeout=10)
    registry = Registry()
    registry.add_provider("m", provider)
    registry.add_agent(Agent("sales", "You sell.", "m"))
    registry.add_swarm(SwarmSpec("shop", ("sales",), "sales"))
    said = []
    async for sentence in registry.session("c1", "shop").stream("kettle?"):
        said.append(sentence)
        first_heard.set()
    await provider.aclose()
    assert said == ["We have it in stock.", "Shall I order one?"]


def test_past_replies_are_shown_as_the_json_the_model_writes() -> None:
    from swarm.constrained import to_constrained_messages

    history = (
        Message("system", "You sell."),
        Message("user", "kettle?"),
        Message("assistant", "", tool_calls=(ToolCall("c0", "search_products", {"query": "kettle"}),)),
        Message("tool", '{"say": "We have one."}', tool_name="search_products"),
        Message("assistant", "We have one."),
        Message("user", "yes"),
    )
    sent = to_constrained_messages(history, (SEARCH, BACK))
    assert [m["role"] for m in sent] == ["system", "system", "user", "assistant", "user", "assistant", "user"]
    assert json.loads(sent[3]["content"]) == {"search_products": {"query": "kettle"}}
    assert json.loads(sent[5]["content"]) == {"say": "We have one."}
    # Every tool's call is written out in the instructions, in the one shape the schema allows.
    assert (
        '{"navigate_back": {}}' in sent[1]["content"] and '{"search_products": {"query": "..."}}' in sent[1]["content"]
    )
