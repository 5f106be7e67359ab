"""TLS for SIP (RFC 3261 §26.2, RFC 5630): our certificate and key, and the CA we check servers against.

`TlsConfig.contexts()` reads and checks the files once, so a missing file, a file that is not PEM, an encrypted
key or a key that does not belong to the certificate is a `TlsConfigError` naming the file when the
configuration is loaded, not an ssl traceback at the first call.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from .errors import SipError

_CERTIFICATE_PEM = b"-----BEGIN CERTIFICATE-----"
_KEY_PEM_END = b"PRIVATE KEY-----"


class TlsConfigError(SipError, ValueError):
    """A certificate, key or CA file cannot be used; the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class TlsContexts:
    server: ssl.SSLContext  # for connections peers open to us
    client: ssl.SSLContext  # for connections we open (servers are verified, by name)


@dataclass(frozen=True)
class TlsConfig:
    cert_file: str  # PEM: our certificate, then any intermediates
    key_file: str  # PEM, unencrypted (a service has nobody to type a pass phrase)
    ca_file: str | None = None  # PEM CAs for the servers we connect to; None: the system's trust store
    verify_server: bool = True  # False accepts any server certificate: for labs, never for a trunk

    def contexts(self) -> TlsContexts:
        """Both SSL contexts, or TlsConfigError with a message an admin can act on."""
        cert = _read(self.cert_file, "certificate")
        key = _read(self.key_file, "key")
        if _CERTIFICATE_PEM not in cert:
            raise TlsConfigError(
                f"TLS certificate {self.cert_file} holds no PEM certificate ('-----BEGIN CERTIFICATE-----')"
            )
        if _KEY_PEM_END not in key:
            raise TlsConfigError(f"TLS key {self.key_file} holds no PEM private key ('-----BEGIN PRIVATE KEY-----')")
        if b"ENCRYPTED" in key:
            raise TlsConfigError(
                f"TLS key {self.key_file} is encrypted with a pass phrase; give an unencrypted key "
                "(openssl pkey -in KEY -out KEY.plain) readable only by the service user"
            )
        server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        client = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        for context in (server, client):
            context.minimum_version = ssl.TLSVersion.TLSv1_2  # RFC 8996 retired 1.0 and 1.1
            self._load_chain(context)
        if self.ca_file is not None:
            _read(self.ca_file, "CA file")
            try:
                client.load_verify_locations(cafile=self.ca_file)
            except ssl.SSLError as error:
                raise TlsConfigError(
                    f"TLS CA file {self.ca_file} holds no usable PEM certificate: {error.reason or error}"
                ) from None
        if not self.verify_server:
            client.check_hostname = False
            client.verify_mode = ssl.CERT_NONE
        return TlsContexts(server, client)

    def _load_chain(self, context: ssl.SSLContext) -> None:
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except ssl.SSLError as error:
            if error.reason == "KEY_VALUES_MISMATCH":
                raise TlsConfigError(
                    f"TLS key {self.key_file} does not belong to the certificate {self.cert_file}"
                ) from None
            raise TlsConfigError(
                f"TLS certificate {self.cert_file} or key {self.key_file} cannot be loaded: {error.reason or error}"
            ) from None


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise TlsConfigError(f"TLS {what} {path}: {error.strerror or error}") from None
