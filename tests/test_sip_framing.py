"""Stream framing (RFC 3261 §18.3, RFC 5626 keep-alives) without I/O."""

from __future__ import annotations

import pytest

from telephony.sip.framing import FramingError, KeepAlive, StreamFramer
from telephony.sip.message import parse_message


def options(body: bytes = b"", *, length: int | None = None, branch: str = "z9hG4bKa") -> bytes:
    content_length = b"" if length == -1 else b"Content-Length: %d\r\n" % (len(body) if length is None else length)
    return (
        b"OPTIONS sip:echo@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5070;branch="
        + branch.encode()
        + b"\r\nFrom: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:echo@127.0.0.1>\r\nCall-ID: c1\r\nCSeq: 1 OPTIONS\r\n"
        + content_length
        + b"\r\n"
        + body
    )


def test_two_messages_in_one_read_are_two_frames() -> None:
    first, second = options(b"hello", branch="z9hG4bK1"), options(branch="z9hG4bK2")
    frames = StreamFramer().feed(first + second)
    assert frames == [first, second]
    assert parse_message(first).body == b"hello"


def test_a_message_split_over_many_reads_comes_out_once_whole() -> None:
    message = options(b"v=0\r\n" * 20)
    framer = StreamFramer()
    frames = [frame for i in range(0, len(message), 7) for frame in framer.feed(message[i : i + 7])]
    assert frames == [message]
    assert framer.pending == 0


def test_the_body_is_cut_at_content_length_and_the_rest_starts_the_next_message() -> None:
    message = options(b"abc")
    framer = StreamFramer()
    assert framer.feed(message + b"OPTIONS sip:x") == [message]
    assert framer.pending == len(b"OPTIONS sip:x")


def test_compact_content_length_frames_too() -> None:
    message = options(b"xy").replace(b"Content-Length:", b"l :")
    assert StreamFramer().feed(message) == [message]


def test_missing_content_length_is_an_error_with_the_headers_for_a_400() -> None:
    with pytest.raises(FramingError) as caught:
        StreamFramer().feed(options(length=-1))
    assert caught.value.status == 400 and "Content-Length" in caught.value.detail
    assert caught.value.head.startswith(b"OPTIONS sip:echo@127.0.0.1 SIP/2.0")


def test_conflicting_or_garbled_content_length_is_an_error() -> None:
    doubled = options(b"ab").replace(b"Content-Length: 2\r\n", b"Content-Length: 2\r\nContent-Length: 3\r\n")
    for bad in (
        doubled,
        options(b"ab").replace(b"Content-Length: 2", b"Content-Length: two"),
        options(b"ab").replace(b"Content-Length: 2", b"Content-Length: -2"),
    ):
        with pytest.raises(FramingError):
            StreamFramer().feed(bad)


def test_an_oversized_message_is_refused_as_soon_as_its_headers_say_so() -> None:
    framer = StreamFramer(max_size=4096)
    with pytest.raises(FramingError) as caught:
        framer.feed(options(length=10_000))  # the body has not even arrived
    assert caught.value.status == 513


def test_endless_headers_are_refused_past_the_size_limit() -> None:
    framer = StreamFramer(max_size=1024)
    framer.feed(b"INVITE sip:x SIP/2.0\r\n")
    with pytest.raises(FramingError) as caught:
        for _ in range(100):
            framer.feed(b"X-Junk: " + b"a" * 40 + b"\r\n")
    assert caught.value.status == 513 and caught.value.head == b""


def test_garbage_without_a_blank_line_waits_then_fails_at_the_limit() -> None:
    framer = StreamFramer(max_size=256)
    assert framer.feed(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" * 5) == []  # a TLS hello sent to TCP
    with pytest.raises(FramingError):
        framer.feed(b"\x00" * 300)


def test_keepalives_ping_and_pong_between_messages() -> None:
    framer = StreamFramer()
    message = options()
    assert framer.feed(b"\r\n\r\n") == [KeepAlive.PING]
    assert framer.feed(b"\r\n" + message) == [KeepAlive.PONG, message]
    assert framer.feed(message + b"\r\n\r\n") == [message, KeepAlive.PING]


def test_a_ping_split_in_two_reads_is_still_one_ping() -> None:
    framer = StreamFramer()
    assert framer.feed(b"\r\n") == []
    assert framer.feed(b"\r\n") == [KeepAlive.PING]
