"""One SIP call as the application sees it (telephony.call.Call): an RtpSession for the audio, a Dialog
for the signalling inside the call (BYE either way, re-INVITE for hold, REFER for blind transfer)."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from telephony import sdp
from telephony.call import EndReason, MediaTap
from telephony.rtp import RtpError, RtpSession, RtpStats
from telephony.sip.dialog import Dialog, DialogError
from telephony.sip.message import Request, SipParseError, SipUri
from telephony.sip.transaction import InviteServerTransaction, ServerTransaction
from telephony.sip.useragent import UserAgent, warning
from telephony.srtp import SrtpPolicy

log = logging.getLogger(__name__)

_SIPFRAG_RE = re.compile(rb"\s*SIP/2\.0[ \t]+([1-6][0-9][0-9])")
_NUMBER_RE = re.compile(r"[0-9A-Za-z+*#._\-]+")


@dataclass
class CallContext:
    """What the endpoint lends each call."""

    ua: UserAgent
    media_host: str  # the address in our SDP
    codecs: tuple[str, ...]
    transfer_timeout_s: float
    spawn: Callable[..., asyncio.Task[Any]]  # spawn(coro, *, shielded=False): a task the endpoint tracks
    on_ended: Callable[[SipCall], None]
    srtp: str = "off"  # off, offer or require (telephony.srtp.MODES)


class SipCall:
    """Created by SipEndpoint (for an INVITE it answers, or by `dial`); never by the application."""

    def __init__(
        self, context: CallContext, dialog: Dialog, rtp: RtpSession, request: Request, srtp: SrtpPolicy | None = None
    ) -> None:
        self._context, self.dialog, self._rtp = context, dialog, rtp
        self.call_id = dialog.call_id
        sender, called = request.from_, request.to
        self.caller = _user(sender.uri)
        self.caller_name = sender.display or None
        self.called = _user(called.uri) or _user(request.uri)
        headers: dict[str, str] = {}
        for name, value in request.headers.items():
            headers.setdefault(name, value)
        self.headers: Mapping[str, str] = headers
        self.closed = asyncio.Event()
        self.end_reason: EndReason | None = None
        self.answered_at: float | None = None  # time.time() of our 200 (or of the peer's, for dial)
        self.ended_at: float | None = None
        self.confirmed = asyncio.Event()  # the ACK of our 2xx came (or we stopped waiting for it)
        self.ack: Request | None = None  # our ACK to the peer's 2xx (dial), re-sent if the 2xx is
        self._sdp_session = random.getrandbits(31)  # o= session id, kept for every later answer
        self._sdp_version = 0
        self._srtp = srtp or SrtpPolicy(context.srtp)  # this call's own SRTP keys, drawn fresh
        self._awaiting_answer = False  # our 2xx carried the offer: the answer comes in the ACK
        self._leaving = False
        self._notifies: asyncio.Queue[int | None] | None = None
        rtp.on_media_timeout = self._on_media_timeout

    # ---- the Call protocol ----------------------------------------------------------------------------

    @property
    def tap(self) -> MediaTap | None:
        return self._rtp.tap

    @tap.setter
    def tap(self, tap: MediaTap | None) -> None:
        self._rtp.tap = tap

    @property
    def audio_in(self) -> AsyncIterator[np.ndarray]:
        return self._rtp.audio_in

    @property
    def dtmf_in(self) -> AsyncIterator[str]:
        return self._rtp.dtmf_in

    def play(self, pcm16: np.ndarray) -> None:
        self._rtp.play(pcm16)

    def flush(self) -> None:
        self._rtp.flush()

    @property
    def playing(self) -> bool:
        return self._rtp.playing

    @property
    def played_samples(self) -> int:
        return self._rtp.played_samples

    async def wait_played(self) -> None:
        await self._rtp.wait_played()

    async def send_dtmf(self, digit: str, duration_ms: int = 100) -> None:
        """Send one key as RFC 4733 events (raises RtpError when no telephone-event was agreed)."""
        await self._rtp.send_dtmf(digit, duration_ms)

    @property
    def srtp_suite(self) -> str | None:
        """The SRTP crypto suite the media runs on, None for plain RTP."""
        return self._rtp.srtp_suite

    @property
    def rtp_stats(self) -> RtpStats:
        return self._rtp.stats

    @property
    def media_direction(self) -> str:
        """Ours, as last negotiated: sendrecv, or sendonly/recvonly/inactive while on hold."""
        return self._rtp.direction

    async def hangup(self) -> None:
        await self._leave("local_hangup")

    async def transfer(self, target: str) -> bool:
        """Blind transfer (RFC 3515): REFER, then follow the NOTIFY sipfrags. On success we leave with BYE;
        on a failure or after transfer_timeout_s the call stays up and False is returned."""
        uri = self._refer_uri(target)
        if self.closed.is_set() or self._leaving or self._notifies is not None:
            return False
        self._notifies = asyncio.Queue(maxsize=16)  # before the REFER: a NOTIFY may overtake the 202
        ok = False
        try:
            if not await self._refer(uri):
                return False
            async with asyncio.timeout(self._context.transfer_timeout_s):
                while (status := await self._notifies.get()) is not None and status < 200:
                    pass
            ok = status is not None and status < 300
            log.info("event=sip_transfer_result call=%s target=%s sipfrag=%s", self.call_id, uri, status)
        except TimeoutError:
            log.warning(
                "event=sip_transfer_timeout call=%s target=%s seconds=%s",
                self.call_id,
                uri,
                self._context.transfer_timeout_s,
            )
        finally:
            self._notifies = None
        metrics = self._context.ua.metrics
        if not ok:
            metrics.transfers_failed += 1
            return False
        metrics.transfers_succeeded += 1
        await self._leave("transferred")
        return True

    # ---- set-up (called by the endpoint) ---------------------------------------------------------------

    def answer_offer(self, offer: bytes) -> sdp.Answer:
        """Our answer to the peer's offer; raises sdp.NoCommonCodec or sdp.SrtpRefused (488), sdp.SdpError (400)."""
        answer = sdp.answer(
            offer.decode("utf-8", "replace"),
            self._context.media_host,
            self._rtp.local_port,
            codecs=self._context.codecs,
            session_id=self._sdp_session,
            session_version=self._sdp_version,
            srtp=self._srtp,
        )
        self._sdp_version += 1
        return answer

    def make_offer(self) -> str:
        """Our offer, for a 2xx answering an INVITE without SDP (the answer then comes in the ACK)."""
        offer = sdp.offer(
            self._context.media_host,
            self._rtp.local_port,
            self._context.codecs,
            session_id=self._sdp_session,
            session_version=self._sdp_version,
            srtp=self._srtp,
        )
        self._sdp_version += 1
        self._awaiting_answer = True
        return offer

    def start_media(self, answer: sdp.Answer) -> None:
        self._rtp.start(answer.remote, answer.codec, answer.dtmf_pt, answer.direction, answer.srtp)

    def on_ack_timeout(self) -> None:
        self.confirmed.set()  # waiting is over: BYE now
        self._context.spawn(self._leave("failed"))

    # ---- requests inside the dialog (called by the endpoint) -------------------------------------------

    def handle_request(self, request: Request, transaction: ServerTransaction | None) -> None:
        if request.method == "ACK":
            self._on_ack(request)
            return
        assert transaction is not None
        ua = self._context.ua
        if self.end_reason is not None:
            transaction.respond(ua.response(request, 481))
            return
        if not self.dialog.accept_cseq(request):
            transaction.respond(ua.response(request, 500, "CSeq Out Of Order"))
            return
        if request.method == "BYE":
            transaction.respond(ua.response(request, 200))
            log.info("event=sip_bye_received call=%s", self.call_id)
            self._end("remote_hangup")
        elif request.method == "INVITE":
            assert isinstance(transaction, InviteServerTransaction)
            self._on_reinvite(request, transaction)
        elif request.method == "NOTIFY":
            self._on_notify(request, transaction)
        elif request.method == "OPTIONS":
            transaction.respond(ua.response(request, 200))
        else:
            transaction.respond(ua.method_not_supported(request))

    def _on_ack(self, request: Request) -> None:
        self.confirmed.set()
        if not self._awaiting_answer:
            return
        self._awaiting_answer = False
        try:
            self.start_media(
                sdp.parse_answer(request.body.decode("utf-8", "replace"), codecs=self._context.codecs, srtp=self._srtp)
            )
        except (sdp.SdpError, RtpError) as error:  # §13.3.1.4: a bad answer in the ACK ends the call
            log.warning("event=sip_bad_answer_in_ack call=%s error=%s", self.call_id, error)
            self._context.spawn(self._leave("failed"))

    def _on_reinvite(self, request: Request, transaction: InviteServerTransaction) -> None:
        ua = self._context.ua
        try:
            self.dialog.update_target(request)
            if request.body:
                answer = self.answer_offer(request.body)
                body = answer.sdp
                self.start_media(answer)  # no await before the 200 goes out
            else:
                answer, body = None, self.make_offer()
        except (sdp.NoCommonCodec, RtpError) as error:  # the call goes on as it was
            ua.metrics.no_common_codec += 1
            transaction.respond(ua.response(request, 488, headers=warning(304, str(error))))
            return
        except (sdp.SdpError, DialogError) as error:
            transaction.respond(ua.response(request, 400, headers=warning(399, str(error))))
            return
        self.confirmed.clear()
        transaction.on_ack_timeout = self.on_ack_timeout
        transaction.respond(ua.response(request, 200, sdp=body))
        log.info(
            "event=sip_reinvite call=%s direction=%s remote=%s",
            self.call_id,
            answer.direction if answer else "offer-in-2xx",
            answer.remote if answer else None,
        )

    def _on_notify(self, request: Request, transaction: ServerTransaction) -> None:
        ua = self._context.ua
        event = (request.headers.get("Event") or "").partition(";")[0].strip().lower()
        if event != "refer":
            transaction.respond(ua.response(request, 489))
            return
        if self._notifies is None:
            transaction.respond(ua.response(request, 481))  # no transfer of ours is being followed
            return
        transaction.respond(ua.response(request, 200))
        match = _SIPFRAG_RE.match(request.body)
        state = (request.headers.get("Subscription-State") or "").partition(";")[0].strip().lower()
        log.info(
            "event=sip_transfer_notify call=%s sipfrag=%s state=%s",
            self.call_id,
            match[1].decode() if match else None,
            state,
        )
        if match:
            self._push_notify(int(match[1]))
        if state == "terminated":
            self._push_notify(None)

    # ---- ending ----------------------------------------------------------------------------------------

    def _on_media_timeout(self) -> None:
        self._context.ua.metrics.media_timeouts += 1
        self._context.spawn(self._leave("media_timeout"))

    async def _leave(self, reason: EndReason) -> None:
        """End the call from our side with BYE (once; later calls wait for the first)."""
        if self._leaving or self.end_reason is not None:
            await self.closed.wait()
            return
        self._leaving = True
        await self.confirmed.wait()  # RFC 3261 §15: no BYE before the ACK of our 2xx (or its timeout)
        if self.end_reason is not None:
            return  # the peer hung up meanwhile
        bye = self.dialog.create_request("BYE")
        self._end(reason)
        try:
            response = await self._context.ua.send(bye, self.dialog.next_hop())
        except OSError as error:
            log.warning("event=sip_bye_failed call=%s error=%s", self.call_id, error)
            return
        log.info("event=sip_bye_sent call=%s reason=%s status=%d", self.call_id, reason, response.status)

    def _end(self, reason: EndReason) -> None:
        if self.end_reason is not None:
            return
        self.end_reason = reason
        self.ended_at = time.time()
        self._push_notify(None)
        self.confirmed.set()  # nothing more to wait for
        self.closed.set()
        self._context.on_ended(self)
        self._context.spawn(self._rtp.close(), shielded=True)
        log.info("event=sip_call_end call=%s reason=%s", self.call_id, reason)

    def end_without_bye(self, reason: EndReason) -> None:
        """The dialog is gone on the peer's side (or never got confirmed): just release the media."""
        self._end(reason)

    # ---- helpers ---------------------------------------------------------------------------------------

    async def _refer(self, uri: str) -> bool:
        headers = {"Refer-To": f"<{uri}>", "Referred-By": f"<{self.dialog.local.uri}>"}
        refer = self.dialog.create_request("REFER", headers)
        try:
            response = await self._context.ua.send(refer, self.dialog.next_hop())
        except OSError as error:
            log.warning("event=sip_refer_failed call=%s error=%s", self.call_id, error)
            return False
        log.info("event=sip_refer call=%s target=%s status=%d", self.call_id, uri, response.status)
        if not 200 <= response.status < 300:
            self._context.ua.metrics.transfers_failed += 1
            return False
        return True

    def _refer_uri(self, target: str) -> str:
        """A SIP/tel URI as given; a number becomes sip:number@<the peer's host> (the PBX of the call)."""
        target = target.strip()
        scheme = target.partition(":")[0].lower()
        if scheme in ("sip", "sips", "tel"):
            try:
                SipUri.parse(target)
            except SipParseError as error:
                raise ValueError(f"transfer target {target!r} is not a valid URI: {error}") from None
            return target
        if _NUMBER_RE.fullmatch(target) is None:
            raise ValueError(f"transfer target {target!r} is neither a number nor a sip:/tel: URI")
        peer = self.dialog.remote.uri
        return str(SipUri("sip", urllib.parse.quote(target, safe="+*-_.!~"), None, peer.host, peer.port))

    def _push_notify(self, status: int | None) -> None:
        if self._notifies is not None and not self._notifies.full():
            self._notifies.put_nowait(status)


def _user(uri: SipUri) -> str:
    """The URI's user, percent-decoded, except for control characters: a caller is a number or a name, and a
    %0A decoded into it would reach every log line, record and page that shows the caller."""
    if not uri.user:
        return ""
    decoded = urllib.parse.unquote(uri.user)
    return "".join(c if c.isprintable() else urllib.parse.quote(c) for c in decoded)
