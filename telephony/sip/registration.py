"""Extension mode (RFC 3261 §10): keep our Contact bound to an address-of-record at a PBX or registrar.

One task per endpoint: REGISTER (answering a 401 or 407 digest challenge), then refresh at half the expiry the
registrar granted; over TCP or TLS, RFC 5626 keep-alives on the connection, and a new REGISTER at once when
that flow fails; after a failure or a timeout retry with capped exponential backoff and jitter; on shutdown
remove the binding (Expires: 0). `status` says how it is going, for the application and its health checks.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, replace
from typing import Literal

from .auth import Challenge, DigestError, authorization
from .errors import SipError
from .headers import Headers, NameAddr
from .message import Request, Response, SipParseError, SipUri, new_call_id, new_tag
from .metrics import SipMetrics
from .syntax import parse_uint
from .transport import Peer, resolve
from .useragent import ALLOW, UserAgent

log = logging.getLogger(__name__)

MAX_CHALLENGES = 3  # rounds of 401/407 per REGISTER before we call the credentials refused
_ALGORITHM_PREFERENCE = ("SHA-512-256", "SHA-256", "MD5")  # strongest first, when several are offered

RegistrationState = Literal["unregistered", "registering", "registered", "failing"]


class RegistrationError(SipError):
    """A REGISTER failed: the message says what the registrar answered, or that it did not."""


@dataclass(frozen=True)
class RegistrationConfig:
    registrar: str  # sip:pbx.example.com[:port]: the REGISTER's Request-URI, and where it is sent
    username: str  # the extension: our address-of-record is sip:username@domain, and the digest user
    password: str
    domain: str | None = None  # of the address-of-record; default: the registrar's host
    expires: int = 300  # asked for; the registrar's answer is what counts
    contact_user: str | None = None  # the user part of our Contact; default: username
    outbound_proxy: str | None = None  # sip:proxy[:port]: REGISTER goes there first (a Route with lr)
    # Both: sips:host (TLS) or sip:host;transport=tcp pick the transport, as RFC 3263 says; UDP otherwise.
    retry_min_s: float = 2.0  # first retry after a failure; doubled each time up to retry_max_s, with jitter
    retry_max_s: float = 300.0

    def __post_init__(self) -> None:
        for name in ("registrar", "outbound_proxy"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                uri = SipUri.parse(value)
            except SipParseError as error:
                raise ValueError(
                    f"registration.{name} must be a SIP URI like sip:pbx.example.com:5060: {error}"
                ) from None
            if (
                uri.scheme not in ("sip", "sips")
                or uri.user is not None
                or (uri.params.get("transport") or "udp").lower() not in ("udp", "tcp", "tls")
            ):
                raise ValueError(
                    f"registration.{name} must be sip:host[:port][;transport=tcp|tls] or sips:host[:port] "
                    f"(no user part), got {value!r}"
                )
        for name in ("username", "contact_user"):
            value = getattr(self, name)
            if value is None and name == "contact_user":
                continue
            try:
                SipUri.parse(f"sip:{value}@invalid")
            except SipParseError:
                raise ValueError(
                    f"registration.{name} {value!r} is not a valid SIP user part "
                    "(letters, digits and -_.!~*'()&=+$,;?/ or %-escapes)"
                ) from None
        if self.domain is not None:
            try:
                SipUri.parse(f"sip:{self.domain}")
            except SipParseError:
                raise ValueError(f"registration.domain {self.domain!r} is not a host name or address") from None
        if not 1 <= self.expires <= 2**31 - 1:
            raise ValueError(f"registration.expires must be 1..2147483647 seconds, got {self.expires}")
        if not 0 < self.retry_min_s <= self.retry_max_s:
            raise ValueError(
                f"registration retry needs 0 < retry_min_s <= retry_max_s, got {self.retry_min_s}, {self.retry_max_s}"
            )

    @property
    def aor(self) -> SipUri:
        """Our address-of-record: sip:username@domain."""
        return SipUri("sip", self.username, None, self.domain or SipUri.parse(self.registrar).host)


@dataclass(frozen=True)
class RegistrationStatus:
    state: RegistrationState = "unregistered"
    expires_s: int | None = None  # what the registrar granted at the last success
    registered_until: float | None = None  # time.time() when that binding lapses unless refreshed
    last_error: str | None = None  # why the last attempt failed (kept after a later success)
    failures: int = 0  # failed attempts in a row
    registrations: int = 0  # successful REGISTERs, refreshes included


class Registration:
    """Created by SipEndpoint.start() when EndpointConfig.registration is set; read `status`, or
    `await wait_for("registered", timeout_s=...)`."""

    def __init__(
        self, config: RegistrationConfig, ua: UserAgent, contact: SipUri, *, unregister_timeout_s: float = 4.0
    ) -> None:
        self.config = config
        self._ua = ua
        self._contact = contact
        self._aor = config.aor
        self._call_id = new_call_id(contact.host)  # RFC 3261 §10.2: one Call-ID, rising CSeq, per registrar
        self._from_tag = new_tag()
        self._cseq = 0
        self._expires = config.expires
        self._unregister_timeout_s = unregister_timeout_s
        self._status = RegistrationStatus()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._bound = False  # a binding of ours may exist at the registrar
        self._flow_lost = asyncio.Event()  # the TCP/TLS connection of our binding failed: register again now
        self._destination: Peer | None = None  # where the last REGISTER went

    @property
    def status(self) -> RegistrationStatus:
        return self._status

    @property
    def aor(self) -> str:
        return str(self._aor)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop refreshing; if a binding may exist, remove it (bounded by unregister_timeout_s)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if not self._bound:
            self._set(state="unregistered")
            return
        self._bound = False
        try:
            async with asyncio.timeout(self._unregister_timeout_s):
                await self._register(0)
            log.info("event=sip_unregistered aor=%s registrar=%s", self.aor, self.config.registrar)
        except (RegistrationError, TimeoutError) as error:
            log.warning(
                "event=sip_unregister_failed aor=%s registrar=%s error=%s",
                self.aor,
                self.config.registrar,
                error or f"no answer within {self._unregister_timeout_s:g} s",
            )
        self._set(state="unregistered", registered_until=None)

    async def wait_for(self, *states: RegistrationState, timeout_s: float) -> RegistrationStatus:
        """The status once its state is one of `states`; raises TimeoutError after timeout_s."""
        async with asyncio.timeout(timeout_s):
            while self._status.state not in states:
                await self._changed.wait()
        return self._status

    # ---- the refresh loop -----------------------------------------------------------------------------------

    async def _run(self) -> None:
        self._set(state="registering")
        while True:
            try:
                granted = await self._register(self._expires)
            except RegistrationError as error:
                failures = self._status.failures + 1
                delay = backoff(failures, self.config.retry_min_s, self.config.retry_max_s)
                self.metrics.registration_failures += 1
                self._set(state="failing", last_error=str(error), failures=failures)
                log.warning(
                    "event=sip_register_failed aor=%s registrar=%s attempt=%d retry_in_s=%.1f error=%s",
                    self.aor,
                    self.config.registrar,
                    failures,
                    delay,
                    error,
                )
            else:
                delay = granted / 2  # refresh well before the binding lapses
                self._bound = True
                self.metrics.registrations += 1
                self._set(
                    state="registered",
                    expires_s=granted,
                    registered_until=time.time() + granted,
                    failures=0,
                    registrations=self._status.registrations + 1,
                )
                log.info(
                    "event=sip_registered aor=%s registrar=%s contact=%s expires_s=%d refresh_in_s=%.1f",
                    self.aor,
                    self.config.registrar,
                    self._contact,
                    granted,
                    delay,
                )
                self._keep_flow_alive()
            try:
                await asyncio.wait_for(self._flow_lost.wait(), delay)
                log.warning("event=sip_register_flow_lost aor=%s registrar=%s", self.aor, self.config.registrar)
            except TimeoutError:
                pass
            self._flow_lost.clear()

    def _keep_flow_alive(self) -> None:
        """RFC 5626 §4.4.1: over TCP/TLS the registrar reaches us on the connection we registered on; keep it
        alive, and register again (opening a new one) as soon as it fails."""
        if self._destination is not None and self._destination.reliable:
            self._ua.keep_alive(self._destination, self._flow_lost.set)

    @property
    def metrics(self) -> SipMetrics:
        return self._ua.metrics

    def _set(self, **changes: object) -> None:
        self._status = replace(self._status, **changes)  # type: ignore[arg-type]
        self._changed.set()
        self._changed = asyncio.Event()

    # ---- one REGISTER ---------------------------------------------------------------------------------------

    async def _register(self, expires: int) -> int:
        """REGISTER with `expires` (0 removes our binding); returns the expiry granted to our Contact."""
        response = await self._authenticated(expires)
        if response.status == 423 and expires:  # Interval Too Brief: ask again with the registrar's minimum
            minimum = _min_expires(response)
            if minimum is not None and minimum > expires:
                log.info("event=sip_register_interval_raised aor=%s expires_s=%d", self.aor, minimum)
                self._expires = expires = minimum
                response = await self._authenticated(expires)
        if not 200 <= response.status < 300:
            raise RegistrationError(
                f"{response.status} {response.reason} from the registrar {self.config.registrar}"
                + _HINTS.get(response.status, "")
            )
        if not expires:
            return 0
        granted = self._granted(response, expires)
        if granted <= 0:
            raise RegistrationError(
                f"the registrar {self.config.registrar} answered 200 but kept no binding for "
                f"{self._contact} (expires=0)"
            )
        return granted

    async def _authenticated(self, expires: int) -> Response:
        """The final response to a REGISTER, after answering up to MAX_CHALLENGES digest challenges."""
        credentials: dict[str, str] = {}  # Authorization / Proxy-Authorization -> value
        for _ in range(MAX_CHALLENGES + 1):
            request = self._request(expires, credentials)
            try:
                destination = await resolve(SipUri.parse(self.config.outbound_proxy or self.config.registrar))
            except OSError as error:
                raise RegistrationError(str(error)) from None
            self._destination = destination
            response = await self._ua.start(request, destination).final
            if response.status == 408:
                raise RegistrationError(
                    f"no answer from {self.config.outbound_proxy or self.config.registrar} "
                    f"({response.status} {response.reason})"
                )
            if response.status not in (401, 407):
                return response
            header = "Authorization" if response.status == 401 else "Proxy-Authorization"
            challenge = _pick_challenge(response)
            if header in credentials and not challenge.stale:
                raise RegistrationError(
                    f"{response.status} {response.reason}: {self.config.registrar} refused the "
                    f"credentials of user {self.config.username!r} in realm {challenge.realm!r} "
                    "(wrong username or password?)"
                )
            try:
                credentials[header] = authorization(
                    challenge, "REGISTER", str(request.uri), self.config.username, self.config.password
                )
            except DigestError as error:
                raise RegistrationError(f"cannot answer the registrar's challenge: {error}") from None
        raise RegistrationError(f"{self.config.registrar} kept challenging after {MAX_CHALLENGES} answers")

    def _request(self, expires: int, credentials: dict[str, str]) -> Request:
        self._cseq += 1
        aor = f"<{self._aor}>"
        headers = Headers(
            [
                ("From", f"{aor};tag={self._from_tag}"),
                ("To", aor),
                ("Call-ID", self._call_id),
                ("CSeq", f"{self._cseq} REGISTER"),
                ("Max-Forwards", "70"),
            ]
        )
        if self.config.outbound_proxy is not None:
            proxy = SipUri.parse(self.config.outbound_proxy)
            proxy.params["lr"] = None
            headers.add("Route", f"<{proxy}>")
        headers.add("Contact", f"<{self._contact}>")
        headers.add("Expires", str(expires))
        headers.add("Allow", ALLOW)
        for name, value in credentials.items():
            headers.add(name, value)
        return Request("REGISTER", SipUri.parse(self.config.registrar), headers)

    def _granted(self, response: Response, asked: int) -> int:
        """Our Contact's expires in the 2xx (RFC 3261 §10.2.4), else its Expires header, else what we asked."""
        ours = (self._contact.user, self._contact.host.lower(), self._contact.port or 5060)
        for value in response.headers.get_all("Contact"):
            try:
                contact = NameAddr.parse(value)
                uri = contact.uri
                if (uri.user, uri.host.lower(), uri.port or 5060) == ours and contact.params.get("expires"):
                    return parse_uint(contact.params["expires"] or "", "Contact expires", 2**31 - 1)
            except SipParseError:
                continue  # another binding's oddity is not our problem
        header = response.headers.get("Expires")
        if header is not None:
            try:
                return parse_uint(header, "Expires", 2**31 - 1)
            except SipParseError:
                pass
        return asked


