"""OllamaProvider with the real `ollama` client against FakeOllama, and the `<tool_call>` text protocol."""

from __future__ import annotations

import itertools
import socket
import time
from collections.abc import AsyncGenerator

import ollama
import pytest

from harness.fake_ollama import FakeOllama, Reply
from swarm.messages import CompletionRequest, Message, ToolCall, ToolSpec
from swarm.providers.base import (
    Completion,
    Delta,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    collect,
)
from swarm.providers.ollama import OllamaProvider, check_ollama
from swarm.text_protocol import parse_tool_calls, to_text_protocol_messages, visible_text

pytestmark = pytest.mark.timeout(10)

MODEL = "qwen3:4b"
FIND = ToolSpec(
    "find_product",
    "Search the shop's products by words.",
    {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look for"}},
        "required": ["query"],
    },
)


def request(*messages: Message, tools: tuple[ToolSpec, ...] = ()) -> CompletionRequest:
    return CompletionRequest(agent="sales", client_id="call-1", messages=messages, tools=tools)


HELLO = request(Message("system", "You sell kettles."), Message("user", "Hi"))


async def run(provider: OllamaProvider, req: CompletionRequest) -> tuple[list[Delta], Completion]:
    items = [item async for item in provider.stream(req)]
    assert isinstance(items[-1], Completion)
    assert all(isinstance(i, Delta) for i in items[:-1])
    return items[:-1], items[-1]  # type: ignore[return-value]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- native mode -----------------------------------------------------------------------------------------


async def test_text_streams_as_several_deltas_then_their_join() -> None:
    async with FakeOllama([Reply("Good morning, how can I help you today?")]) as server:
        deltas, done = await run(OllamaProvider(server.url, MODEL, timeout=5), HELLO)
    assert len(deltas) >= 5
    assert done.text == "".join(d.text for d in deltas) == "Good morning, how can I help you today?"
    assert done.tool_calls == ()


async def test_native_tool_calls_keep_object_arguments() -> None:
    script = [Reply(tool_calls=[("find_product", {"query": "kettle"}), ("find_product", {"query": "toaster"})])]
    async with FakeOllama(script) as server:
        done = await collect(
            OllamaProvider(server.url, MODEL, timeout=5), request(Message("user", "kettle?"), tools=(FIND,))
        )
    assert done.tool_calls == (
        ToolCall("call_0", "find_product", {"query": "kettle"}),
        ToolCall("call_1", "find_product", {"query": "toaster"}),
    )


async def test_request_is_in_ollama_format() -> None:
    history = request(
        Message("system", "You sell kettles."),
        Message("user", "Do you have kettles?"),
        Message("assistant", "", agent="sales", tool_calls=(ToolCall("call_0", "find_product", {"query": "kettle"}),)),
        Message("tool", '[{"sku": "K1"}]', agent="sales", tool_call_id="call_0", tool_name="find_product"),
        tools=(FIND,),
    )
    async with FakeOllama([Reply("Yes, the K1.")]) as server:
        provider = OllamaProvider(server.url, MODEL, options={"temperature": 0.2}, keep_alive="30m", timeout=5)
        await collect(provider, history)
    sent = server.requests[0]
    assert sent["model"] == MODEL and sent["stream"] is True
    assert sent["options"]["temperature"] == 0.2 and sent["keep_alive"] == "30m"
    assert sent["messages"][2] == {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "find_product", "arguments": {"query": "kettle"}}}],
    }
    assert sent["messages"][3] == {"role": "tool", "content": '[{"sku": "K1"}]', "tool_name": "find_product"}
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "find_product", "description": FIND.description, "parameters": FIND.parameters},
        }
    ]


async def test_error_line_mid_stream_is_a_provider_error() -> None:
    async with FakeOllama([Reply("Half a", error="llama runner process has terminated")]) as server:
        with pytest.raises(ProviderError, match="llama runner process has terminated") as caught:
            await collect(OllamaProvider(server.url, MODEL, timeout=5), HELLO)
    assert type(caught.value) is ProviderError
    assert server.url in str(caught.value)


async def test_http_500_is_a_provider_error_with_status() -> None:
    async with FakeOllama([Reply(status=500, error="out of memory")]) as server:
        with pytest.raises(ProviderError, match=r"HTTP 500.*out of memory"):
            await collect(OllamaProvider(server.url, MODEL, timeout=5), HELLO)


async def test_model_without_native_tools_points_to_the_text_protocol() -> None:
    error = "registry.ollama.ai/library/gemma3:1b does not support tools"
    async with FakeOllama([Reply(status=400, error=error)], models=("gemma3:1b",)) as server:
        with pytest.raises(ProviderError, match="set native_tools = false"):
            await collect(
                OllamaProvider(server.url, "gemma3:1b", timeout=5), request(Message("user", "hi"), tools=(FIND,))
            )


