"""The AudioSocket server against a client written here from the protocol documentation
(docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket: a 1-byte kind, a 16-bit big-endian
length, the payload; 0x00 hangup, 0x01 UUID, 0x03 DTMF, 0x10 slin 8 kHz, 0xff error)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from telephony.audiosocket import AudioSocketCall, AudioSocketServer
from telephony.audiosocket_wire import AudioSocketFramingError, MessageReader
from telephony.call import FRAME_SAMPLES, Call
from telephony.sources import AllowedSources

pytestmark = pytest.mark.timeout(30)
IO_TIMEOUT = 5.0  # every read in these tests gives up after this


def tone(samples: int, hz: float = 440.0, amplitude: int = 8000) -> np.ndarray:
    t = np.arange(samples) / 8000
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def ramp(samples: int, sign: int) -> np.ndarray:
    """Distinct non-zero values per call, so that mixed audio would show."""
    return (sign * (1 + np.arange(samples) % 30000)).astype(np.int16)


class AsteriskClient:
    """What Asterisk's AudioSocket() application does, from the protocol's description."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, call_uuid: uuid.UUID) -> None:
        self.reader, self.writer, self.uuid = reader, writer, call_uuid

    @classmethod
    async def connect(cls, address: tuple[str, int], send_uuid: bool = True) -> AsteriskClient:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), IO_TIMEOUT)
        client = cls(reader, writer, uuid.uuid4())
        if send_uuid:
            await client.send(0x01, client.uuid.bytes)
        return client

    async def send(self, kind: int, payload: bytes = b"") -> None:
        self.writer.write(struct.pack(">BH", kind, len(payload)) + payload)
        await self.writer.drain()

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send_audio(self, pcm: np.ndarray, samples_per_message: int) -> None:
        for start in range(0, len(pcm), samples_per_message):
            await self.send(0x10, pcm[start : start + samples_per_message].astype("<i2").tobytes())

    async def read_message(self) -> tuple[int, bytes] | None:
        """The next message, or None at end of stream."""
        try:
            kind, length = struct.unpack(">BH", await asyncio.wait_for(self.reader.readexactly(3), IO_TIMEOUT))
            return kind, await asyncio.wait_for(self.reader.readexactly(length), IO_TIMEOUT)
        except asyncio.IncompleteReadError as error:
            assert not error.partial, f"the server sent a truncated message: {error.partial!r}"
            return None
        except ConnectionResetError:
            return None

    async def read_until_closed(self, max_messages: int = 2000) -> list[tuple[int, bytes, float]]:
        """All messages up to end of stream, each with its arrival time."""
        loop = asyncio.get_running_loop()
        messages: list[tuple[int, bytes, float]] = []
        for _ in range(max_messages):
            message = await self.read_message()
            if message is None:
                return messages
            messages.append((*message, loop.time()))
        raise AssertionError(f"the server was still sending after {max_messages} messages")

    async def read_audio(self, frames: int) -> list[tuple[bytes, float]]:
        """The next `frames` audio messages with their arrival times (other kinds fail the test)."""
        loop = asyncio.get_running_loop()
        received: list[tuple[bytes, float]] = []
        while len(received) < frames:
            message = await self.read_message()
            assert message is not None, f"the server closed after {len(received)} of {frames} audio messages"
            assert message[0] == 0x10, f"expected audio, got kind 0x{message[0]:02x}"
            received.append((message[1], loop.time()))
        return received

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(TimeoutError, ConnectionError):
            await asyncio.wait_for(self.writer.wait_closed(), IO_TIMEOUT)


def samples_of(messages: list[tuple[bytes, float]]) -> np.ndarray:
    return np.frombuffer(b"".join(payload for payload, _ in messages), "<i2").astype(np.int16)


