"""RFC 4475 (SIP torture test messages) against telephony.sip.message: the values the RFC calls out.

The messages are read in their exact bytes from tests/data/rfc4475/ (see its README). Each valid one must
parse, validate and yield what the RFC says it means; tests/test_rfc4475.py checks every message's
verdict (accepted, or refused with an error naming the problem) and what our endpoint answers on the wire.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import unquote

import pytest

from telephony.sip.message import (
    NameAddr,
    Request,
    Response,
    parse_message,
    validate_request,
    validate_response,
)
from tests.rfc4475 import load

MPART01_BINARY = bytes.fromhex(  # mpart01's DER part as the RFC prints it in <hex>: framing must keep it whole
    "3082015206092A864886F70D010702A08201433082013F02"
    "01013109300706052B0E03021A300B06092A864886F70D010701318201203082"
    "011C020101307C3070310B300906035504061302555331133011060355040813"
    "0A43616C69666F726E69613111300F0603550407130853616E204A6F7365310E"
    "300C060355040A1305736970697431293027060355040B132053697069742054"
    "65737420436572746966696361746520417574686F7269747902080195007102"
    "330113300706052B0E03021A300D06092A864886F70D01010105000481808EF4"
    "66F948F0522DD2E5978E9D95AAE9F2FE15A06659716292E8DA2AA8D8350A68CE"
    "FFAE3CBD2BFF1675DDD5648E593DD64728F26220F7E941749E330D9A15EDABDB"
    "93D10C42102E7B7289D29CC0C9AE2EFBC7C0CFF9172F3B027E4FC027E1546DE4"
    "B6AA3ABB3E66CCCB5DD6C64B8383149CB8E6FF182D944FE57B65BC99D005"
)


def _valid(name: str) -> Request | Response:
    message = parse_message(load(name))
    if isinstance(message, Request):
        validate_request(message)
    else:
        validate_response(message)
    # Our own serialization reads back the same (it always writes Content-Length).
    expected = dataclasses.replace(message, headers=message.headers.copy())
    expected.headers.set("Content-Length", str(len(message.body)))
    assert parse_message(message.to_bytes()) == expected
    return message


# --- Valid messages: the parts the RFC calls out ------------------------------------------


def test_wsinv() -> None:
    m = _valid("wsinv")
    assert isinstance(m, Request) and m.method == "INVITE"
    assert m.uri.user == "vivekg" and m.uri.host == "chair-dnrc.example.com" and m.uri.params == {"unknownparam": None}
    assert (str(m.to.uri), m.to.tag) == ("sip:vivekg@chair-dnrc.example.com", "1918181833n")
    assert m.from_.display == 'J Rosenberg \\"' and m.from_.tag == "98asjd8"
    assert m.max_forwards == 68 and m.cseq == (9, "INVITE") and m.call_id == "wsinv.ndaksdj@192.0.2.1"
    assert [(v.transport, v.host, v.branch) for v in m.vias] == [
        ("UDP", "192.0.2.2", "390skdjuw"),
        ("TCP", "spindle.example.com", "z9hG4bK9ikj8"),
        ("UDP", "192.168.255.111", "z9hG4bK30239"),
    ]
    assert m.headers.get("Subject") == "" and "s" in m.headers
    assert m.headers.get("NewFangledHeader") == "newfangled value continued newfangled value"
    assert m.headers.get_all("UnknownHeaderWithUnusualValue") == [";;,,;;,;"]
    route = NameAddr.parse(m.headers.get_all("Route")[0])
    assert route.uri.params == {"lr": None, "unknownwith": "value", "unknown-no-value": None}
    contact = NameAddr.parse(m.headers.get_all("Contact")[0])
    assert contact.display == 'Quoted string ""' and str(contact.uri) == "sip:jdrosen@example.com"
    assert contact.params == {"newparam": "newvalue", "secondparam": None, "q": "0.33"}
    assert m.content_type == "application/sdp" and len(m.body) == 150 and m.body.endswith(b"a=rtpmap:31 LPC\r\n")


def test_intmeth() -> None:
    m = _valid("intmeth")
    assert isinstance(m, Request)
    assert m.method == "!interesting-Method0123456789_*+`.%indeed'~"
    assert m.uri.user == "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*"
    assert m.uri.password == "&it+has=1,weird!*pas$wo~d_too.(doesn't-it)" and m.uri.host == "example.com"
    assert m.to.display == "BEL:\x07 NUL:\x00 DEL:\x7f"
    assert m.to.uri.user == "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*"
    assert m.from_.display == "token1~` token2'+_ token3*%!.-"
    assert m.from_.params["fromparam''~+*_!.-%"] == '"работающий"'
    assert m.from_.tag == "_token~1'+`*%!-."
    assert m.call_id == "intmeth.word%ZK-!.*_+'@word`~)(><:\\/\"][?}{"
    assert m.cseq == (139122385, m.method) and m.max_forwards == 255
    assert m.vias[0].branch == "z9hG4bK-.!%66*_+`'~"
    assert m.headers.get("extensionHeader-!.%*+_`'~") == "\ufeff大停電"


def test_esc01() -> None:
    m = _valid("esc01")
    assert isinstance(m, Request)
    assert unquote(m.uri.user or "") == "sips:user@example.com" and m.uri.host == "example.net"
    assert unquote(m.to.uri.user or "") == "user"
    assert unquote(m.from_.uri.user or "") == "I have spaces"
    assert m.call_id == "esc01.239409asdfakjkn23onasd0-3234" and m.content_type == "application/sdp"
    contact = NameAddr.parse(m.headers.get("Contact") or "")
    assert unquote(contact.uri.user or "") == "caller"
    # value%41 is not valueA: unescaping is never recursive, so the escapes stay as sent.
    assert contact.uri.params == {"%6c%72": None, "n%61me": "v%61lue%25%34%31"}
    assert unquote(contact.uri.params["n%61me"] or "") == "value%41"


def test_escnull() -> None:
    m = _valid("escnull")
    assert m.to.uri.user == "null-%00-null" and unquote(m.to.uri.user) == "null-\x00-null"
    contacts = [NameAddr.parse(v).uri.user for v in m.headers.get_all("Contact")]
    assert contacts == ["%00", "%00%00"]  # two distinct registrations, not one shortened name
    assert m.headers.get("Content-Length") == "0" and m.body == b""


def test_esc02() -> None:
    m = _valid("esc02")
    assert isinstance(m, Request) and m.method == "RE%47IST%45R" and m.cseq == (29344, "RE%47IST%45R")
    assert m.to.display == "%Z%45" and m.from_.display == "%Z%45"
    assert [NameAddr.parse(v).uri.user for v in m.headers.get_all("Contact")] == ["alias1", "alias3"]
    assert m.headers.get("C%6Fntact") == "<sip:alias2@host2.example.com>"
    assert m.vias[0].branch == "z9hG4bK209%fzsnel234"


def test_lwsdisp() -> None:
    m = _valid("lwsdisp")
    assert m.from_.display == "caller" and m.from_.uri.user == "caller" and m.from_.tag == "323"


def test_longreq() -> None:
    m = _valid("longreq")
    assert m.to.display == "I have a user name of " + "extreme" * 10 + " proportion"
    assert m.to.uri.port == 6000 and m.to.uri.params == {
        "unknownparam1": "very" + "long" * 20 + "value",
        "longparam" + "name" * 25: "shortvalue",
        ("very" + "long" * 25 + "ParameterNameWithNoValue").lower(): None,
    }
    assert m.from_.uri.user == "amazinglylongcallername" * 5
    assert m.from_.tag == "12" + "982" * 50 + "424"
    assert m.from_.params["unknownheaderparam" + "name" * 20] == "unknowheaderparam" + "value" * 15
    assert ("unknownValueless" + "paramname" * 10).lower() in m.from_.params
    assert m.call_id == "longreq.one" + "really" * 20 + "longcallid"
    vias = m.vias
    assert [v.host for v in vias[:33]] == [f"sip{n}.example.com" for n in range(33, 0, -1)]
    assert vias[33].received == "192.0.2.5" and vias[33].branch == "very" + "long" * 50 + "branchvalue"
    unknown = m.headers.get("Unknown-" + "Long" * 20 + "-Name") or ""
    assert unknown.endswith("-parameter-value") and unknown.startswith("unknown-" + "long" * 20 + "-value; ")
    assert len(m.body) == 150


def test_dblreq() -> None:
    m = _valid("dblreq")
    assert isinstance(m, Request) and m.method == "REGISTER"
    assert m.call_id == "dblreq.0ha0isndaksdj99sdfafnl3lk233412"
    assert m.body == b""  # the INVITE after the blank line is noise beyond Content-Length: 0


def test_semiuri() -> None:
    m = _valid("semiuri")
    assert isinstance(m, Request)
    assert unquote(m.uri.user or "") == "user;par=u@example.net" and m.uri.params == {}
    assert m.headers.get_all("Accept") == [
        "application/sdp",
        "application/pkcs7-mime",
        "multipart/mixed",
        "multipart/signed",
        "message/sip",
        "message/sipfrag",
    ]


def test_transports() -> None:
    m = _valid("transports")
    assert [v.transport for v in m.vias] == ["UDP", "SCTP", "TLS", "UNKNOWN", "TCP"]
    assert m.call_id == "transports.kijh4akdnaqjkwendsasfdj"


def test_mpart01() -> None:
    m = _valid("mpart01")
    assert len(m.body) == 553 and MPART01_BINARY in m.body and b"\x00" in m.body
    assert m.content_type == "multipart/mixed;boundary=7a9cbec02ceef655"
    via = m.vias[0]
    assert (via.host, via.port, via.rport) == ("127.0.0.1", 5070, None) and "rport" in via.params
    assert m.headers.get("Date") == "Sat, 15 Oct 2005 04:44:56 GMT"


def test_unreason() -> None:
    m = _valid("unreason")
    assert isinstance(m, Response) and m.status == 200
    assert m.reason == "= 2**3 * 5**2 но сто девяносто девять - простое"
    assert len(m.body) == 154


def test_noreason() -> None:
    m = _valid("noreason")
    assert isinstance(m, Response) and (m.status, m.reason) == (100, "")
    assert m.to_bytes().startswith(b"SIP/2.0 100 \r\n")  # the SP before the empty phrase is kept


# --- Messages whose problem lies above the parser: they parse, the layer above decides -------


def test_badbranch_parses_with_an_empty_transaction_id() -> None:
    m = _valid("badbranch")
    assert m.vias[0].branch == "z9hG4bK"


@pytest.mark.parametrize(
    "name, scheme, opaque",
    [
        ("unkscm", "nobodyknowsthisscheme", "totallyopaquecontent"),
        ("novelsc", "soap.beep", "//192.0.2.103:3002"),
    ],
)
def test_unknown_request_uri_schemes_parse_for_a_416(name: str, scheme: str, opaque: str) -> None:
    m = _valid(name)
    assert isinstance(m, Request) and (m.uri.scheme, m.uri.host) == (scheme, opaque)


def test_unksm2_keeps_unknown_schemes_in_headers() -> None:
    m = _valid("unksm2")
    assert (m.to.uri.scheme, m.to.uri.host) == ("isbn", "2983792873")
    assert str(m.from_.uri) == "http://www.example.com" and m.from_.tag == "3234233"
    assert str(NameAddr.parse(m.headers.get("Contact") or "").uri) == "name:John_Smith"


def test_bext01_require_values() -> None:
    m = _valid("bext01")
    assert m.headers.get_all("Require") == ["nothingSupportsThis", "nothingSupportsThisEither"]
    assert m.headers.get_all("Proxy-Require") == ["noProxiesSupportThis", "norDoAnyProxiesSupportThis"]


def test_invut_body_is_framed() -> None:
    m = _valid("invut")
    assert m.content_type == "application/unknownformat" and m.body.startswith(b"<audio>") and len(m.body) == 40


def test_regaut01_unknown_auth_scheme_is_kept() -> None:
    m = _valid("regaut01")
    assert m.headers.get("Authorization") == "NoOneKnowsThisScheme opaque-data=here"


def test_zeromf() -> None:
    assert _valid("zeromf").max_forwards == 0


def test_cparam01_param_belongs_to_the_header() -> None:
    contact = NameAddr.parse(_valid("cparam01").headers.get("Contact") or "")
    assert contact.uri.params == {} and contact.params == {"unknownparam": None}
    assert contact.uri.user == "+19725552222"


def test_cparam02_param_belongs_to_the_uri() -> None:
    contact = NameAddr.parse(_valid("cparam02").headers.get("Contact") or "")
    assert contact.uri.params == {"unknownparam": None} and contact.params == {}


def test_regescrt_header_in_contact_uri() -> None:
    contact = NameAddr.parse(_valid("regescrt").headers.get("Contact") or "")
    assert contact.uri.headers == {"Route": "%3Csip:sip.example.com%3E"}


def test_sdp01() -> None:
    m = _valid("sdp01")
    assert m.headers.get_all("Accept") == ["text/nobodyKnowsThis"] and len(m.body) == 150


def test_inv2543_rfc2543_syntax_is_accepted() -> None:
    m = _valid("inv2543")
    assert m.max_forwards is None and m.vias[0].branch is None and m.from_.tag is None
    assert m.from_.uri.params == {"user": "phone"} and m.to.params == {"user": "phone"}
    assert m.body.endswith(b"m=audio 49217 RTP/AVP 0\r\n")  # no Content-Length: the rest of the datagram
