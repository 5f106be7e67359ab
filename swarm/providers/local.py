"""An embedded local LLM: llama.cpp's server run as a child process, spoken to as any OpenAI-compatible server.

`LocalServer` starts `swarm.providers.llama_server` on 127.0.0.1 (a port the kernel picks), waits until
the model is loaded, and starts it again when it has died. `LocalProvider` streams through
`OpenAIProvider` against it; when the server dies mid-reply the turn fails with ProviderUnavailable (the
session apologises and transfers, as for any LLM failure) and the server is started again at once, so the
next turn finds it. Prompts given to `prefill` are sent again after every restart, so that the server's
prompt cache holds each agent's system prompt and tools before callers need them.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from swarm.messages import CompletionRequest, Message
from swarm.providers.base import Completion, Delta, ProviderError, ProviderTimeout, ProviderUnavailable
from swarm.providers.llama_server import READY
from swarm.providers.openai_compat import OpenAIProvider

log = logging.getLogger(__name__)

PREFILL_TIMEOUT_S = 300.0
MAX_CALLS_KEPT = 1000  # calls whose lane is remembered (Lanes); the oldest is forgotten first


class LocalServerError(ProviderUnavailable):
    """The local llama.cpp server could not be started; the message ends with its last log lines."""


@dataclass(frozen=True)
class ServerSpec:
    """What the child process runs."""

    model: Path
    chat_template: Path | None = None  # None: the template embedded in the GGUF
    threads: int = 2
    # Reading a prompt is large matrix products that both cores share well (a cold 1,100-token prompt: 30 tok/s
    # on 1 thread, 45 on 2, with other jobs running); writing the reply token by token is not (see
    # callcenter.config.half_the_cores). 0: as `threads`.
    batch_threads: int = 0
    ctx: int = 4096
    # Chosen by benchmarks/local_llm_load.py: the server yields the cores to the RTP clock and Whisper.
    nice: int = 10
    # llama.cpp's slots, each `ctx` tokens: that many completions run at once (batched). The server swaps
    # prompts in and out of a slot from its RAM cache: a hand-over to the next agent processed 17 prompt
    # tokens whether one slot or one per agent (benchmarks/local_llm_turns.py). LocalProvider.slots pins each
    # agent to one in each lane (Lanes: a copy of the agents' slots per call at once).
    parallel: int = 1
    # A reply is one to three spoken sentences or one tool call (<200 tokens): a model that loops or never
    # stops is cut here instead of generating until the context is full (seen: 120 s on the 0.5B).
    max_tokens: int = 512
    # Prompt tokens read in one chunk: a cancelled read ends only at a chunk's end (2,048 by default). At 64, a
    # short turn right after a cancelled read waited 1.5 s against 3.0 s at 256 (2.0 against 4.3 s on busy cores),
    # for a cold read of ~750 tokens 6% slower (11.7 against 11.0 s; 16.2 against 18.0 s busy). Medians of 3
    # interleaved runs, benchmarks/llm_chunks.py.
    batch: int = 64
    name: str = "local"  # for logs and the provider's name
    # Draftless speculative decoding (llama_server.SPECULATION): drafts copied from the slot's own tokens, with
    # a match of `spec_n` tokens, at most `spec_m` drafted.
    spec_type: str = "none"
    spec_n: int = 12
    spec_m: int = 48
    # Or a smaller model of the same tokenizer drafting up to `draft_max` tokens (llama-server's -md).
    draft_model: Path | None = None
    draft_max: int = 16

    def argv(self) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "swarm.providers.llama_server",
            "--model",
            str(self.model),
            "--threads",
            str(self.threads),
            "--batch-threads",
            str(self.batch_threads or self.threads),
            "--ctx",
            str(self.ctx * self.parallel),
            "--nice",
            str(self.nice),
            "--parallel",
            str(self.parallel),
            "--max-tokens",
            str(self.max_tokens),
            "--batch",
            str(self.batch),
        ]
        if self.spec_type != "none":
            argv += ["--spec-type", self.spec_type, "--spec-ngram-size-n", str(self.spec_n)]
            argv += ["--spec-ngram-size-m", str(self.spec_m)]
        if self.draft_model is not None:
            argv += ["--model-draft", str(self.draft_model), "--draft-max", str(self.draft_max)]
        return argv + (["--chat-template", str(self.chat_template)] if self.chat_template else [])


class LocalServer:
    """One llama.cpp server process; thread-safe, and independent of any event loop."""

    def __init__(self, spec: ServerSpec, *, start_timeout: float = 180.0) -> None:
        self.spec = spec
        self.start_timeout = start_timeout
        self.url = ""  # http://127.0.0.1:PORT while running
        self.starts = 0
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._log_tail: collections.deque[str] = collections.deque(maxlen=30)
        self._stopping = False
        self._slot_folder = ""  # where copy_slot's files go, made at the first start of a server of several slots

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exited(self, within: float) -> bool:
        """True once the process has gone, waiting up to `within` seconds: a connection torn by a dying
        server comes a moment before the kernel reports the process gone."""
        deadline = time.monotonic() + within
        while self.alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def start(self) -> str:
        """The server's URL, starting the process first when it is not running (blocks until loaded)."""
        with self._lock:
            if self.alive():
                return self.url
            if self._process is not None:
                log.warning("event=local_llm_restart exit_code=%s", self._process.returncode)
            self._stopping = False
            self.url = self._spawn()
            self.starts += 1
            return self.url

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            process, self._process, self.url = self._process, None, ""
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the child exits when its standard input closes
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self._slot_folder:
            shutil.rmtree(self._slot_folder, ignore_errors=True)
            self._slot_folder = ""

    def copy_slot(self, source: int, target: int) -> None:
        """Copy the prompt cached in slot `source` into slot `target`, through a file (~25 ms for 700 tokens).

        A request pinned to an empty slot never looks in llama.cpp's RAM prompt cache (llama.cpp issue 28139):
        it would read the whole prompt again, ~7 s for an agent's on 2 cores. Raises httpx.HTTPError."""
        name = f"slot-{source}.bin"
        with httpx.Client(timeout=60) as client:
            for slot, action in ((source, "save"), (target, "restore")):
                client.post(f"{self.url}/slots/{slot}?action={action}", json={"filename": name}).raise_for_status()

    def _spawn(self) -> str:
        started = time.monotonic()
        argv = self.spec.argv()
        if self.spec.parallel > 1:
            self._slot_folder = self._slot_folder or tempfile.mkdtemp(prefix="voiceswarm-slots-")
            argv += ["--slot-save-path", self._slot_folder]
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, (_source_root(), os.environ.get("PYTHONPATH")))),
            },
        )
        self._process = process
        self._log_tail.clear()
        threading.Thread(target=self._drain, args=(process,), name=f"llama-log-{process.pid}", daemon=True).start()
        assert process.stdout is not None
        deadline = started + self.start_timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([process.stdout], [], [], min(left, 1.0))
            if ready:
                line = process.stdout.readline()
                if line.startswith(READY):
                    url = line[len(READY) :].strip()
                    log.info(
                        "event=local_llm_started pid=%d url=%s model=%s threads=%d seconds=%.1f",
                        process.pid,
                        url,
                        self.spec.name,
                        self.spec.threads,
                        time.monotonic() - started,
                    )
                    return url
                if not line:  # stdout closed: the child is gone
                    break
            elif process.poll() is not None:
                break
        process.kill()
        process.wait()
        # llama.cpp marks its errors " E "; the child's own traceback ends the log.
        errors = [line for line in self._log_tail if " E " in line] or list(self._log_tail)[-3:]
        tail = " | ".join(errors + list(self._log_tail)[-1:]) or "no output"
        raise LocalServerError(
            f"the local LLM server ({self.spec.model}) did not start (exit code {process.returncode}): {tail}"
        )

    def _drain(self, process: subprocess.Popen[str]) -> None:
        """Keep the server's last log lines for error messages; its per-request chatter goes to debug."""
        assert process.stderr is not None
        for line in process.stderr:
            self._log_tail.append(line.rstrip())
            log.debug("llama.cpp: %s", line.rstrip())
        # Not process.wait(): while one thread waits, Popen.poll() in another answers "still running".
        if not self._stopping and process is self._process and self.exited(5.0):
            log.error(
                "event=local_llm_exited pid=%d exit_code=%s last=%s",
                process.pid,
                process.returncode,
                self._log_tail[-1] if self._log_tail else "",
            )