class Recorder:
    """An on_call handler that records what the application sees, then runs an optional script."""

    def __init__(self, script: Callable[[AudioSocketCall], Awaitable[None]] | None = None) -> None:
        self.script = script
        self.calls: list[AudioSocketCall] = []
        self.frames: dict[str, list[np.ndarray]] = {}
        self.keys: dict[str, list[str]] = {}
        self.started = asyncio.Queue[AudioSocketCall]()

    async def __call__(self, call: AudioSocketCall) -> None:
        self.calls.append(call)
        self.frames[call.call_id], self.keys[call.call_id] = [], []
        self.started.put_nowait(call)
        tasks = [asyncio.create_task(self._audio(call)), asyncio.create_task(self._keys(call))]
        try:
            if self.script:
                await self.script(call)
            await call.closed.wait()
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _audio(self, call: Call) -> None:
        async for frame in call.audio_in:
            self.frames[call.call_id].append(frame)

    async def _keys(self, call: Call) -> None:
        async for key in call.dtmf_in:
            self.keys[call.call_id].append(key)

    async def next_call(self) -> AudioSocketCall:
        return await asyncio.wait_for(self.started.get(), IO_TIMEOUT)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[AudioSocketServer]]]:
    """Start servers on 127.0.0.1; on teardown stop them and check that no task was left behind."""
    before = asyncio.all_tasks() - {asyncio.current_task()}  # setup and teardown run in different tasks
    servers: list[AudioSocketServer] = []

    async def start(on_call: Callable[[AudioSocketCall], Awaitable[None]], **options: object) -> AudioSocketServer:
        server = AudioSocketServer("127.0.0.1", 0, on_call, **options)  # type: ignore[arg-type]
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop(deadline_s=0.5)
    await asyncio.sleep(0)
    left = asyncio.all_tasks() - before - {asyncio.current_task()}
    assert not left, f"tasks left behind after stop(): {[t.get_name() for t in left]}"


async def wait_closed(call: AudioSocketCall) -> None:
    await asyncio.wait_for(call.closed.wait(), IO_TIMEOUT)


# ---- the caller's audio, DTMF and hang-up --------------------------------------------------------------------


async def test_caller_audio_arrives_as_exact_20ms_frames(serve) -> None:
    recorder = Recorder()
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    sent = np.concatenate([tone(8000), np.zeros(1600, np.int16), tone(4800, hz=1000), tone(100, hz=300)])
    await client.send_audio(sent[:8000], 160)  # 20 ms messages
    await client.send_audio(sent[8000:9600], 160)  # silence, which must be kept
    await client.send_audio(sent[9600:14400], 240)  # 30 ms messages, as some channels send
    await client.send_audio(sent[14400:], 37)  # odd sizes: the tail is short of a frame
    await client.send(0x00)  # hang-up
    await wait_closed(call)
    frames = recorder.frames[call.call_id]
    assert call.call_id == str(client.uuid)
    protocol = set(Call.__annotations__) | {name for name in vars(Call) if not name.startswith("_")}
    assert not {name for name in protocol if not hasattr(call, name)}, "not a telephony.call.Call"
    assert (call.caller, call.called, call.caller_name, dict(call.headers)) == ("", "", None, {})
    assert call.end_reason == "remote_hangup"
    assert {len(f) for f in frames} == {FRAME_SAMPLES} and {f.dtype for f in frames} == {np.dtype(np.int16)}
    whole = len(sent) // FRAME_SAMPLES * FRAME_SAMPLES
    assert np.array_equal(np.concatenate(frames), sent[:whole])  # lossless: PCM in, the same PCM out
    assert sum(not f.any() for f in frames) == 10  # the 200 ms of silence are 10 silent frames
    assert server.metrics.calls_ended == 1 and server.metrics.calls_active == 0
    answered = await client.read_until_closed()  # the server closes its side, and sends no hang-up back
    assert {kind for kind, _, _ in answered} <= {0x10}
    await client.close()


async def test_dtmf_keys_arrive_and_a_bad_key_is_dropped(serve) -> None:
    recorder = Recorder()
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    for key in b"12#*Dx9":
        await client.send(0x03, bytes([key]))
    await client.send_audio(tone(320), 160)  # the call goes on after the bad key
    await client.send(0x00)
    await wait_closed(call)
    assert recorder.keys[call.call_id] == ["1", "2", "#", "*", "D", "9"]
    assert len(recorder.frames[call.call_id]) == 2
    assert server.metrics.dtmf_received == 6 and server.metrics.dtmf_dropped == 1
    await client.close()


