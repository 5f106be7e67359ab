"""SipEndpoint: the SIP user agent that answers calls and dials test calls, over UDP (and TCP and TLS when
configured) on one asyncio loop. Trunk mode: the PBX sends INVITEs straight to us. Extension mode
(`registration=RegistrationConfig(...)`): we also REGISTER our Contact with the PBX, which then sends the extension's calls to it.

    endpoint = SipEndpoint(EndpointConfig(listen_host="192.0.2.10", listen_port=5060), on_call)
    await endpoint.start()
    ...
    await endpoint.stop(deadline_s=10)

Each answered call runs `on_call(call)` as a task; when it returns with the call still up, we hang up.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from telephony import sdp
from telephony.errors import TelephonyError
from telephony.media_clock import MediaClock
from telephony.ports import PortRangeExhausted
from telephony.rtp import MediaTotals, RtpError, RtpSession
from telephony.sip import screening
from telephony.sip.dialog import Dialog, DialogError
from telephony.sip.headers import Headers
from telephony.sip.limits import RateLimiter
from telephony.sip.message import Request, Response, SipParseError, SipUri, make_response, new_call_id, new_tag
from telephony.sip.metrics import SipMetrics
from telephony.sip.registration import Registration, RegistrationConfig
from telephony.sip.stream_transport import StreamLimits, StreamTransport
from telephony.sip.tls import TlsConfig
from telephony.sip.transaction import (
    ClientTransaction,
    InviteServerTransaction,
    ServerTransaction,
    Timers,
    TransactionKey,
    TransactionLayer,
)
from telephony.sip.transport import Peer, TransportName, Transports, UdpTransport, resolve, uri_transport
from telephony.sip.useragent import ALLOW, UserAgent, warning
from telephony.sip_call import CallContext, SipCall
from telephony.sources import AllowedSources, MediaSources
from telephony.srtp import SrtpPolicy
from telephony.srtp import check_mode as check_srtp_mode

log = logging.getLogger(__name__)


class CallFailed(TelephonyError):
    """An outgoing call was not answered: the final SIP status and reason (408 when nobody answered)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"call failed: {status} {reason}")
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class EndpointConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 5060  # 0: any free port (see SipEndpoint.local_address)
    advertised_host: str | None = None  # the address in Contact, Via and SDP; default: listen_host
    rtp_port_range: tuple[int, int] = (10000, 20000)
    allowed_sources: tuple[str, ...] | None = None  # CIDR networks allowed to send requests; None: anyone
    # Strict RTP: a call's media only from the host its SDP named (any port) or these CIDR networks (a media
    # relay whose RTP leaves from another host than its SDP says); strict_rtp=False: whoever sends first.
    media_sources: tuple[str, ...] = ()
    strict_rtp: bool = True
    user_agent: str = "VoiceSwarm"
    no_media_timeout_s: float | None = 30.0  # hang up after this long without RTP; None: never
    invite_rate: float = 10.0  # new INVITEs a second per source address (the excess gets 503)
    invite_burst: int = 20
    max_calls: int = 100  # more simultaneous calls get 486 Busy Here
    ring_ms: int = 0  # between 180 Ringing and 200 OK
    codecs: tuple[str, ...] = ("PCMU", "PCMA")  # ours, in order of preference (the caller's order wins)
    srtp: str = "off"  # SDES-keyed SRTP: off, offer (when the caller offers keys), require (488 without them)
    transfer_timeout_s: float = 30.0
    timers: Timers = Timers()
    registration: RegistrationConfig | None = None  # extension mode: REGISTER with a PBX
    listen_tcp: tuple[str, int] | None = None  # SIP over TCP as well, on this (host, port); port 0: any free one
    listen_tls: tuple[str, int] | None = None  # SIP over TLS as well (needs tls)
    tls: TlsConfig | None = None  # our certificate and key, and the CAs of servers we connect to
    stream_limits: StreamLimits = StreamLimits()  # TCP and TLS connections: caps and timeouts

    def __post_init__(self) -> None:
        hosts = {
            "listen_host": self.listen_host,
            "advertised_host": self.advertised_host,
            "listen_tcp": self.listen_tcp[0] if self.listen_tcp else None,
            "listen_tls": self.listen_tls[0] if self.listen_tls else None,
        }
        for name, value in hosts.items():
            if value is not None:
                try:
                    ipaddress.ip_address(value)
                except ValueError:
                    raise ValueError(f"{name} must be an IP address, got {value!r}") from None
        if self.listen_tls is not None and self.tls is None:
            raise ValueError("listen_tls needs tls: a TlsConfig with our certificate and key")
        if self.tls is not None:
            self.tls.contexts()  # TlsConfigError now, naming the file, rather than at the first call
        if self.advertised_host is None and ipaddress.ip_address(self.listen_host).is_unspecified:
            raise ValueError(
                f"listening on {self.listen_host} needs advertised_host: the address callers and "
                "their media should reach us at"
            )
        if self.advertised_host is not None and ipaddress.ip_address(self.advertised_host).is_unspecified:
            raise ValueError("advertised_host must be a reachable address, not 0.0.0.0 or ::")
        AllowedSources.parse(self.allowed_sources)  # ValueError naming the network that is not one
        MediaSources.parse(self.media_sources)
        if self.invite_rate <= 0 or self.invite_burst < 1:
            raise ValueError(
                f"invite_rate must be > 0 and invite_burst >= 1, got {self.invite_rate}, {self.invite_burst}"
            )
        if self.registration is not None and not isinstance(self.registration, RegistrationConfig):
            raise ValueError(f"registration must be a RegistrationConfig, got {type(self.registration).__name__}")
        check_srtp_mode(self.srtp)

    @property
    def media_host(self) -> str:
        return self.advertised_host or self.listen_host


