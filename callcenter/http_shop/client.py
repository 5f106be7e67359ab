"""The order system's HTTP client: one host, TLS verified, timeouts, bounded GET retries, writes sent once unless the
API honours Idempotency-Key, bodies size-limited, no redirects, no proxies or .netrc from the environment.

Synchronous (httpx.Client): the agents' tools run in worker threads (swarm.tools), never on the event loop.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from callcenter.errors import CallCenterError
from callcenter.http_shop.mapping import HttpShopConfig
from callcenter.store.domain import ShopUnavailable

log = logging.getLogger(__name__)

# Said to the caller ("I'm sorry, ..."); what the API answered goes to the log and ShopUnavailable.detail.
NOT_ANSWERING = "our order system is not answering at the moment."
NOT_UNDERSTOOD = "our order system gave an answer I can't use."
# Statuses worth a second GET: the server or a gateway in front of it was busy or restarting.
_RETRY_STATUSES = frozenset({502, 503, 504})
_BACKOFF_S = 0.2


class Refused(ShopUnavailable):
    """The API answered a write with 4xx: it refused the request (out of stock, invalid); detail says why."""

    def __init__(self, message: str, detail: str, status: int) -> None:
        super().__init__(message, detail)
        self.status = status


class NotFound(ShopUnavailable):
    """A GET answered 404: no such record (a product code the model made up)."""


class ShopClient:
    def __init__(self, config: HttpShopConfig, transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        base = urlsplit(config.url)
        self.origin = (base.scheme, base.hostname, base.port or (443 if base.scheme == "https" else 80))
        self.host = base.hostname or ""
        self._auth_header: dict[str, str] = {}
        if config.auth == "bearer":
            self._auth_header = {"Authorization": f"Bearer {config.secret}"}
        elif config.auth == "basic":
            self._auth_header = {"Authorization": "Basic " + base64.b64encode(config.secret.encode()).decode("ascii")}
        self._http = httpx.Client(
            timeout=httpx.Timeout(config.timeout_s),
            verify=True,  # the system's CAs (certifi's bundle): never off
            follow_redirects=False,  # a redirect may lead to another host: an error, not followed
            trust_env=False,  # no proxy or .netrc from the environment: only the configured host is contacted
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def url(self, path: str) -> str:
        """An operation's path (or an absolute link the API gave) as a URL on the configured host."""
        return path if urlsplit(path).scheme else self.config.url + path

    def get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        """GET a JSON body; retried up to config.get_retries times on a timeout, a lost connection or 502-504."""
        return self._send("GET", url, params=params, retries=self.config.get_retries)

    def write(
        self,
        method: str,
        url: str,
        *,
        idempotency_key: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        credentials: bool = True,
    ) -> Any:
        """A write, with the Idempotency-Key header; sent again after a failure only when the API honours the key."""
        retries = self.config.get_retries if self.config.idempotent_writes else 0
        extra = {**(headers or {}), "Idempotency-Key": idempotency_key}
        return self._send(
            method, url, params=params, body=body, headers=extra, credentials=credentials, retries=retries
        )

    def _send(
        self,
        method: str,
        url: str,
        *,
        retries: int,
        params: dict[str, Any] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        credentials: bool = True,
    ) -> Any:
        self._check_host(url)
        sent = {**(headers or {}), "Accept": "application/json"}
        if credentials:
            sent.update(self._auth_header)
        attempt = 0
        while True:
            try:
                request = self._http.build_request(method, url, params=params, json=body, headers=sent)
                response = self._http.send(request, stream=True)
                try:
                    if response.status_code in _RETRY_STATUSES and attempt < retries:
                        raise _Busy(response.status_code)
                    content = self._read(response, method, url)
                finally:
                    response.close()
            except (httpx.TransportError, _Busy) as error:
                if attempt >= retries:
                    log.warning("%s %s failed after %d attempt(s): %s", method, url, attempt + 1, error)
                    raise ShopUnavailable(NOT_ANSWERING, f"{method} {url}: {error!r}") from error
                attempt += 1
                time.sleep(_BACKOFF_S * 2 ** (attempt - 1))
                continue
            return self._result(response, content, method, url)

    def _check_host(self, url: str) -> None:
        parts = urlsplit(urljoin(self.config.url + "/", url))
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if (parts.scheme, parts.hostname, port) != self.origin:
            # A link in a response (or a redirect) pointing elsewhere: the caller's data goes to one host only.
            log.warning("refused to contact %s: only %s is configured", url, self.config.url)
            raise ShopUnavailable(NOT_UNDERSTOOD, f"a link to another host, not contacted: {url}")

    def _read(self, response: httpx.Response, method: str, url: str) -> bytes:
        limit = self.config.max_response_bytes
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ShopUnavailable(NOT_UNDERSTOOD, f"{method} {url}: {declared} bytes, over the limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise ShopUnavailable(NOT_UNDERSTOOD, f"{method} {url}: more than {limit} bytes, not read further")
            chunks.append(chunk)
        return b"".join(chunks)

    def _result(self, response: httpx.Response, content: bytes, method: str, url: str) -> Any:
        status = response.status_code
        text = content[:500].decode("utf-8", "replace")
        if response.is_redirect:
            where = response.headers.get("Location", "")
            raise ShopUnavailable(NOT_UNDERSTOOD, f"{method} {url}: {status} redirect to {where}, not followed")
        if status >= 400:
            log.warning("%s %s answered %d: %s", method, url, status, text)
            if 400 <= status < 500 and method != "GET":
                raise Refused("our order system did not accept it.", f"{method} {url}: {status} {text}", status)
            if status == 404:
                raise NotFound(NOT_UNDERSTOOD, f"{method} {url}: 404 {text}")
            raise ShopUnavailable(NOT_ANSWERING, f"{method} {url}: {status} {text}")
        if not content:
            return None
        try:
            return json.loads(content)
        except ValueError:
            raise ShopUnavailable(NOT_UNDERSTOOD, f"{method} {url}: {status}, not JSON: {text}") from None


class _Busy(CallCenterError):
    def __init__(self, status: int) -> None:
        super().__init__(f"answered {status}")
