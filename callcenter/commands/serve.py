"""`voiceswarm serve`: answer calls from the PBX over SIP, until SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path

from aiohttp import web

from callcenter.app import open_app
from callcenter.config import Config, endpoint_config, host_port
from callcenter.metrics import VoiceMetrics
from callcenter.records import CallRecords
from callcenter.voice import SpeechModels, VoiceService
from telephony.audiosocket import AudioSocketServer
from telephony.endpoint import SipEndpoint

log = logging.getLogger(__name__)


def register(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="answer phone calls over SIP")
    serve.add_argument("--listen", help="SIP HOST:PORT (default: sip.listen from config)")
    serve.add_argument("--llm", choices=("auto", "offline", "ollama", "openai"))
    serve.set_defaults(run=lambda args, config: asyncio.run(serve_forever(config, args.listen, args.llm)))


async def serve_forever(config: Config, listen: str | None, provider: str | None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with VoiceServer(config, listen, provider) as server:
        print(f"voiceswarm: answering SIP calls on {server.address[0]}:{server.address[1]} (brain: {server.app.brain})",
              flush=True)
        await stop.wait()
        log.info("event=shutdown deadline_s=%s live_calls=%d", config.voice.shutdown_deadline_s, len(server.endpoint.calls))
    return 0


class VoiceServer:
    """The SIP endpoint, the voice service behind it, and the metrics page, started and stopped together."""

    def __init__(self, config: Config, listen: str | None = None, provider: str | None = None,
                 speech: SpeechModels | None = None) -> None:
        self.config, self._listen, self._provider, self._speech = config, listen, provider, speech
        self.metrics = VoiceMetrics()

    async def __aenter__(self) -> VoiceServer:
        voice = self.config.voice
        self.app = await open_app(self.config, self._provider)
        Path(voice.calls_database).parent.mkdir(parents=True, exist_ok=True)
        self.records = CallRecords(voice.calls_database)
        self.speech = self._speech or await asyncio.to_thread(SpeechModels.load, voice)
        self.service = VoiceService(self.app, self.speech, self.records, self.metrics)
        await self.service.warm_up()
        self.endpoint = SipEndpoint(endpoint_config(self.config.sip, self._listen), self.service.handle_call)
        await self.endpoint.start()
        self.audiosocket = await self._serve_audiosocket(self.config.sip.audiosocket_listen)
        self._web = await self._serve_metrics(voice.metrics_listen)
        return self

    async def _serve_audiosocket(self, listen: str) -> AudioSocketServer | None:
        if not listen:
            return None
        host, port = host_port(listen)
        server = AudioSocketServer(host, port, self.service.handle_call, no_media_timeout_s=self.config.sip.no_media_timeout_s)
        await server.start()
        log.info("event=audiosocket_listening address=%s:%d", *server.local_address)
        return server

    @property
    def address(self) -> tuple[str, int]:
        return self.endpoint.local_address

    async def _serve_metrics(self, listen: str) -> web.AppRunner | None:
        if not listen:
            return None
        page = web.Application()
        page.router.add_get("/metrics", lambda _: web.Response(body=self.metrics.exposition(),
                                                                content_type="text/plain", charset="utf-8"))
        runner = web.AppRunner(page, access_log=None)
        await runner.setup()
        host, port = host_port(listen)
        await web.TCPSite(runner, host, port).start()
        return runner

    async def __aexit__(self, *exc_info: object) -> None:
        # Live calls get until the deadline to finish; then the endpoint says BYE.
        deadline = self.config.voice.shutdown_deadline_s
        if self.audiosocket is not None:
            await asyncio.gather(self.endpoint.stop(deadline), self.audiosocket.stop(deadline))
        else:
            await self.endpoint.stop(deadline)
        if self._web is not None:
            await self._web.cleanup()
        self.records.close()
        self.app.close()
        if self._speech is None:
            self.speech.close()