async def test_peer_closing_the_socket_is_a_remote_hangup(serve) -> None:
    recorder = Recorder()
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    await client.send_audio(tone(480), 160)
    await client.close()  # "socket closure is also sufficient"
    await wait_closed(call)
    assert call.end_reason == "remote_hangup"
    assert len(recorder.frames[call.call_id]) == 3


@pytest.mark.parametrize(("code", "reason"), [(0x01, "remote_hangup"), (0x02, "failed"), (None, "failed")])
async def test_error_message_ends_the_call(serve, code: int | None, reason: str) -> None:
    recorder = Recorder()
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    await client.send(0xFF, b"" if code is None else bytes([code]))
    await wait_closed(call)
    assert call.end_reason == reason
    assert server.metrics.errors_received == 1
    await client.close()


# ---- playback ----------------------------------------------------------------------------------------------


async def test_playback_is_paced_20ms_frames_with_silence_when_idle(serve) -> None:
    played: list[int] = []

    async def speak(call: AudioSocketCall) -> None:
        await asyncio.sleep(0.1)
        call.play(tone(8000))  # one second
        assert call.playing
        await asyncio.wait_for(call.wait_played(), IO_TIMEOUT)
        played.append(call.played_samples)
        assert not call.playing

    recorder = Recorder(speak)
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    with pytest.raises(ValueError, match="int16"):
        call.play(np.zeros(160))  # float samples: a clear error, not noise on the line
    received = await client.read_audio(75)  # 1.5 s of frames
    assert {len(payload) for payload, _ in received} == {2 * FRAME_SAMPLES}
    samples = samples_of(received)
    voiced = [i for i, (payload, _) in enumerate(received) if any(payload)]
    assert len(voiced) == 50 and voiced == list(range(voiced[0], voiced[0] + 50))
    assert voiced[0] > 0 and not samples[: voiced[0] * FRAME_SAMPLES].any()  # silence before it, not nothing
    start = voiced[0] * FRAME_SAMPLES
    assert np.array_equal(samples[start : start + 8000], tone(8000))
    span = received[voiced[-1]][1] - received[voiced[0]][1]
    assert span > 0.8, f"one second of audio arrived within {span:.3f} s: not paced"  # 49 slots apart = 0.98 s
    assert played == [8000]
    await client.send(0x00)
    await client.close()


async def test_flush_stops_playback_at_once(serve) -> None:
    flushed_at: list[int] = []

    async def speak_then_flush(call: AudioSocketCall) -> None:
        call.play(tone(24000))  # three seconds
        for _ in range(200):
            if call.played_samples >= 4000:
                break
            await asyncio.sleep(0.01)
        call.flush()
        flushed_at.append(call.played_samples)
        assert not call.playing
        await asyncio.wait_for(call.wait_played(), 0.1)  # returns at once after a flush

    recorder = Recorder(speak_then_flush)
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    received = await client.read_audio(60)  # 1.2 s, well past the flush
    voiced = [payload for payload, _ in received if any(payload)]
    assert 4000 <= flushed_at[0] < 8000
    assert len(voiced) * FRAME_SAMPLES == flushed_at[0]  # nothing after the flush was sent
    assert not any(received[-1][0])
    call = recorder.calls[0]
    assert call.played_samples == flushed_at[0]  # flushed audio does not count as played
    await client.send(0x00)
    await client.close()


# ---- hanging up, transfer, timeouts -----------------------------------------------------------------------


async def test_local_hangup_sends_the_hangup_message_then_closes(serve) -> None:
    async def hang_up(call: AudioSocketCall) -> None:
        await asyncio.sleep(0.1)
        await call.hangup()
        await call.hangup()  # safe twice

    recorder = Recorder(hang_up)
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    messages = await client.read_until_closed()
    call = recorder.calls[0]
    assert call.closed.is_set() and call.end_reason == "local_hangup"
    assert messages[-1][:2] == (0x00, b"")
    assert {kind for kind, _, _ in messages[:-1]} == {0x10}  # only audio and hangup ever go to Asterisk
    await client.close()