def _stale_connection(error: BaseException) -> bool:
    """True when the server closed the connection before answering (httpx's RemoteProtocolError)."""
    cause: BaseException | None = error
    while cause is not None:
        # By name: the openai client brings its own fork of httpx (httpx2), with its own exception classes.
        if type(cause).__name__ == "RemoteProtocolError" and "without sending a response" in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _source_root() -> str:
    """The folder holding the `swarm` package, so the child imports the same code even when not installed."""
    return str(Path(__file__).resolve().parents[2])


class Lanes:
    """Which copy of the agents' slots (a lane) each call's requests go to.

    With one copy, two calls with the same agent take turns: the second caller's reply starts when the first's
    ends. With a lane each, llama.cpp decodes both replies in one batch. A call keeps its lane, because its
    history is cached in that lane's slots; a new call takes the lane used least recently, the one most likely
    free of other calls."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._lane_of: dict[str, int] = {}  # by call (client id), oldest first
        self._used = [0.0] * count  # when each lane was last given a request (monotonic)

    def of(self, client_id: str) -> int:
        lane = self._lane_of.get(client_id)
        if lane is None:
            lane = min(range(self.count), key=lambda n: self._used[n])
            self._lane_of[client_id] = lane
            if len(self._lane_of) > MAX_CALLS_KEPT:
                del self._lane_of[next(iter(self._lane_of))]
        self._used[lane] = time.monotonic()
        return lane


class LocalProvider:
    """The Provider for a LocalServer: OpenAI-compatible streaming, restarts, and a warm prompt cache."""

    def __init__(
        self,
        server: LocalServer,
        *,
        model: str = "local",
        timeout: float = 30.0,
        name: str = "local",
        owns_server: bool = True,
        tool_mode: str = "constrained",
        slots: Mapping[str, int] | None = None,
        lanes: int = 1,
    ) -> None:
        self.server = server
        # The server's slot of each agent (its prompt cached there), or none: the server picks. Left to pick,
        # llama.cpp gives a request the idle slot with the most similar prompt, and a slot is busy for a few
        # milliseconds after a warm read's stream closes: a turn 10 ms after its agent's read took another
        # agent's slot and read its 516-token prompt cold, past the 20 s timeout. Pinned, it waits the 10 ms.
        # With `lanes` copies of the slots (the server has len(slots) * lanes), calls whose turns overlap are
        # decoded together (Lanes).
        self.slots = dict(slots or {})
        self.lanes = Lanes(lanes)
        self.tool_mode = tool_mode  # constrained: the measured best on the packaged models (swarm/tool_modes.py)
        # False when several providers (tests) share one server: aclose then leaves it running.
        self.owns_server = owns_server
        self.model = model
        self.timeout = timeout
        self.name = name
        self._delegate: OpenAIProvider | None = None
        self._starting: asyncio.Future[str] | None = None
        # Held so that these tasks are not collected mid-way.
        self._restarting: asyncio.Future[None] | None = None
        self._rewarming: asyncio.Future[None] | None = None
        self._prefills: list[CompletionRequest] = []
        self._in_flight = 0  # turns and warm reads the server is working on
        self._warming: tuple[str, asyncio.Future[None]] | None = None  # the warm read running: (client, task)

    async def start(self) -> None:
        """Start the server (if it is not running) and fill its prompt cache; blocks until done."""
        await self._ready()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        self._stop_other_calls_read(request)
        self._in_flight += 1
        working = True
        try:
            async for item in self._stream(request):
                if isinstance(item, Completion) and working:  # the server is done, whenever the reader closes
                    working, self._in_flight = False, self._in_flight - 1
                yield item
        finally:
            if working:
                self._in_flight -= 1

    async def _stream(self, request: CompletionRequest) -> AsyncIterator[Delta | Completion]:
        try:
            # A turn waits for a (re)start no longer than it would wait for a reply.
            async with asyncio.timeout(self.timeout):
                delegate = await self._ready()
        except TimeoutError as error:
            raise ProviderTimeout(f"the local LLM server was not ready within {self.timeout:g} s (starting)") from error
        for attempt in (1, 2):
            answered = False
            try:
                async for item in delegate.stream(request):
                    answered = True
                    yield item
                return
            except ProviderError as error:
                if attempt == 1 and not answered and _stale_connection(error) and self.server.alive():
                    # llama.cpp's HTTP server closes a kept-alive connection as the client reuses it
                    # (measured: ~1 request in 4 back to back): nothing was sent, so asking again is safe.
                    log.debug("event=local_llm_stale_connection retrying=1")
                    continue
                replacement = await self._failed(error)
                if replacement is error:
                    raise
                raise replacement from error
            except Exception as error:  # a connection torn mid-stream may surface as the HTTP client's own error
                raise await self._failed(ProviderUnavailable(f"{self.name} failed mid-reply: {error!r}")) from error

    async def prefill(self, request: CompletionRequest) -> None:
        """Put the request's prompt into the server's cache (its agent's slot in every lane) now and after every
        restart."""
        self._prefills.append(request)
        await self._ready()
        await self._prefill_lanes(request)

    async def warm(self, request: CompletionRequest) -> None:
        """Read this prompt into the cache now, once (a turn's history while the caller hears its say line),
        unless the server is working on something else: then the next turn reads it itself.

        A read beside other work halves the speed of both, and cancelling it (the call ended) does not stop it
        on the server before the end of its prompt. In the eval, a call's read went on into the next call,
        whose own read and turn then found every slot busy, took one holding another agent's prompt and read
        1,008 tokens from the start: 31 s, past the 20 s timeout (3 reads at once on 2 cores)."""
        if self._in_flight:
            log.debug("event=local_llm_warm_skipped agent=%s busy=%d", request.agent, self._in_flight)
            return
        read = asyncio.ensure_future(self._prefill(ahead_of_the_caller(request), logging.DEBUG))
        self._warming = (request.client_id, read)
        self._in_flight += 1
        try:
            await read
        except asyncio.CancelledError:
            if not read.cancelled() or _cancelling():
                raise  # this read's own caller gave up on it (the call ended)
            log.debug("event=local_llm_warm_stopped agent=%s", request.agent)  # another call's turn came
        finally:
            self._in_flight -= 1
            self._warming = None

    def _slot(self, request: CompletionRequest, lane: int | None = None) -> dict[str, int]:
        slot = self.slots.get(request.agent)
        if slot is None:
            return {}
        lane = self.lanes.of(request.client_id) if lane is None else lane
        return {"id_slot": slot + lane * len(self.slots)}

    def _stop_other_calls_read(self, request: CompletionRequest) -> None:
        """A turn is what a caller waits for: another call's warm read gives the server up to it. (This call's
        own read is not stopped: its turn waited for it, or is the early reply that will use it.)"""
        if self._warming is not None and self._warming[0] != request.client_id:
            self._warming[1].cancel()

    async def warmed(self) -> None:
        """Wait until the prompt cache is filled again after a restart (for tests and benchmarks)."""
        if self._rewarming is not None:
            await asyncio.shield(self._rewarming)

    async def aclose(self) -> None:
        if self._rewarming is not None:
            self._rewarming.cancel()
        if self._delegate is not None:
            await self._delegate.aclose()
            self._delegate = None
        if self.owns_server:
            await asyncio.to_thread(self.server.stop)

    async def _failed(self, error: ProviderError) -> ProviderError:
        # Only a lost connection can mean a dead server; an HTTP error came from a live one.
        if not isinstance(error, ProviderUnavailable) or not await asyncio.to_thread(self.server.exited, 1.0):
            return error
        # Restart now rather than on the next turn, so the caller who is transferred is the only one to notice.
        self._restarting = asyncio.ensure_future(self._ready_quietly())
        return ProviderUnavailable(f"the local LLM server died ({error}); it is being restarted")

    async def _ready_quietly(self) -> None:
        try:
            await self._ready()
        except ProviderError as error:
            log.error("event=local_llm_restart_failed error=%s", error)

    async def _ready(self) -> OpenAIProvider:
        """The delegate for a running server; one start at a time however many turns are waiting."""
        if self._delegate is not None and self.server.alive():
            return self._delegate
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._restart())
        await asyncio.shield(self._starting)
        assert self._delegate is not None
        return self._delegate

    async def _restart(self) -> str:
        old, self._delegate = self._delegate, None
        if old is not None:
            await old.aclose()
        url = await asyncio.to_thread(self.server.start)
        self._delegate = OpenAIProvider(
            self.model,
            self.server.base_url,
            timeout=self.timeout,
            name=self.name,
            tool_mode=self.tool_mode,
            extra_body=self._slot,
        )
        if self._prefills:
            # After a restart the cache is filled again in the background: a turn meanwhile waits in the
            # server's queue for the prompt ahead of it, not for all of them.
            self._rewarming = asyncio.ensure_future(self._prefill_all(list(self._prefills)))
        return url

    async def _prefill_all(self, requests: list[CompletionRequest]) -> None:
        for request in requests:
            await self._prefill_lanes(request)

    async def _prefill_lanes(self, request: CompletionRequest) -> None:
        """Read the prompt into its agent's slot of the first lane, then copy it into the other lanes'."""
        await self._prefill(request, lane=0)
        first = self.slots.get(request.agent)
        if first is None:
            return
        for lane in range(1, self.lanes.count):
            target = first + lane * len(self.slots)
            try:
                await asyncio.to_thread(self.server.copy_slot, first, target)
            except httpx.HTTPError as error:
                log.warning("event=local_llm_slot_copy_failed agent=%s lane=%d error=%r", request.agent, lane, error)
                await self._prefill(request, lane=lane)

    async def _prefill(self, request: CompletionRequest, level: int = logging.INFO, lane: int | None = None) -> None:
        # Filling the cache is start-up work, not a caller waiting (a cold prompt takes ~12 s on 2 cores), and
        # a client of its own opens a fresh connection. The first streamed item comes once the whole prompt
        # has been processed and cached; closing the stream there stops the generation.
        started = time.monotonic()
        warming = OpenAIProvider(
            self.model,
            self.server.base_url,
            timeout=max(self.timeout, PREFILL_TIMEOUT_S),
            name=self.name,
            tool_mode=self.tool_mode,
            extra_body=lambda request: self._slot(request, lane),
        )  # the same prompt and slot as the turns', or the cache misses
        try:
            # Twice: seen at start-up, llama.cpp refused the first tools-only grammar now and then (HTTP 400
            # "Failed to initialize samplers") and took the same request a moment later.
            for attempt in (1, 2):
                stream = warming.stream(request)
                try:
                    await anext(stream, None)
                except ProviderError as error:
                    log.warning(
                        "event=local_llm_prefill_failed agent=%s attempt=%d error=%s", request.agent, attempt, error
                    )
                    continue
                finally:
                    await stream.aclose()
                seconds = time.monotonic() - started
                log.log(level, "event=local_llm_prefilled agent=%s lane=%s seconds=%.2f", request.agent, lane, seconds)
                return
        finally:
            await warming.aclose()


def _cancelling() -> bool:
    """True when the running task itself is being cancelled (not only something it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def ahead_of_the_caller(request: CompletionRequest) -> CompletionRequest:
    """The history as the caller's next turn will send it, up to where their words go.

    A history that ends with the agent's own line is, to llama.cpp, a reply to continue ("assistant prefill");
    under a constrained grammar that cannot begin inside a sentence it refuses the request (HTTP 400 "Failed
    to initialize samplers"), so the warm read was lost and the next turn read everything cold. An empty user
    turn after that line renders the same tokens as the next turn's up to the caller's words.
    """
    if not request.messages or request.messages[-1].role != "assistant":
        return request
    return replace(request, messages=(*request.messages, Message(role="user", content="")))
