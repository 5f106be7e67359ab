"""The voice node: the SIP endpoint, the voice service behind it, and its web pages, started and stopped together."""

from __future__ import annotations

import asyncio
import functools
import logging
import socket

from aiohttp import web

from callcenter.app import App, open_app
from callcenter.call_records import CallRecords
from callcenter.config import Config, SupervisorConfig, endpoint_config, host_port
from callcenter.metrics import TelephonyCollector, VoiceMetrics
from callcenter.metrics_page import metrics_app
from callcenter.node import AdmissionLimits, NodeState
from callcenter.recordings import RETENTION_EVERY_S, Recordings
from callcenter.redact import redact
from callcenter.supervisor import Sources, supervisor_app
from callcenter.voice import SpeechModels, VoiceService
from telephony import AudioSocketServer, SipEndpoint

log = logging.getLogger(__name__)

# After the drain deadline, the goodbyes (the caller's last sentence, then the agent's) get this long before BYE.
GOODBYE_TIMEOUT_S = 15.0


class VoiceServer:
    """The SIP endpoint, the voice service behind it, and the metrics page, started and stopped together."""

    def __init__(
        self,
        config: Config,
        listen: str | None = None,
        provider: str | None = None,
        speech: SpeechModels | None = None,
        app: App | None = None,
    ) -> None:
        """`speech` and `app` given are shared and left open at the end (the testbed serves many trials with one
        set of speech models, and each trial's shop and LLM as an App of its own)."""
        self.config, self._listen, self._provider, self._speech, self._app = config, listen, provider, speech, app
        self.metrics = VoiceMetrics()

    async def __aenter__(self) -> VoiceServer:
        voice = self.config.voice
        self.app = self._app if self._app is not None else await open_app(self.config, self._provider)
        # Migrations may wait for a database server: not on the event loop.
        privacy = self.config.privacy
        redaction = functools.partial(redact, region=privacy.phone_region) if privacy.redact_transcripts else None
        self.records = await asyncio.to_thread(
            functools.partial(
                CallRecords,
                voice.calls_database,
                redaction=redaction,
                phone_region=self.config.callers.phone_region,
            )
        )
        self.speech = self._speech if self._speech is not None else await asyncio.to_thread(SpeechModels.load, voice)
        self.recordings = Recordings(voice) if voice.recording != "off" else None
        self._retention = await self._enforce_retention()
        self.service = VoiceService(self.app, self.speech, self.records, self.metrics, self.recordings)
        await self.service.warm_up()
        self.endpoint = SipEndpoint(endpoint_config(self.config.sip, self._listen), self.service.handle_call)
        await self.endpoint.start()
        self.metrics.registry.register(TelephonyCollector(self.endpoint))
        # The records of all nodes may share one database: each row says which node served the call.
        self.records.node = f"{socket.gethostname()}:{self.address[1]}"
        limits = AdmissionLimits(
            voice.max_active_calls, voice.max_cpu_percent, voice.max_stt_delay_s, voice.retry_after_s
        )
        self.node = NodeState(
            limits,
            lambda: len(self.endpoint.calls),
            lambda: tuple(self.metrics.recent_stt),
            lambda: self.endpoint.draining,
        )
        self.endpoint.admission = self.node.admission
        if voice.overload == "transfer":
            self.endpoint.overflow = lambda request: self.service.take_overflow(request.call_id)
        self.audiosocket = await self._serve_audiosocket(self.config.sip.audiosocket_listen)
        self._web = await self._serve_metrics(voice.metrics_listen)
        self._supervisor = await self._serve_supervisor(self.config.supervisor)
        return self

    async def _enforce_retention(self) -> asyncio.Task[None] | None:
        """Recordings past voice.recording_days go now, at start-up, then once a day."""
        recordings = self.recordings
        if recordings is None or not recordings.days:
            return None

        async def sweep() -> None:
            try:
                await asyncio.to_thread(recordings.enforce_retention, self.records)
            except Exception:  # a broken sweep must not stop the node; the next day tries again
                log.exception("event=recordings_retention_failed dir=%s", recordings.directory)

        async def daily() -> None:
            while True:
                await asyncio.sleep(RETENTION_EVERY_S)
                await sweep()

        await sweep()
        return asyncio.create_task(daily(), name="recording-retention")

    async def _serve_audiosocket(self, listen: str) -> AudioSocketServer | None:
        if not listen:
            return None
        host, port = host_port(listen)
        server = AudioSocketServer(
            host.strip("[]"),
            port,
            self.service.handle_call,
            no_media_timeout_s=self.config.sip.no_media_timeout_s,
            allowed_sources=self.config.sip.allowed_sources,  # the PBX's networks, as for SIP
        )
        await server.start()
        log.info("event=audiosocket_listening address=%s:%d", *server.local_address)
        return server

    @property
    def address(self) -> tuple[str, int]:
        return self.endpoint.local_address

    async def _serve_metrics(self, listen: str) -> web.AppRunner | None:
        if not listen:
            return None
        token = self.config.voice.metrics_token
        runner = web.AppRunner(metrics_app(self.metrics, self.node, token), access_log=None)
        await runner.setup()
        host, port = host_port(listen)
        await web.TCPSite(runner, host.strip("[]"), port).start()
        log.info("event=metrics_listening address=%s auth=%s", runner.addresses[0][:2], "token" if token else "none")
        return runner

    async def _serve_supervisor(self, supervisor: SupervisorConfig) -> web.AppRunner | None:
        """The supervisor's page on a listener of its own: it may face the supervisors' network behind its token
        while /metrics and /health stay open to Prometheus and the load balancer on theirs."""
        if not supervisor.listen:
            return None
        sources = Sources(
            self.service.live,
            self.records,
            self.app.backend or self.app.shop,  # the orders a call made: in the order system over HTTP, if one
            lambda: {"node": self.records.node, **self.node.health()},
            masked=supervisor.redact,
            region=self.config.privacy.phone_region,
        )
        runner = web.AppRunner(supervisor_app(supervisor, sources), access_log=None)
        await runner.setup()
        host, port = host_port(supervisor.listen)
        await web.TCPSite(runner, host.strip("[]"), port).start()
        log.info(
            "event=supervisor_listening address=%s auth=%s",
            runner.addresses[0][:2],
            "token" if supervisor.token else "none",
        )
        return runner

    @property
    def supervisor_address(self) -> tuple[str, int] | None:
        return self._supervisor.addresses[0][:2] if self._supervisor is not None else None

    async def drain(self) -> None:
        """What SIGTERM does: refuse new calls (503 to INVITE and OPTIONS), let live calls finish up to the
        deadline, then end them with a spoken goodbye and BYE."""
        self.endpoint.drain()
        log.info(
            "event=node_draining deadline_s=%s live_calls=%d",
            self.config.voice.shutdown_deadline_s,
            len(self.service.calls),
        )

    async def _end_live_calls(self) -> None:
        """Live calls get until the deadline; then each still live hears voice.drain_goodbye and is hung up (its
        record's end_reason: drained). Returns once their conversations have ended (bounded)."""
        voice = self.config.voice
        await self._until_no_calls(voice.shutdown_deadline_s)
        if live := len(self.service.calls):
            said = self.service.calls.end_for_drain(voice.drain_goodbye)
            log.info("event=drain_deadline live_calls=%d goodbyes=%d", live, said)
            await self._until_no_calls(GOODBYE_TIMEOUT_S)

    async def _until_no_calls(self, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.service.calls and loop.time() < deadline:
            await asyncio.sleep(0.1)

    async def __aexit__(self, *exc_info: object) -> None:
        # No new call from now on (the PBX is told first); the live ones end by themselves or by the goodbye,
        # before the endpoint stops: its stop cancels what is still running, a record being written included.
        self.endpoint.drain()
        if self.endpoint.registration is not None:
            await self.endpoint.registration.stop()
        audiosocket = (
            self.audiosocket.stop(self.config.voice.shutdown_deadline_s + GOODBYE_TIMEOUT_S)
            if self.audiosocket
            else None
        )
        await asyncio.gather(self._end_live_calls(), *([audiosocket] if audiosocket else []))
        await self.endpoint.stop(1.0)  # BYE to any call the goodbye did not end
        if self._web is not None:
            await self._web.cleanup()
        if self._supervisor is not None:
            await self._supervisor.cleanup()
        if self._retention is not None:
            self._retention.cancel()
        if self.recordings is not None:  # first: closing a recording saves its call's record
            await asyncio.to_thread(self.recordings.close)
        await asyncio.to_thread(self.records.close)  # writes what is queued: not on the event loop
        if self._app is None:
            self.app.close()
        if self._speech is None:
            self.speech.close()
