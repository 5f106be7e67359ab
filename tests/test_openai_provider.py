"""OpenAIProvider against a fake OpenAI-compatible server (aiohttp on localhost, real SSE chunk format)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from aiohttp import web

from swarm.messages import Message, ToolCall, ToolSpec
from swarm.providers.base import Completion, Delta, ProviderError, ProviderTimeout, ProviderUnavailable, collect
from swarm.providers.openai_compat import OpenAIProvider
from tests.fake_openai import MODEL, FakeServer, answering, chunk, items, request, tool_piece

LOOKUP = ToolSpec(
    "lookup_order",
    "Find an order by its number.",
    {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]},
)


async def test_text_streams_in_deltas_then_one_completion(server: FakeServer) -> None:
    server.handler = answering(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hello, "}),
            chunk({"content": "how can I "}),
            chunk({"content": "help?"}),
            chunk({}, finish="stop"),
        ]
    )
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    got = await items(provider, request(Message("system", "Be brief."), Message("user", "Hi")))
    assert got == [Delta("Hello, "), Delta("how can I "), Delta("help?"), Completion("Hello, how can I help?")]
    body = server.requests[0]
    assert body["model"] == MODEL and body["stream"] is True
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert "tools" not in body
    await provider.aclose()


async def test_tool_calls_are_assembled_from_split_arguments(server: FakeServer) -> None:
    server.handler = answering(
        [
            chunk({"role": "assistant", "content": None}),
            tool_piece(0, "", call_id="call_a", name="lookup_order"),
            tool_piece(0, '{"order'),
            tool_piece(1, "", call_id="call_b", name="lookup_order"),
            tool_piece(0, '_id": 1'),
            tool_piece(1, '{"order_id": 2}'),
            tool_piece(0, "7}"),
            chunk({}, finish="tool_calls"),
        ]
    )
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    completion = await collect(provider, request(Message("user", "Where are orders 17 and 2?"), tools=(LOOKUP,)))
    assert completion == Completion(
        "",
        (
            ToolCall("call_a", "lookup_order", {"order_id": 17}),
            ToolCall("call_b", "lookup_order", {"order_id": 2}),
        ),
    )
    assert server.requests[0]["tools"] == [
        {
            "type": "function",
            "function": {"name": "lookup_order", "description": LOOKUP.description, "parameters": LOOKUP.parameters},
        }
    ]
    await provider.aclose()


@pytest.mark.parametrize("raw", ['{"order_id": 17', "[17]", "order 17"])
async def test_malformed_arguments_keep_the_raw_text(server: FakeServer, raw: str) -> None:
    server.handler = answering([tool_piece(0, raw, call_id="call_a", name="lookup_order"), chunk({}, "tool_calls")])
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    completion = await collect(provider, request(Message("user", "order 17"), tools=(LOOKUP,)))
    assert completion.tool_calls == (ToolCall("call_a", "lookup_order", {}, raw_arguments=raw),)
    await provider.aclose()


async def test_empty_arguments_mean_no_arguments(server: FakeServer) -> None:
    server.handler = answering([tool_piece(0, "", call_id="call_a", name="transfer_to_human")])
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    completion = await collect(provider, request(Message("user", "a human please")))
    assert completion.tool_calls == (ToolCall("call_a", "transfer_to_human", {}),)
    await provider.aclose()


async def test_history_with_tool_calls_is_sent_in_openai_format(server: FakeServer) -> None:
    server.handler = answering([chunk({"content": "It shipped."})])
    history = (
        Message("user", "Where is order 17?"),
        Message(
            "assistant",
            "",
            agent="sales",
            tool_calls=(
                ToolCall("call_a", "lookup_order", {"order_id": 17}),
                ToolCall("call_b", "lookup_order", {}, raw_arguments="{order 17"),
            ),
        ),
        Message("tool", '{"status": "shipped"}', agent="sales", tool_call_id="call_a", tool_name="lookup_order"),
    )
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    await collect(provider, request(*history, tools=(LOOKUP,)))
    sent = server.requests[0]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": 17}'}},
            {"id": "call_b", "type": "function", "function": {"name": "lookup_order", "arguments": "{order 17"}},
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "call_a", "content": '{"status": "shipped"}'}
    await provider.aclose()


async def test_http_500_is_a_provider_error_naming_the_server(server: FakeServer) -> None:
    async def fail(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "CUDA out of memory", "type": "server_error"}}, status=500)

    server.handler = fail
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    with pytest.raises(ProviderError, match="HTTP 500") as caught:
        await collect(provider, request(Message("user", "Hi")))
    assert not isinstance(caught.value, (ProviderUnavailable, ProviderTimeout))
    assert server.base_url in str(caught.value) and MODEL in str(caught.value)
    assert "CUDA out of memory" in str(caught.value)
    assert len(server.requests) == 1  # no retries: a caller is waiting
    await provider.aclose()


async def test_404_hints_at_the_model_name(server: FakeServer) -> None:
    async def missing(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": f"model {MODEL} not found"}}, status=404)

    server.handler = missing
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    with pytest.raises(ProviderError, match="check the model name"):
        await collect(provider, request(Message("user", "Hi")))
    await provider.aclose()


async def test_error_event_mid_stream_is_a_provider_error(server: FakeServer) -> None:
    server.handler = answering([chunk({"content": "Hel"}), {"error": {"message": "context length exceeded"}}])
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    with pytest.raises(ProviderError, match="context length exceeded"):
        await items(provider, request(Message("user", "Hi")))
    await provider.aclose()


async def test_closed_port_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider(MODEL, f"http://127.0.0.1:{port}/v1", timeout=5)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match=f"127.0.0.1:{port}"):
        await collect(provider, request(Message("user", "Hi")))
    assert time.monotonic() - started < 3
    await provider.aclose()


async def test_a_connection_closed_before_any_answer_is_asked_once_more(server: FakeServer) -> None:
    # What llama.cpp's server does to about 1 kept-alive request in 4: it closes the connection unanswered.
    reply = answering([chunk({"content": "Hello."}), chunk({}, finish="stop")])

    async def drop_the_first(request: web.Request) -> web.StreamResponse:
        if len(server.requests) == 1:
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        return await reply(request)

    server.handler = drop_the_first
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    assert (await collect(provider, request(Message("user", "Hi")))).text == "Hello."
    assert len(server.requests) == 2
    await provider.aclose()


async def test_server_that_never_answers_times_out(server: FakeServer) -> None:
    async def hang(request: web.Request) -> web.Response:
        await asyncio.sleep(10)
        return web.Response()

    server.handler = hang
    provider = OpenAIProvider(MODEL, server.base_url, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout, match=r"0\.5 s"):
        await collect(provider, request(Message("user", "Hi")))
    assert time.monotonic() - started < 2
    await provider.aclose()


@pytest.mark.slow  # waits for the deadline
async def test_trickling_server_hits_the_overall_deadline(server: FakeServer) -> None:
    # Each chunk comes well within the read timeout, but the whole reply would take 5 s.
    server.handler = answering([chunk({"content": "word "})] * 25, pause=0.2)
    provider = OpenAIProvider(MODEL, server.base_url, timeout=1.0)
    got: list[Delta | Completion] = []
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        async for item in provider.stream(request(Message("user", "Tell me a story"))):
            got.append(item)
    assert time.monotonic() - started < 2.5
    assert got and all(isinstance(item, Delta) for item in got)
    await provider.aclose()


@pytest.mark.slow  # waits for the deadline
async def test_consumer_time_does_not_count_against_the_deadline(server: FakeServer) -> None:
    # The session speaks each sentence while the stream waits; that time is not the server's.
    server.handler = answering([chunk({"content": "One. "}), chunk({"content": "Two."})])
    provider = OpenAIProvider(MODEL, server.base_url, timeout=0.5)
    got = []
    async for item in provider.stream(request(Message("user", "Count"))):
        got.append(item)
        await asyncio.sleep(0.4)
    assert got[-1] == Completion("One. Two.")
    await provider.aclose()


def test_name_defaults_to_openai_and_can_be_set() -> None:
    assert OpenAIProvider(MODEL, "http://127.0.0.1:1/v1").name == "openai"
    assert OpenAIProvider(MODEL, "http://127.0.0.1:1/v1", name="deepseek").name == "deepseek"


async def test_the_server_timings_reach_the_completion(server: FakeServer) -> None:
    # llama.cpp's server sends its account of the request with the last chunk: what a turn cost, for benchmarks.
    timings = {"prompt_n": 12, "cache_n": 700, "predicted_n": 9, "prompt_ms": 130.5, "predicted_ms": 260.0}
    server.handler = answering([chunk({"content": "Hi."}), {**chunk({}, finish="stop"), "timings": timings}])
    provider = OpenAIProvider(MODEL, server.base_url, timeout=5)
    with_timings = await collect(provider, request(Message("user", "Hi")))
    server.handler = answering([chunk({"content": "Hi."}), chunk({}, finish="stop")])
    without = await collect(provider, request(Message("user", "Hi")))
    await provider.aclose()
    assert with_timings == Completion("Hi.", (), timings) and without.timings is None
