"""A SIP dialog (RFC 3261 §12): the state two user agents share after an INVITE succeeds, and the
requests built inside it (BYE, REFER, ACK). Loose routing only (RFC 3261 §16.12: every Record-Route
is expected to carry `lr`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .headers import Headers, NameAddr
from .message import Request, Response, SipParseError
from .uri import SipUri


class DialogError(SipParseError):
    """The request or response cannot establish a dialog (no usable Contact, no tag)."""


@dataclass
class Dialog:
    call_id: str
    local: NameAddr  # our From (as UAC) or To (as UAS), with our tag
    remote: NameAddr  # the peer's, with its tag
    remote_target: SipUri  # the peer's Contact
    local_contact: str
    route_set: list[str] = field(default_factory=list)
    local_cseq: int = 0
    remote_cseq: int | None = None

    @property
    def local_tag(self) -> str:
        return self.local.tag or ""

    @property
    def remote_tag(self) -> str:
        return self.remote.tag or ""

    @property
    def key(self) -> tuple[str, str]:
        return self.call_id, self.local_tag

    @classmethod
    def as_uas(cls, request: Request, local_tag: str, local_contact: str) -> Dialog:
        """The dialog an INVITE creates when we answer it with a To tag of `local_tag`."""
        local = request.to
        local.params["tag"] = local_tag
        # RFC 2543 let an INVITE omit Contact: its From was then where requests went (RFC 4475 §3.4.1).
        target = _contact_uri(request.headers, "INVITE") if request.headers.get_all("Contact") else request.from_.uri
        return cls(
            request.call_id,
            local,
            request.from_,
            target,
            local_contact,
            request.headers.get_all("Record-Route"),
            random.randint(1, 2**16),
            request.cseq[0],
        )

    @classmethod
    def as_uac(cls, request: Request, response: Response, local_contact: str) -> Dialog:
        """The dialog our INVITE created with the 2xx it got."""
        if response.to.tag is None:
            raise DialogError("the 2xx to our INVITE has no To tag")
        return cls(
            request.call_id,
            request.from_,
            response.to,
            _contact_uri(response.headers, "2xx"),
            local_contact,
            list(reversed(response.headers.get_all("Record-Route"))),
            request.cseq[0],
            None,
        )

    def next_hop(self) -> SipUri:
        """Where requests in this dialog go: the first route, else the peer's Contact."""
        return NameAddr.parse(self.route_set[0]).uri if self.route_set else self.remote_target

    def create_request(
        self, method: str, headers: dict[str, str] | None = None, body: bytes = b"", cseq: int | None = None
    ) -> Request:
        """A request in the dialog (RFC 3261 §12.2.1.1); the transaction layer adds the Via."""
        if cseq is None:
            self.local_cseq += 1
            cseq = self.local_cseq
        built = Headers()
        for route in self.route_set:
            built.add("Route", route)
        built.add("From", str(self.local))
        built.add("To", str(self.remote))
        built.add("Call-ID", self.call_id)
        built.add("CSeq", f"{cseq} {method}")
        built.add("Max-Forwards", "70")
        if method not in ("BYE", "ACK"):
            built.add("Contact", self.local_contact)
        for name, value in (headers or {}).items():
            built.add(name, value)
        return Request(method, self.remote_target, built, body)

    def accept_cseq(self, request: Request) -> bool:
        """False for a request older than the last one (§12.2.2: answer it 500); remembers the new CSeq."""
        number = request.cseq[0]
        if self.remote_cseq is not None and number <= self.remote_cseq:
            return False
        self.remote_cseq = number
        return True

    def update_target(self, request: Request) -> None:
        """A re-INVITE may carry a new Contact (RFC 3261 §12.2.2)."""
        if request.headers.get_all("Contact"):
            self.remote_target = _contact_uri(request.headers, request.method)


def _contact_uri(headers: Headers, what: str) -> SipUri:
    contacts = headers.get_all("Contact")
    if not contacts or contacts[0] == "*":
        raise DialogError(f"the {what} has no Contact header to send requests in the dialog to")
    return NameAddr.parse(contacts[0]).uri