@pytest.mark.parametrize("fails", [False, True])
async def test_handler_returning_or_raising_hangs_up(serve, fails: bool) -> None:
    calls: list[AudioSocketCall] = []

    async def handler(call: AudioSocketCall) -> None:
        calls.append(call)
        if fails:
            raise RuntimeError("the application failed")

    server = await serve(handler)
    client = await AsteriskClient.connect(server.local_address)
    messages = await client.read_until_closed()
    assert messages[-1][:2] == (0x00, b"")
    assert calls[0].end_reason == "local_hangup"
    assert server.metrics.handler_errors == fails and server.metrics.calls_ended == 1
    await client.close()


async def test_transfer_is_refused_and_the_call_stays_up(serve) -> None:
    results: list[bool] = []

    async def transfer(call: AudioSocketCall) -> None:
        results.append(await call.transfer("sip:100@pbx.example"))

    recorder = Recorder(transfer)
    server = await serve(recorder)
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    await client.send_audio(tone(320), 160)
    await client.read_audio(5)  # still being served after the transfer attempt
    assert results == [False] and not call.closed.is_set()
    await client.send(0x00)
    await wait_closed(call)
    assert call.end_reason == "remote_hangup" and len(recorder.frames[call.call_id]) == 2
    assert server.metrics.transfers_refused == 1
    await client.close()


async def test_no_media_ends_the_call(serve) -> None:
    recorder = Recorder()
    server = await serve(recorder, no_media_timeout_s=0.3)
    client = await AsteriskClient.connect(server.local_address)
    messages = await client.read_until_closed()
    call = recorder.calls[0]
    assert call.end_reason == "media_timeout" and messages[-1][:2] == (0x00, b"")
    assert server.metrics.media_timeouts == 1
    await client.close()


async def test_a_connection_without_uuid_is_closed(serve) -> None:
    recorder = Recorder()
    server = await serve(recorder, handshake_timeout_s=0.2)
    client = await AsteriskClient.connect(server.local_address, send_uuid=False)
    assert await client.read_until_closed() == []
    assert server.metrics.handshake_timeouts == 1 and recorder.calls == []
    await client.close()


# ---- who may connect (issue 25) ------------------------------------------------------------------------------


async def everything_until_closed(client: AsteriskClient, limit: int = 64 * 1024) -> bytes:
    """The bytes the server sent before its side closed (a reset or a broken pipe is a close too)."""
    received = b""
    with contextlib.suppress(ConnectionError):
        while len(received) < limit:
            chunk = await asyncio.wait_for(client.reader.read(4096), IO_TIMEOUT)
            if not chunk:
                break
            received += chunk
    return received


async def test_a_peer_outside_allowed_sources_is_closed_at_once_and_never_a_call(serve, caplog) -> None:
    recorder = Recorder()
    server = await serve(recorder, allowed_sources=["10.0.0.0/8", "192.0.2.7/32"])  # we connect from 127.0.0.1
    loop = asyncio.get_running_loop()
    for attempt in range(3):
        started = loop.time()
        client = await AsteriskClient.connect(server.local_address, send_uuid=False)
        with contextlib.suppress(ConnectionError):  # closed by the server, perhaps while we still write
            await client.send(0x01, client.uuid.bytes)  # as Asterisk would: the UUID, then audio
            await client.send_audio(tone(FRAME_SAMPLES * 5), FRAME_SAMPLES)
        assert await everything_until_closed(client) == b"", "a refused peer heard the call"
        assert loop.time() - started < 1.0, f"attempt {attempt}: not closed at once"
        await client.close()
    await asyncio.sleep(0.05)
    assert recorder.calls == [] and server.metrics.calls_started == 0
    assert server.metrics.forbidden == 3 and server.metrics.connections == 0
    refused = [r.getMessage() for r in caplog.records if "event=audiosocket_forbidden" in r.getMessage()]
    assert len(refused) == 1 and "peer=127.0.0.1:" in refused[0], refused  # once a minute per source


