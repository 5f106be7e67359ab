"""Digest authentication (telephony.sip.auth) against the worked examples of RFC 2069/2617/7616
and, for the -sess algorithms the RFCs give no example of, against httpx's own implementation."""

from __future__ import annotations

import re

import httpx
import pytest

from telephony.sip.auth import Challenge, DigestError, authorization, verify
from telephony.sip.syntax import SipParseError


def _field(header: str, name: str) -> str | None:
    match = re.search(rf'(?:^Digest |, ){name}=("[^"]*"|[^,]*)', header)
    return match[1].strip('"') if match else None


RFC2617_CHALLENGE = (
    'Digest realm="testrealm@host.com", qop="auth,auth-int", '
    'nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"'
)
RFC7616_CHALLENGE = (
    'Digest\trealm="http-auth@example.org", qop="auth, auth-int", algorithm={algorithm}, '
    'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"'
)


def test_rfc2617_section_3_5_example() -> None:
    challenge = Challenge.parse(RFC2617_CHALLENGE)
    assert challenge.qop == ("auth", "auth-int") and challenge.algorithm == "MD5"
    header = authorization(challenge, "GET", "/dir/index.html", "Mufasa", "Circle Of Life", cnonce="0a4f113b")
    assert _field(header, "response") == "6629fae49393a05397450978507c4ef1"
    assert (_field(header, "qop"), _field(header, "nc"), _field(header, "cnonce")) == ("auth", "00000001", "0a4f113b")
    assert _field(header, "opaque") == "5ccc069c403ebaf9f0171e9517f40e41" and 'qop="auth"' not in header


@pytest.mark.parametrize(
    "algorithm, response",
    [
        ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
    ],
)
def test_rfc7616_section_3_9_1_examples(algorithm: str, response: str) -> None:
    challenge = Challenge.parse(RFC7616_CHALLENGE.format(algorithm=algorithm))
    header = authorization(
        challenge,
        "GET",
        "/dir/index.html",
        "Mufasa",
        "Circle of Life",
        cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
    )
    assert _field(header, "response") == response and _field(header, "algorithm") == algorithm


def test_rfc7616_section_3_9_2_sha512_256() -> None:
    # The RFC prints ae66e67d...; that value was computed with truncated SHA-512, and the RFC 7616
    # erratum gives the SHA-512/256 one below (the userhash part of the example is not used here).
    challenge = Challenge.parse(
        'Digest realm="api@example.org", qop="auth", algorithm=SHA-512-256, '
        'nonce="5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK", '
        'opaque="HRPCssKJSGjCrkzDg8OhwpzCiGPChXYjwrI2QmXDnsOS", charset=UTF-8, userhash=true'
    )
    header = authorization(
        challenge,
        "GET",
        "/doe.json",
        "J\u00e4s\u00f8n Doe",
        "Secret, or not?",
        cnonce="NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v",
    )
    assert _field(header, "response") == "3798d4131c277846293534c3edc11bd8a5e4cdcbff78b05db9d95eeb1cec68a5"


def test_without_qop_rfc2069_example() -> None:
    # RFC 2069 §2.4 as corrected by its erratum (the RFC's own e966c932... is wrong).
    challenge = Challenge.parse(
        'Digest realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", '
        'opaque="5ccc069c403ebaf9f0171e9517f40e41"'
    )
    header = authorization(challenge, "GET", "/dir/index.html", "Mufasa", "CircleOfLife")
    assert _field(header, "response") == "1949323746fe6a43ef61f9606e7febea"
    assert _field(header, "qop") is None and _field(header, "nc") is None and _field(header, "cnonce") is None


@pytest.mark.parametrize("algorithm", ["MD5-sess", "SHA-256-sess", "SHA-256"])
def test_matches_httpx_digest(algorithm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    challenge_text = f'Digest realm="sip.example.com", nonce="a1b2c3", qop="auth", algorithm={algorithm}'
    auth = httpx.DigestAuth("alice", "s3cret")
    monkeypatch.setattr(auth, "_get_client_nonce", lambda nonce_count, nonce: b"0a4f113b")
    flow = auth.sync_auth_flow(httpx.Request("REGISTER", "http://sip.example.com/registrar"))
    request = next(flow)
    retried = flow.send(httpx.Response(401, headers={"WWW-Authenticate": challenge_text}, request=request))
    theirs = retried.headers["Authorization"]
    ours = authorization(
        Challenge.parse(challenge_text), "REGISTER", "/registrar", "alice", "s3cret", cnonce="0a4f113b"
    )
    assert _field(ours, "response") == _field(theirs, "response")
    assert _field(ours, "algorithm") == algorithm  # echoed as the server spelled it


def test_challenge_parsing_details() -> None:
    challenge = Challenge.parse('digest  REALM = "a, b" ,nonce="n\\"x", algorithm="sha-256", stale=TRUE, opaque=o')
    assert (challenge.realm, challenge.nonce, challenge.algorithm) == ("a, b", 'n"x', "sha-256")
    assert challenge.stale and challenge.opaque == "o" and challenge.qop == ()


@pytest.mark.parametrize(
    "value, problem",
    [
        ('Basic realm="x"', "scheme 'Basic' is not Digest"),
        ('Digest realm="x"', "without nonce"),
        ('Digest realm="x", nonce="y', "unterminated quoted string"),
        ('Digest realm="x" nonce="y"', "expected ','"),
        ("Digest realm=", "has no value"),
        ('Digest ="x"', "malformed digest parameter"),
    ],
)
def test_bad_challenges(value: str, problem: str) -> None:
    with pytest.raises(SipParseError, match=problem):
        Challenge.parse(value)


def test_unanswerable_challenges() -> None:
    with pytest.raises(DigestError, match="only qop=auth is supported"):
        authorization(Challenge.parse('Digest realm="r", nonce="n", qop="auth-int"'), "INVITE", "sip:a", "u", "p")
    with pytest.raises(DigestError, match="SHA-1 is not supported"):
        authorization(Challenge.parse('Digest realm="r", nonce="n", algorithm=SHA-1'), "INVITE", "sip:a", "u", "p")


def test_verify() -> None:
    challenge = Challenge.parse('Digest realm="127.0.0.1", nonce="Zx1", qop="auth"')
    header = authorization(challenge, "REGISTER", "sip:127.0.0.1", "1001", 'pa"ss', nc=3)
    assert _field(header, "nc") == "00000003" and len(_field(header, "cnonce") or "") == 16
    assert verify(header, "REGISTER", 'pa"ss', "127.0.0.1")
    assert not verify(header, "REGISTER", "wrong", "127.0.0.1")
    assert not verify(header, "INVITE", 'pa"ss', "127.0.0.1")
    assert not verify(header, "REGISTER", 'pa"ss', "other-realm")
    assert not verify('Digest username="1001", realm="127.0.0.1"', "REGISTER", 'pa"ss', "127.0.0.1")