OnCall = Callable[[SipCall], Awaitable[None]]


class SipEndpoint:
    def __init__(self, config: EndpointConfig, on_call: OnCall) -> None:
        self.config = config
        self.metrics = SipMetrics()
        self.media = MediaTotals()  # the RTP counters of ended calls (the live ones: each call's rtp_stats)
        self._on_call = on_call
        self._sources = AllowedSources.parse(config.allowed_sources)
        self._media_sources = MediaSources.parse(config.media_sources, strict=config.strict_rtp)
        self._invites = RateLimiter(config.invite_rate, config.invite_burst)
        self._udp = UdpTransport(self.metrics, self._on_request, self._on_response, user_agent=config.user_agent)
        self._transport = Transports(self._udp)
        self._streams: list[StreamTransport] = []
        self._layer: TransactionLayer | None = None
        self._ua: UserAgent | None = None
        self._context: CallContext | None = None
        self._clock: MediaClock | None = None  # one 20 ms send clock for all our calls' RTP
        self.registration: Registration | None = None  # extension mode: its `status` is for health checks
        self._calls: dict[tuple[str, str], SipCall] = {}
        self._setups: dict[TransactionKey, asyncio.Task[None]] = {}  # INVITE transaction key -> the task answering it
        self._tasks: set[asyncio.Task[Any]] = set()
        self._shielded: set[asyncio.Task[Any]] = set()  # media shutdown: awaited by stop(), never cancelled
        self._stopping = False
        self._idle = asyncio.Event()
        # Admission control: None admits a new call; a number of seconds refuses it (and fails OPTIONS, so a
        # dispatcher sends the next calls elsewhere) with 503 and that Retry-After.
        self.admission: Callable[[], float | None] | None = None
        # Over the limits, an INVITE for which this says True is answered all the same (the application hands
        # that call to a person); OPTIONS still get 503, so the dispatcher sends the next calls elsewhere.
        self.overflow: Callable[[Request], bool] | None = None

    @property
    def local_address(self) -> tuple[str, int]:
        """Where we listen for SIP over UDP."""
        if self._udp.local_address is None:
            raise RuntimeError("the endpoint is not started")
        return self._udp.local_address

    def address(self, transport: TransportName) -> tuple[str, int]:
        """Where we listen for SIP over `transport` (UDP, TCP or TLS)."""
        return self._transport.address(transport)

    @property
    def calls(self) -> list[SipCall]:
        return list(self._calls.values())

    async def start(self) -> None:
        config = self.config
        _host, port = await self._udp.open(config.listen_host, config.listen_port)
        await self._open_streams()
        self._clock = MediaClock()
        self._layer = TransactionLayer(self._transport, self.metrics, config.media_host, timers=config.timers)
        for stream in self._streams:
            stream.on_unreachable = self._layer.unreachable
        self._layer.on_request = self._on_new_request
        self._layer.on_cancel = self._on_cancel
        self._layer.on_stray_response = self._on_stray_response
        self._layer.screen = self._screen
        registration = config.registration
        user = (registration.contact_user or registration.username) if registration else "voiceswarm"
        contact = SipUri("sip", user, None, config.media_host, port)
        self._ua = UserAgent(
            self._layer,
            self.metrics,
            config.user_agent,
            f"<{contact}>",
            {
                stream.name: SipUri("sip", user, None, config.media_host, self._transport.port(stream.name))
                for stream in self._streams
            },
        )
        self._context = CallContext(
            self._ua,
            config.media_host,
            config.codecs,
            config.transfer_timeout_s,
            self._spawn,
            self._call_ended,
            config.srtp,
        )
        if registration is not None:
            registrar = SipUri.parse(registration.outbound_proxy or registration.registrar)
            contact = self._ua.contact_uri(uri_transport(registrar), secure=registrar.scheme == "sips") or contact
            self.registration = Registration(registration, self._ua, contact, unregister_timeout_s=8 * config.timers.t1)
            self.registration.start()

    async def _open_streams(self) -> None:
        config = self.config
        tls = config.tls.contexts() if config.tls is not None else None
        for listen, contexts in ((config.listen_tcp, None), (config.listen_tls, tls)):
            if listen is None:
                continue
            stream = StreamTransport(
                self.metrics,
                self._on_request,
                self._on_response,
                tls=contexts,
                limits=config.stream_limits,
                user_agent=config.user_agent,
            )
            try:
                await stream.open(*listen)
            except OSError:
                await self._transport.close()
                raise
            self._transport.add(stream.name, stream)
            self._streams.append(stream)

    def drain(self) -> None:
        """Refuse new calls and fail OPTIONS with 503 from now on; live calls go on (stop() ends them)."""
        self._stopping = True

    @property
    def draining(self) -> bool:
        return self._stopping

    def _unavailable(self, ua: UserAgent, request: Request) -> Response | None:
        """503 while draining or over the admission limits (unless `overflow` takes the INVITE), else None."""
        if self._stopping:
            return ua.response(request, 503, "Service Unavailable (shutting down)")
        retry_after = self.admission() if self.admission is not None else None
        if retry_after is not None and not (request.method == "INVITE" and self.overflow and self.overflow(request)):
            return ua.response(
                request,
                503,
                "Service Unavailable (overloaded)",
                headers={"Retry-After": str(max(1, round(retry_after)))},
            )
        return None

    async def stop(self, deadline_s: float = 10.0) -> None:
        """Unregister, refuse new calls, give live ones until the deadline to end, then BYE them; leaves no
        task behind."""
        self._stopping = True
        if self.registration is not None:
            await self.registration.stop()  # first: the PBX stops sending us new calls
        for task in list(self._setups.values()):
            task.cancel()  # still ringing: answered 503
        if self._calls:
            self._idle.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), deadline_s)
        leaving = [self._spawn(call._leave("shutdown")) for call in list(self._calls.values())]
        if leaving:
            await asyncio.wait(leaving, timeout=4 * self.config.timers.t1)
        while self._tasks:  # cancelling may spawn more (a media close, a BYE): repeat until none is left
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for call in list(self._calls.values()):
            call.end_without_bye("shutdown")
        await asyncio.gather(*self._shielded, return_exceptions=True)
        if self._layer is not None:
            self._layer.close()
        await self._transport.close()
        await asyncio.sleep(0)  # let the transport's connection_lost run
        log.info("event=sip_stopped metrics=%s", self.metrics)

    # ---- dialling out ------------------------------------------------------------------------------------

    async def dial(self, uri: str, *, from_user: str = "voiceswarm", timeout_s: float = 10.0) -> SipCall:
        """Call `uri` (sip:user@host[:port]); returns the answered call or raises CallFailed."""
        ua, _context, config = self._require_started()
        target = SipUri.parse(uri)
        destination = await resolve(target)
        if not self._transport.supports(destination.transport):
            raise ValueError(
                f"cannot dial {uri}: SIP over {destination.transport} is not configured "
                f"(EndpointConfig.listen_{destination.transport.lower()})"
            )
        call_id = new_call_id(config.media_host)
        rtp = await RtpSession.open(
            config.listen_host,
            config.rtp_port_range,
            clock=self._clock,
            no_media_timeout=config.no_media_timeout_s,
            call_id=call_id,
            sources=self._media_sources,
        )
        self.metrics.calls_dialled += 1
        srtp = SrtpPolicy(config.srtp)  # the keys our offer carries are the call's keys
        try:
            offer = sdp.offer(config.media_host, rtp.local_port, config.codecs, srtp=srtp)
            request = self._invite(target, from_user, call_id, offer)
            transaction = ua.start(request, destination)
            try:
                response = await asyncio.wait_for(asyncio.shield(transaction.final), timeout_s)
            except TimeoutError:
                self._cancel_invite(request, transaction)
                raise CallFailed(408, f"no answer within {timeout_s:g} s") from None
            if not 200 <= response.status < 300:
                raise CallFailed(response.status, response.reason)
            return self._dialled(request, response, rtp, srtp)
        except BaseException:
            self.metrics.dial_failures += 1
            await rtp.close()
            raise

    def _invite(self, target: SipUri, from_user: str, call_id: str, offer: str) -> Request:
        assert self._ua is not None
        port = self.local_address[1]
        local = SipUri("sip", from_user, None, self.config.media_host, port)
        headers = Headers(
            [
                ("From", f"<{local}>;tag={new_tag()}"),
                ("To", f"<{target}>"),
                ("Call-ID", call_id),
                ("CSeq", "1 INVITE"),
                ("Max-Forwards", "70"),
                ("Contact", self._ua.contact_for(uri_transport(target), secure=target.scheme == "sips")),
                ("Allow", ALLOW),
                ("Content-Type", "application/sdp"),
            ]
        )
        return Request("INVITE", target, headers, offer.encode())

    def _cancel_invite(self, request: Request, transaction: ClientTransaction) -> None:
        """RFC 3261 §9.1: CANCEL in the INVITE's branch, once something came back (else it cannot land)."""
        assert self._layer is not None
        if transaction.provisional is None:
            return
        headers = Headers([("Via", request.headers.get_all("Via")[0])])
        for name in ("Route", "From", "To", "Call-ID"):
            for value in request.headers.get_all(name):
                headers.add(name, value)
        headers.add("CSeq", f"{request.cseq[0]} CANCEL")
        headers.add("Max-Forwards", "70")
        self._layer.request(Request("CANCEL", request.uri, headers), transaction.destination)

    def _dialled(self, request: Request, response: Response, rtp: RtpSession, srtp: SrtpPolicy) -> SipCall:
        ua, context, _ = self._require_started()
        dialog = Dialog.as_uac(request, response, request.headers.get("Contact") or ua.contact)
        call = SipCall(context, dialog, rtp, request, srtp)
        call.ack = dialog.create_request("ACK", cseq=request.cseq[0])
        self._send_ack(call)
        call.confirmed.set()
        self._calls[dialog.key] = call
        self.metrics.calls_active = len(self._calls)
        try:
            call.start_media(
                sdp.parse_answer(response.body.decode("utf-8", "replace"), codecs=self.config.codecs, srtp=srtp)
            )
        except (sdp.SdpError, RtpError) as error:
            self._spawn(call.hangup())
            raise CallFailed(488, f"unusable SDP answer: {error}") from None
        call.answered_at = time.time()
        log.info("event=sip_dial_answered call=%s to=%s", call.call_id, request.uri)
        return call

    def _send_ack(self, call: SipCall) -> None:
        assert self._layer is not None and call.ack is not None
        self._spawn(self._send_ack_async(call.ack, call.dialog.next_hop()))

    async def _send_ack_async(self, ack: Request, target: SipUri) -> None:
        assert self._layer is not None
        ack.headers.remove("Via")  # each ACK for a 2xx is its own transaction: a fresh branch
        self._layer.send_stateless(ack, await resolve(target))

    # ---- requests ----------------------------------------------------------------------------------------

    def _on_request(self, request: Request, source: Peer) -> None:
        if self._layer is not None:
            self._layer.receive_request(request, source)

    def _on_response(self, response: Response, source: Peer) -> None:
        if self._layer is not None:
            self._layer.receive_response(response, source)

    def _on_new_request(self, request: Request, transaction: ServerTransaction | None) -> None:
        ua, _, _ = self._require_started()
        to_tag = request.to.tag
        if to_tag is not None:
            call = self._calls.get((request.call_id, to_tag))
            if call is not None:
                call.handle_request(request, transaction)
            elif transaction is not None:
                self.metrics.unknown_dialog += 1
                transaction.respond(ua.response(request, 481))
            return
        if transaction is None:
            return  # an ACK outside any dialog: nothing to do
        if request.method == "INVITE":
            assert isinstance(transaction, InviteServerTransaction)
            self._on_invite(request, transaction)
        elif request.method == "OPTIONS":
            transaction.respond(self._unavailable(ua, request) or ua.response(request, 200))
        elif request.method in ("BYE", "NOTIFY", "INFO", "UPDATE", "PRACK", "REFER"):
            self.metrics.unknown_dialog += 1  # these only exist inside a dialog
            transaction.respond(ua.response(request, 481))
        else:
            transaction.respond(ua.method_not_supported(request))

    def _screen(self, request: Request, source: Peer) -> Response | None:
        """Refusals that need no transaction (RFC 3261 §8.2.7): each is one response to one request, so a
        flood or a forged source costs the sender as much as it costs us."""
        to_tag = request.to.tag
        if to_tag is not None:
            if request.method == "INVITE" and (request.call_id, to_tag) not in self._calls:
                self.metrics.unknown_dialog += 1  # a re-INVITE would otherwise retransmit its 481 for 32 s
                return make_response(request, 481)
            return screening.refusal(request)
        if not self._allowed(source[0]):
            self.metrics.forbidden += 1
            self._transport.warn("forbidden", source, f"{request.method} from outside allowed_sources")
            return make_response(request, 403, "Forbidden (source not allowed)")
        if request.method == "INVITE" and not self._invites.allow(source[0]):
            self.metrics.rate_limited += 1
            self._transport.warn("rate_limited", source, f"over {self.config.invite_rate:g} INVITEs/s")
            return make_response(
                request,
                503,
                "Service Unavailable (rate limit)",
                headers={"Retry-After": str(self._invites.retry_after())},
            )
        return screening.refusal(request)

    def _on_invite(self, request: Request, transaction: InviteServerTransaction) -> None:
        ua, _, config = self._require_started()
        self.metrics.invites_received += 1
        refusal = self._unavailable(ua, request)
        if refusal is not None:
            transaction.respond(refusal)
            return
        if len(self._calls) + len(self._setups) >= config.max_calls:
            self.metrics.busy += 1
            transaction.respond(ua.response(request, 486))
            return
        task = self._spawn(self._answer(request, transaction))
        self._setups[transaction.key] = task
        task.add_done_callback(lambda done: self._setup_done(done, transaction))

    async def _answer(self, request: Request, transaction: InviteServerTransaction) -> None:
        ua, context, config = self._require_started()
        try:
            rtp = await RtpSession.open(
                config.listen_host,
                config.rtp_port_range,
                clock=self._clock,
                no_media_timeout=config.no_media_timeout_s,
                call_id=request.call_id,
                sources=self._media_sources,
            )
        except (PortRangeExhausted, OSError) as error:
            log.error("event=sip_rtp_unavailable call=%s error=%s", request.call_id, error)
            transaction.respond(ua.response(request, 503, "Service Unavailable (no RTP port)"))
            return
        try:
            dialog = Dialog.as_uas(request, new_tag(), ua.contact_for_request(request))
            call = SipCall(context, dialog, rtp, request)
            answer = call.answer_offer(request.body) if request.body else None
        except sdp.NoCommonCodec as error:
            self.metrics.no_common_codec += 1
            log.info("event=sip_no_common_codec call=%s detail=%s", request.call_id, error)
            transaction.respond(ua.response(request, 488, headers=warning(304, str(error))))
            await rtp.close()
            return
        except (sdp.SdpError, DialogError, SipParseError) as error:
            self.metrics.bad_requests += 1
            transaction.respond(ua.response(request, 400, headers=warning(399, str(error))))
            await rtp.close()
            return
        except BaseException:
            await rtp.close()
            raise
        tag = dialog.local_tag
        try:
            transaction.respond(ua.response(request, 180, to_tag=tag))
            if config.ring_ms:
                await asyncio.sleep(config.ring_ms / 1000)
            body = answer.sdp if answer is not None else call.make_offer()
            if answer is not None:
                call.start_media(answer)  # its first packet leaves after the 200: no await in between
        except RtpError as error:  # e.g. a host name instead of an address in c=
            self.metrics.no_common_codec += 1
            transaction.respond(ua.response(request, 488, headers=warning(305, str(error))))
            await rtp.close()
            return
        except BaseException:  # CANCEL (already answered 487 by _on_cancel) or stop()
            if not transaction.final:
                transaction.respond(ua.response(request, 503, "Service Unavailable (shutting down)", to_tag=tag))
            await rtp.close()
            raise
        self._calls[dialog.key] = call
        self.metrics.calls_active = len(self._calls)
        transaction.on_ack_timeout = call.on_ack_timeout
        transaction.respond(ua.response(request, 200, to_tag=tag, sdp=body))
        call.answered_at = time.time()
        self.metrics.calls_answered += 1
        # The caller's number at DEBUG only: the application logs it masked (callcenter/redact.py).
        log.debug("event=sip_call_from call=%s from=%s", call.call_id, call.caller)
        log.info("event=sip_call_answered call=%s to=%s source=%s", call.call_id, call.called, transaction.source)
        self._spawn(self._run_application(call))

    def _setup_done(self, task: asyncio.Task[None], transaction: InviteServerTransaction) -> None:
        self._setups.pop(transaction.key, None)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self.metrics.internal_errors += 1
            log.error("event=sip_answer_failed call=%s", transaction.request.call_id, exc_info=error)
        if not transaction.final:  # whatever went wrong, the caller gets an answer and the transaction ends
            assert self._ua is not None
            sent = transaction.response  # the 180's tag, if one went out
            tag = sent.to.tag if sent is not None and sent.status > 100 else None
            transaction.respond(self._ua.response(transaction.request, 500, to_tag=tag))

    async def _run_application(self, call: SipCall) -> None:
        try:
            await self._on_call(call)
        except Exception:
            log.exception("event=on_call_failed call=%s", call.call_id)
        if not call.closed.is_set():
            await call.hangup()

    def _on_cancel(self, cancel: ServerTransaction, invite: InviteServerTransaction) -> None:
        ua = self._ua
        assert ua is not None
        cancel.respond(ua.response(cancel.request, 200))
        if invite.final:
            return  # too late: the call was answered (or refused) already
        self.metrics.calls_cancelled += 1
        sent = invite.response  # keep the To tag of our 180 if it went out
        tag = sent.to.tag if sent is not None and sent.to.tag else new_tag()
        invite.respond(ua.response(invite.request, 487, to_tag=tag))
        log.info("event=sip_call_cancelled call=%s", invite.request.call_id)
        task = self._setups.get(invite.key)
        if task is not None:
            task.cancel()

    def _on_stray_response(self, response: Response) -> None:
        """A retransmitted 2xx to our INVITE: our ACK was lost, send it again."""
        if response.cseq[1] != "INVITE" or not 200 <= response.status < 300:
            return
        call = self._calls.get((response.call_id, response.from_.tag or ""))
        if call is not None and call.ack is not None:
            self._send_ack(call)

    # ---- helpers -----------------------------------------------------------------------------------------

    def _allowed(self, source: str) -> bool:
        return self._sources.allows(source)

    def _call_ended(self, call: SipCall) -> None:
        if self._calls.get(call.dialog.key) is call:
            del self._calls[call.dialog.key]
        self.metrics.calls_ended += 1
        self.metrics.calls_active = len(self._calls)
        self.media.add(call.rtp_stats)
        if not self._calls:
            self._idle.set()

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], *, shielded: bool = False) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine)
        tasks = self._shielded if shielded else self._tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return task

    def _require_started(self) -> tuple[UserAgent, CallContext, EndpointConfig]:
        if self._ua is None or self._context is None:
            raise RuntimeError("the endpoint is not started: await endpoint.start() first")
        return self._ua, self._context, self.config