async def test_unknown_model_names_model_and_the_fix() -> None:
    async with FakeOllama([Reply("never sent")]) as server:
        with pytest.raises(ProviderError) as caught:
            await collect(OllamaProvider(server.url, "llama3.2:1b", timeout=5), HELLO)
    message = str(caught.value)
    assert "'llama3.2:1b' is not pulled on " + server.url in message
    assert "ollama pull llama3.2:1b" in message


async def test_server_down_is_unavailable_quickly() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match="no Ollama server answers at " + url):
        await collect(OllamaProvider(url, MODEL, timeout=5), HELLO)
    assert time.monotonic() - started < 2


async def test_slow_server_times_out_in_bounded_time() -> None:
    async with FakeOllama([Reply("too late", delay=5)]) as server:
        started = time.monotonic()
        with pytest.raises(ProviderTimeout, match=r"within 0\.3 s"):
            await collect(OllamaProvider(server.url, MODEL, timeout=0.3), HELLO)
        assert time.monotonic() - started < 2


async def test_closing_the_stream_early_ends_the_request_cleanly() -> None:
    async with FakeOllama([Reply("one two three four five"), Reply("again")]) as server:
        provider = OllamaProvider(server.url, MODEL, timeout=5)
        replies = provider.stream(HELLO)
        assert isinstance(replies, AsyncGenerator)  # so the conversation can close it
        assert await anext(replies) == Delta("one ")
        await replies.aclose()  # what a barge-in does
        with pytest.raises(StopAsyncIteration):
            await anext(replies)
        assert (await collect(provider, HELLO)).text == "again"


async def test_callable_script_answers_from_the_request() -> None:
    def answer(body: dict) -> Reply:
        return Reply(f"You said {body['messages'][-1]['content']}.")

    async with FakeOllama(answer) as server:
        provider = OllamaProvider(server.url, MODEL, timeout=5)
        first = await collect(provider, request(Message("user", "hi")))
        second = await collect(provider, request(Message("user", "bye")))
    assert (first.text, second.text) == ("You said hi.", "You said bye.")


async def test_exhausted_script_is_an_error() -> None:
    async with FakeOllama([Reply("one")]) as server:
        provider = OllamaProvider(server.url, MODEL, timeout=5)
        await collect(provider, HELLO)
        with pytest.raises(ProviderError, match="script exhausted"):
            await collect(provider, HELLO)


async def test_fake_answers_non_streaming_like_ollama() -> None:
    async with FakeOllama(
        [Reply("Whole reply.", tool_calls=[("find_product", {"query": "kettle"})]), Reply(error="boom")]
    ) as server:
        client = ollama.AsyncClient(server.url, timeout=5)
        response = await client.chat(MODEL, [{"role": "user", "content": "hi"}], stream=False)
        with pytest.raises(ollama.ResponseError) as caught:
            await client.chat(MODEL, [{"role": "user", "content": "hi"}], stream=False)
        await client._client.aclose()
    assert response.done and response.done_reason == "stop"
    assert response.message.content == "Whole reply."
    assert response.message.tool_calls
    assert response.message.tool_calls[0].function.arguments == {"query": "kettle"}
    assert caught.value.status_code == 500 and caught.value.error == "boom"


# --- the <tool_call> text protocol ---------------------------------------------------------------------


def test_parse_one_call() -> None:
    text, calls = parse_tool_calls('<tool_call>{"name": "find_product", "arguments": {"query": "kettle"}}</tool_call>')
    assert text == ""
    assert calls == (ToolCall("call_0", "find_product", {"query": "kettle"}),)


def test_parse_two_calls_with_text_around() -> None:
    reply = (
        'Let me look. <tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n'
        '<tool_call>{"name": "b", "arguments": {}}</tool_call> One moment.'
    )
    text, calls = parse_tool_calls(reply)
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_0", "a", {"x": 1}), ("call_1", "b", {})]
    assert text.startswith("Let me look.") and text.endswith("One moment.") and "tool_call" not in text


def test_parse_malformed_json_keeps_name_and_raw_text() -> None:
    body = '{"name": "find_product", "arguments": {"query": "kettle"'
    _, calls = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert calls == (ToolCall("call_0", "find_product", {}, raw_arguments=body),)
    _, nameless = parse_tool_calls("<tool_call>find the kettle</tool_call>")
    assert nameless == (ToolCall("call_0", "", {}, raw_arguments="find the kettle"),)