async def test_a_peer_inside_allowed_sources_becomes_a_call(serve) -> None:
    recorder = Recorder()
    server = await serve(recorder, allowed_sources=["10.0.0.0/8", "127.0.0.0/8"])
    client = await AsteriskClient.connect(server.local_address)
    call = await recorder.next_call()
    assert call.call_id == str(client.uuid) and server.metrics.forbidden == 0
    await client.send(0x00)
    await wait_closed(call)
    await client.close()


def test_allowed_sources_check_ipv4_peers_of_an_ipv6_listener() -> None:
    sources = AllowedSources.parse(["10.0.0.10/32", "2001:db8::/32"])
    assert sources.allows("10.0.0.10") and sources.allows("::ffff:10.0.0.10") and sources.allows("2001:db8::5")
    assert not sources.allows("10.0.0.11") and not sources.allows("::ffff:127.0.0.1") and not sources.allows("?")
    assert AllowedSources.parse([]).allows("203.0.113.9")  # none listed: anyone, as SIP
    with pytest.raises(ValueError, match=r"'10\.0\.0\.300/8' is not a network"):
        AudioSocketServer("127.0.0.1", 0, Recorder(), allowed_sources=["10.0.0.300/8"])


async def test_stop_hangs_up_running_calls_and_leaves_no_task() -> None:
    before = asyncio.all_tasks()

    async def stubborn(call: AudioSocketCall) -> None:
        await asyncio.sleep(3600)  # ignores the end of its call: stop() must cancel it

    recorder = Recorder()
    servers = [AudioSocketServer("127.0.0.1", 0, recorder), AudioSocketServer("127.0.0.1", 0, stubborn)]
    for server in servers:
        await server.start()
    addresses = [server.local_address for server in servers]
    clients = [await AsteriskClient.connect(address) for address in addresses]
    call = await recorder.next_call()
    reads = [asyncio.create_task(client.read_until_closed()) for client in clients]
    await asyncio.sleep(0.1)
    await asyncio.wait_for(asyncio.gather(*(server.stop(deadline_s=0.1) for server in servers)), IO_TIMEOUT)
    for messages in await asyncio.gather(*reads):
        assert messages[-1][:2] == (0x00, b"")
    assert call.end_reason == "shutdown"
    for client in clients:
        await client.close()
    for address in addresses:
        with pytest.raises(OSError):
            await AsteriskClient.connect(address)
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == before


# ---- bad input and concurrency ----------------------------------------------------------------------------


INSTEAD_OF_UUID = {  # what a stray client or port scanner might send first
    "http request": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "audio before uuid": struct.pack(">BH", 0x10, 320) + bytes(320),
    "short uuid": struct.pack(">BH", 0x01, 15) + bytes(15),
}
AFTER_UUID = {  # sent by a connection that has become a call
    "unknown kind": struct.pack(">BH", 0x42, 2) + b"xx",
    "oversized audio": struct.pack(">BH", 0x10, 0xFFFF) + bytes(1000),
    "odd audio length": struct.pack(">BH", 0x10, 321) + bytes(321),
    "16 kHz audio": struct.pack(">BH", 0x12, 640) + bytes(640),
    "second uuid": struct.pack(">BH", 0x01, 16) + uuid.uuid4().bytes,
    "truncated": struct.pack(">BH", 0x10, 320) + bytes(100),
}


