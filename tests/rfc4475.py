"""RFC 4475's torture messages in their exact bytes (tests/data/rfc4475/, see its README): names, sections."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data" / "rfc4475"

# name -> (section, title), in the RFC's order
SECTIONS: dict[str, tuple[str, str]] = {
    # 3.1.1 Valid messages
    "wsinv": ("3.1.1.1", "A Short Tortuous INVITE"),
    "intmeth": ("3.1.1.2", "Wide Range of Valid Characters"),
    "esc01": ("3.1.1.3", "Valid Use of the % Escaping Mechanism"),
    "escnull": ("3.1.1.4", "Escaped Nulls in URIs"),
    "esc02": ("3.1.1.5", "Use of % When It Is Not an Escape"),
    "lwsdisp": ("3.1.1.6", "Message with No LWS between Display Name and <"),
    "longreq": ("3.1.1.7", "Long Values in Header Fields"),
    "dblreq": ("3.1.1.8", "Extra Trailing Octets in a UDP Datagram"),
    "semiuri": ("3.1.1.9", "Semicolon-Separated Parameters in URI User Part"),
    "transports": ("3.1.1.10", "Varied and Unknown Transport Types"),
    "mpart01": ("3.1.1.11", "Multipart MIME Message"),
    "unreason": ("3.1.1.12", "Unusual Reason Phrase"),
    "noreason": ("3.1.1.13", "Empty Reason Phrase"),
    # 3.1.2 Invalid messages
    "badinv01": ("3.1.2.1", "Extraneous Header Field Separators"),
    "clerr": ("3.1.2.2", "Content Length Larger Than Message"),
    "ncl": ("3.1.2.3", "Negative Content-Length"),
    "scalar02": ("3.1.2.4", "Request Scalar Fields with Overlarge Values"),
    "scalarlg": ("3.1.2.5", "Response Scalar Fields with Overlarge Values"),
    "quotbal": ("3.1.2.6", "Unterminated Quoted String in Display Name"),
    "ltgtruri": ("3.1.2.7", "<> Enclosing Request-URI"),
    "lwsruri": ("3.1.2.8", "Malformed SIP Request-URI (embedded LWS)"),
    "lwsstart": ("3.1.2.9", "Multiple SP Separating Request-Line Elements"),
    "trws": ("3.1.2.10", "SP Characters at End of Request-Line"),
    "escruri": ("3.1.2.11", "Escaped Headers in SIP Request-URI"),
    "baddate": ("3.1.2.12", "Invalid Time Zone in Date Header Field"),
    "regbadct": ("3.1.2.13", "Failure to Enclose name-addr URI in <>"),
    "badaspec": ("3.1.2.14", "Spaces within addr-spec"),
    "baddn": ("3.1.2.15", "Non-token Characters in Display Name"),
    "badvers": ("3.1.2.16", "Unknown Protocol Version"),
    "mismatch01": ("3.1.2.17", "Start Line and CSeq Method Mismatch"),
    "mismatch02": ("3.1.2.18", "Unknown Method with CSeq Method Mismatch"),
    "bigcode": ("3.1.2.19", "Overlarge Response Code"),
    # 3.2 Transaction layer semantics
    "badbranch": ("3.2.1", "Missing Transaction Identifier"),
    # 3.3 Application layer semantics
    "insuf": ("3.3.1", "Missing Required Header Fields"),
    "unkscm": ("3.3.2", "Request-URI with Unknown Scheme"),
    "novelsc": ("3.3.3", "Request-URI with Known but Atypical Scheme"),
    "unksm2": ("3.3.4", "Unknown URI Schemes in Header Fields"),
    "bext01": ("3.3.5", "Proxy-Require and Require"),
    "invut": ("3.3.6", "Unknown Content-Type"),
    "regaut01": ("3.3.7", "Unknown Authorization Scheme"),
    "multi01": ("3.3.8", "Multiple Values in Single Value Required Fields"),
    "mcl01": ("3.3.9", "Multiple Content-Length Values"),
    "bcast": ("3.3.10", "200 OK Response with Broadcast Via Header Field Value"),
    "zeromf": ("3.3.11", "Max-Forwards of Zero"),
    "cparam01": ("3.3.12", "REGISTER with a Contact Header Parameter"),
    "cparam02": ("3.3.13", "REGISTER with a url-parameter"),
    "regescrt": ("3.3.14", "REGISTER with a URL Escaped Header"),
    "sdp01": ("3.3.15", "Unacceptable Accept Offering"),
    # 3.4 Backward compatibility
    "inv2543": ("3.4.1", "INVITE with RFC 2543 Syntax"),
}
NAMES: tuple[str, ...] = tuple(SECTIONS)


def load(name: str) -> bytes:
    """The message exactly as the RFC's archive has it (CRLFs, trailing octets and all)."""
    if name not in SECTIONS:
        raise KeyError(f"{name!r} is not one of RFC 4475's messages")
    return (DATA / f"{name}.dat").read_bytes()