def test_parse_unclosed_block_at_end_is_still_a_call() -> None:
    text, calls = parse_tool_calls('Sure. <tool_call>{"name": "a", "arguments": {"x": 2}}')
    assert text == "Sure." and calls == (ToolCall("call_0", "a", {"x": 2}),)


def test_visible_text_holds_back_a_possible_tag() -> None:
    assert visible_text("Hello <tool") == "Hello "
    assert visible_text("Hello <tool", final=True) == "Hello <tool"
    assert visible_text("1 < 2") == "1 < 2"
    assert visible_text('A <tool_call>{"name"') == "A "
    assert visible_text("A <tool_call>{}</tool_call> B") == "A  B"


def test_visible_text_only_grows_and_never_shows_a_block_at_any_split() -> None:
    reply = 'Sure <b>. <tool_call>{"name": "a", "arguments": {}}</tool_call> Done <tool_call>{"name": "b"}'
    shown = [visible_text(reply[:end]) for end in range(len(reply) + 1)]
    for before, after in itertools.pairwise(shown):
        assert after.startswith(before)
    assert all("tool_call" not in s and "<t" not in s for s in shown)
    assert shown[-1] == "Sure <b>.  Done "


async def test_tool_call_split_across_fragments_is_never_a_delta() -> None:
    reply = (
        'Let me check that for you. <tool_call>{"name": "find_product", "arguments": {"query": "red kettle"}}'
        "</tool_call>"
    )
    async with FakeOllama([Reply(reply)]) as server:
        deltas, done = await run(
            OllamaProvider(server.url, MODEL, native_tools=False, timeout=5),
            request(Message("user", "red kettle?"), tools=(FIND,)),
        )
    spoken = "".join(d.text for d in deltas)
    assert "<" not in spoken and "find_product" not in spoken
    assert spoken.strip() == done.text == "Let me check that for you."
    assert done.tool_calls == (ToolCall("call_0", "find_product", {"query": "red kettle"}),)


async def test_text_protocol_round_trip_request() -> None:
    history = request(
        Message("system", "You sell kettles."),
        Message("user", "Kettles?"),
        Message(
            "assistant",
            "Looking.",
            agent="sales",
            tool_calls=(ToolCall("call_0", "find_product", {"query": "kettle"}),),
        ),
        Message("tool", "K1, K2", agent="sales", tool_call_id="call_0", tool_name="find_product"),
        tools=(FIND,),
    )
    async with FakeOllama([Reply("We have the K1 and the K2.")]) as server:
        done = await collect(OllamaProvider(server.url, MODEL, native_tools=False, timeout=5), history)
    sent = server.requests[0]
    assert done.text == "We have the K1 and the K2."
    assert not sent.get("tools")  # the client always sends a list; empty means no native tools
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "system", "user", "assistant", "user"]
    assert '"name": "find_product"' in sent["messages"][1]["content"]
    assert "<tool_call>" in sent["messages"][1]["content"]
    assert sent["messages"][3]["content"] == (
        'Looking.\n<tool_call>{"name": "find_product", "arguments": {"query": "kettle"}}</tool_call>'
    )
    assert sent["messages"][4]["content"] == '<tool_response name="find_product">\nK1, K2\n</tool_response>'


def test_text_protocol_merges_results_of_one_turn_and_replays_raw_calls() -> None:
    messages = to_text_protocol_messages(
        [
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("call_0", "a", {}, raw_arguments="{bad"), ToolCall("call_1", "b", {"x": 1})),
            ),
            Message("tool", "error: not JSON", tool_name="a"),
            Message("tool", "ok", tool_name="b"),
        ],
        (),
    )
    assert messages[0]["content"] == (
        '<tool_call>{bad</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>'
    )
    assert len(messages) == 2 and messages[1]["role"] == "user"
    assert 'name="a"' in messages[1]["content"] and 'name="b"' in messages[1]["content"]


# --- check_ollama ----------------------------------------------------------------------------------------


async def test_check_ollama_finds_a_pulled_model_with_or_without_latest() -> None:
    async with FakeOllama([], models=("qwen3:4b", "gemma3:latest")) as server:
        assert await check_ollama(server.url, "qwen3:4b") is None
        assert await check_ollama(server.url, "gemma3") is None
        missing = await check_ollama(server.url, "qwen3:8b")
    assert missing is not None and "'qwen3:8b' is not pulled on " + server.url in missing
    assert "ollama pull qwen3:8b" in missing


async def test_check_ollama_server_down() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    reason = await check_ollama(url, MODEL, timeout=1)
    assert reason == f"no Ollama server answers at {url}"