@pytest.mark.parametrize("case", [*INSTEAD_OF_UUID, *AFTER_UUID])
async def test_bad_framing_closes_only_that_connection(serve, case: str) -> None:
    recorder = Recorder()
    server = await serve(recorder)
    good = await AsteriskClient.connect(server.local_address)
    good_call = await recorder.next_call()
    bad = await AsteriskClient.connect(server.local_address, send_uuid=case in AFTER_UUID)
    if case in AFTER_UUID:
        bad_call = await recorder.next_call()
        await bad.send_audio(tone(320), 160)
        await bad.send_raw(AFTER_UUID[case])
    else:
        bad_call = None
        await bad.send_raw(INSTEAD_OF_UUID[case])
    if case == "truncated":
        bad.writer.write_eof()  # the peer goes away mid-message
    messages = await bad.read_until_closed()
    assert server.metrics.bad_framing == 1
    if bad_call is None:
        assert messages == [] and len(recorder.calls) == 1
    else:
        await wait_closed(bad_call)
        assert bad_call.end_reason == "failed"
        assert len(recorder.frames[bad_call.call_id]) == 2  # what came before the bad message was delivered
        if case != "truncated":
            assert messages[-1][:2] == (0x00, b"")
    await bad.close()
    # the call that was up goes on, and a new caller is served
    await good.send_audio(tone(1600), 160)
    latecomer = await AsteriskClient.connect(server.local_address)
    late_call = await recorder.next_call()
    await latecomer.send_audio(tone(800, hz=1000), 160)
    for client, call in ((good, good_call), (latecomer, late_call)):
        await client.send(0x00)
        await wait_closed(call)
        assert call.end_reason == "remote_hangup"
        await client.close()
    assert np.array_equal(np.concatenate(recorder.frames[good_call.call_id]), tone(1600))
    assert np.array_equal(np.concatenate(recorder.frames[late_call.call_id]), tone(800, hz=1000))


async def test_two_concurrent_calls_never_mix_audio(serve) -> None:
    async def echo(call: AudioSocketCall) -> None:
        async for frame in call.audio_in:
            call.play(frame)

    server = await serve(echo)
    clients = [await AsteriskClient.connect(server.local_address) for _ in range(2)]
    sent = [ramp(4000, +1), ramp(4000, -1)]  # 0.5 s each, positive against negative samples

    async def talk(client: AsteriskClient, pcm: np.ndarray) -> np.ndarray:
        await client.send_audio(pcm, 160)
        echoed: list[np.ndarray] = []
        for _ in range(200):  # bounded: 4 s of frames at most
            frame = samples_of(await client.read_audio(1))
            if frame.any():
                echoed.append(frame)
            if len(echoed) == len(pcm) // FRAME_SAMPLES:
                break
        await client.send(0x00)
        return np.concatenate(echoed)

    echoed = await asyncio.gather(*(talk(c, p) for c, p in zip(clients, sent, strict=True)))
    for got, pcm in zip(echoed, sent, strict=True):
        assert np.array_equal(got, pcm)
    for client in clients:
        await client.close()


# ---- the framing parser alone --------------------------------------------------------------------------------


@given(st.binary(max_size=400))
def test_parser_raises_only_its_own_error(data: bytes) -> None:
    reader = MessageReader()
    try:
        for message in reader.feed(data):
            assert len(message.payload) <= 0xFFFF
    except AudioSocketFramingError:
        pass
    assert reader.pending <= 3 + 0xFFFF


@given(st.lists(st.integers(1, 50), min_size=1, max_size=40))
def test_parser_gives_the_same_messages_however_tcp_splits_them(cuts: list[int]) -> None:
    stream = (
        struct.pack(">BH", 0x01, 16)
        + bytes(range(16))
        + struct.pack(">BH", 0x10, 6)
        + b"abcdef"
        + struct.pack(">BH", 0x03, 1)
        + b"5"
        + struct.pack(">BH", 0xFF, 0)
        + struct.pack(">BH", 0x00, 0)
    )
    reader, messages, position = MessageReader(), [], 0
    for cut in cuts:
        messages += list(reader.feed(stream[position : position + cut]))
        position += cut
    messages += list(reader.feed(stream[position:]))
    assert [(m.kind, m.payload) for m in messages] == [
        (0x01, bytes(range(16))),
        (0x10, b"abcdef"),
        (0x03, b"5"),
        (0xFF, b""),
        (0x00, b""),
    ]
    assert reader.pending == 0