def backoff(failures: int, first_s: float, cap_s: float) -> float:
    """Seconds before the next attempt: first_s doubled per failure in a row, capped at cap_s, then scaled by a
    random 0.5..1 so that many agents cut off together do not retry together."""
    return min(cap_s, first_s * 2.0 ** min(failures - 1, 30)) * random.uniform(0.5, 1.0)


_HINTS = {
    403: " (the registrar forbids this user: check username and domain)",
    404: " (the registrar does not know this user: check username and domain)",
    423: " (our expires is below the registrar's minimum)",
}


def _pick_challenge(response: Response) -> Challenge:
    """The strongest digest challenge we can answer among the response's WWW-/Proxy-Authenticate headers."""
    name = "WWW-Authenticate" if response.status == 401 else "Proxy-Authenticate"
    offered: list[Challenge] = []
    for value in response.headers.get_all(name):
        try:
            challenge = Challenge.parse(value)
        except SipParseError:
            continue  # another scheme (Basic, Bearer) or a malformed one: look at the others
        algorithm = challenge.algorithm.upper().removesuffix("-SESS")
        if algorithm in _ALGORITHM_PREFERENCE and (not challenge.qop or "auth" in challenge.qop):
            offered.append(challenge)
    if not offered:
        raise RegistrationError(
            f"{response.status} {response.reason} without a digest challenge we can answer "
            f"(MD5, SHA-256 or SHA-512-256 with qop=auth or none): "
            f"{response.headers.get_all(name) or 'no ' + name + ' header'}"
        )
    return min(offered, key=lambda c: _ALGORITHM_PREFERENCE.index(c.algorithm.upper().removesuffix("-SESS")))


def _min_expires(response: Response) -> int | None:
    value = response.headers.get("Min-Expires")
    try:
        return parse_uint(value, "Min-Expires", 2**31 - 1) if value is not None else None
    except SipParseError:
        return None
