"""RFC 4475 (SIP torture test messages) against telephony.sip.message.

The messages are transcribed from the RFC text: <allOneLine> lines joined, <repeat count=N>
written as `b"..." * N`, <hex> parts as bytes.fromhex. Valid messages must parse, validate and
yield the values the RFC calls out; invalid ones must be refused by parse_message or by
validate_request/validate_response with an error that names the problem.
"""
from __future__ import annotations

import dataclasses
import re
from urllib.parse import unquote

import pytest

from telephony.sip.message import (
    NameAddr,
    Request,
    Response,
    SipParseError,
    parse_message,
    validate_request,
    validate_response,
)

SDP_150 = (  # the 150-byte body most messages carry (IP 192.0.2.1)
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.1\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.1\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

# --- 3.1.1 Valid messages ------------------------------------------------------------------

WSINV = (  # 3.1.1.1 A Short Tortuous INVITE
    b"INVITE sip:vivekg@chair-dnrc.example.com;unknownparam SIP/2.0\r\n"
    b"TO :\r\n"
    b" sip:vivekg@chair-dnrc.example.com ;   tag    = 1918181833n\r\n"
    b'from   : "J Rosenberg \\\\\\""       <sip:jdrosen@example.com>\r\n'
    b"  ;\r\n"
    b"  tag = 98asjd8\r\n"
    b"MaX-fOrWaRdS: 0068\r\n"
    b"Call-ID: wsinv.ndaksdj@192.0.2.1\r\n"
    b"Content-Length   : 150\r\n"
    b"cseq: 0009\r\n"
    b"  INVITE\r\n"
    b"Via  : SIP  /   2.0\r\n"
    b" /UDP\r\n"
    b"\t192.0.2.2;branch=390skdjuw\r\n"
    b"s :\r\n"
    b"NewFangledHeader:   newfangled value\r\n"
    b" continued newfangled value\r\n"
    b"UnknownHeaderWithUnusualValue: ;;,,;;,;\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Route:\r\n"
    b" <sip:services.example.com;lr;unknownwith=value;unknown-no-value>\r\n"
    b"v:  SIP  / 2.0  / TCP     spindle.example.com   ;\r\n"
    b"  branch  =   z9hG4bK9ikj8  ,\r\n"
    b" SIP  /    2.0   / UDP  192.168.255.111   ; branch=\r\n"
    b" z9hG4bK30239\r\n"
    b'm:"Quoted string \\"\\"" <sip:jdrosen@example.com> ; newparam =\r\n'
    b"      newvalue ;\r\n"
    b"  secondparam ; q = 0.33\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.3\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.4\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

INTMETH = (  # 3.1.1.2 Wide Range of Valid Characters
    b"!interesting-Method0123456789_*+`.%indeed'~ "
    b"sip:1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*:&it+has=1,weird!*pas$wo~d_too.(doesn't-it)"
    b"@example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/TCP host1.example.com;branch=z9hG4bK-.!%66*_+`'~\r\n"
    b'To: "BEL:\\\x07 NUL:\\\x00 DEL:\\\x7f" <sip:1_unusual.URI~(to-be!sure)&isn\'t+it$/crazy?,/;;*@example.com>\r\n'
    b"From: token1~` token2'+_ token3*%!.- <sip:mundane@example.com>;fromParam''~+*_!.-%="
    b'"\xd1\x80\xd0\xb0\xd0\xb1\xd0\xbe\xd1\x82\xd0\xb0\xd1\x8e\xd1\x89\xd0\xb8\xd0\xb9";tag=_token~1\'+`*%!-.\r\n'
    b"Call-ID: intmeth.word%ZK-!.*_+'@word`~)(><:\\/\"][?}{\r\n"
    b"CSeq: 139122385 !interesting-Method0123456789_*+`.%indeed'~\r\n"
    b"Max-Forwards: 255\r\n"
    b"extensionHeader-!.%*+_`'~:\xef\xbb\xbf\xe5\xa4\xa7\xe5\x81\x9c\xe9\x9b\xbb\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

ESC01 = (  # 3.1.1.3 Valid Use of the % Escaping Mechanism
    b"INVITE sip:sips%3Auser%40example.com@example.net SIP/2.0\r\n"
    b"To: sip:%75se%72@example.com\r\n"
    b"From: <sip:I%20have%20spaces@example.net>;tag=938\r\n"
    b"Max-Forwards: 87\r\n"
    b"i: esc01.239409asdfakjkn23onasd0-3234\r\n"
    b"CSeq: 234234 INVITE\r\n"
    b"Via: SIP/2.0/UDP host5.example.net;branch=z9hG4bKkdjuw\r\n"
    b"C: application/sdp\r\n"
    b"Contact:\r\n"
    b"  <sip:cal%6Cer@host5.example.net;%6C%72;n%61me=v%61lue%25%34%31>\r\n"
    b"Content-Length: 150\r\n"
    b"\r\n" + SDP_150
)

ESCNULL = (  # 3.1.1.4 Escaped Nulls in URIs
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"To: sip:null-%00-null@example.com\r\n"
    b"From: sip:null-%00-null@example.com;tag=839923423\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID: escnull.39203ndfvkjdasfkq3w4otrq0adsfdfnavd\r\n"
    b"CSeq: 14398234 REGISTER\r\n"
    b"Via: SIP/2.0/UDP host5.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Contact: <sip:%00@host5.example.com>\r\n"
    b"Contact: <sip:%00%00@host5.example.com>\r\n"
    b"L:0\r\n"
    b"\r\n"
)

ESC02 = (  # 3.1.1.5 Use of % When It Is Not an Escape
    b"RE%47IST%45R sip:registrar.example.com SIP/2.0\r\n"
    b'To: "%Z%45" <sip:resource@example.com>\r\n'
    b'From: "%Z%45" <sip:resource@example.com>;tag=f232jadfj23\r\n'
    b"Call-ID: esc02.asdfnqwo34rq23i34jrjasdcnl23nrlknsdf\r\n"
    b"Via: SIP/2.0/TCP host.example.com;branch=z9hG4bK209%fzsnel234\r\n"
    b"CSeq: 29344 RE%47IST%45R\r\n"
    b"Max-Forwards: 70\r\n"
    b"Contact: <sip:alias1@host1.example.com>\r\n"
    b"C%6Fntact: <sip:alias2@host2.example.com>\r\n"
    b"Contact: <sip:alias3@host3.example.com>\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

LWSDISP = (  # 3.1.1.6 Message with No LWS between Display Name and <
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: caller<sip:caller@example.com>;tag=323\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID: lwsdisp.1234abcd@funky.example.com\r\n"
    b"CSeq: 60 OPTIONS\r\n"
    b"Via: SIP/2.0/UDP funky.example.com;branch=z9hG4bKkdjuw\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

LONGREQ = (  # 3.1.1.7 Long Values in Header Fields
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b'To: "I have a user name of ' + b"extreme" * 10 + b' proportion"<sip:user@example.com:6000;'
    b"unknownparam1=very" + b"long" * 20 + b"value;"
    b"longparam" + b"name" * 25 + b"=shortvalue;"
    b"very" + b"long" * 25 + b"ParameterNameWithNoValue>\r\n"
    b"F: sip:" + b"amazinglylongcallername" * 5 + b"@example.net;tag=12" + b"982" * 50 + b"424;"
    b"unknownheaderparam" + b"name" * 20 + b"=unknowheaderparam" + b"value" * 15 + b";"
    b"unknownValueless" + b"paramname" * 10 + b"\r\n"
    b"Call-ID: longreq.one" + b"really" * 20 + b"longcallid\r\n"
    b"CSeq: 3882340 INVITE\r\n"
    b"Unknown-" + b"Long" * 20 + b"-Name: unknown-" + b"long" * 20 + b"-value; "
    b"unknown-" + b"long" * 20 + b"-parameter-name = unknown-" + b"long" * 20 + b"-parameter-value\r\n"
    b"Via: SIP/2.0/TCP sip33.example.com\r\n"
    b"v: SIP/2.0/TCP sip32.example.com\r\n"
    b"V: SIP/2.0/TCP sip31.example.com\r\n"
    b"Via: SIP/2.0/TCP sip30.example.com\r\n"
    b"ViA: SIP/2.0/TCP sip29.example.com\r\n"
    b"VIa: SIP/2.0/TCP sip28.example.com\r\n"
    b"VIA: SIP/2.0/TCP sip27.example.com\r\n"
    b"via: SIP/2.0/TCP sip26.example.com\r\n"
    b"viA: SIP/2.0/TCP sip25.example.com\r\n"
    b"vIa: SIP/2.0/TCP sip24.example.com\r\n"
    b"vIA: SIP/2.0/TCP sip23.example.com\r\n"
    b"V :  SIP/2.0/TCP sip22.example.com\r\n"
    b"v :  SIP/2.0/TCP sip21.example.com\r\n"
    b"V  : SIP/2.0/TCP sip20.example.com\r\n"
    b"v  : SIP/2.0/TCP sip19.example.com\r\n"
    b"Via : SIP/2.0/TCP sip18.example.com\r\n"
    b"Via  : SIP/2.0/TCP sip17.example.com\r\n"
    b"Via: SIP/2.0/TCP sip16.example.com\r\n"
    b"Via: SIP/2.0/TCP sip15.example.com\r\n"
    b"Via: SIP/2.0/TCP sip14.example.com\r\n"
    b"Via: SIP/2.0/TCP sip13.example.com\r\n"
    b"Via: SIP/2.0/TCP sip12.example.com\r\n"
    b"Via: SIP/2.0/TCP sip11.example.com\r\n"
    b"Via: SIP/2.0/TCP sip10.example.com\r\n"
    b"Via: SIP/2.0/TCP sip9.example.com\r\n"
    b"Via: SIP/2.0/TCP sip8.example.com\r\n"
    b"Via: SIP/2.0/TCP sip7.example.com\r\n"
    b"Via: SIP/2.0/TCP sip6.example.com\r\n"
    b"Via: SIP/2.0/TCP sip5.example.com\r\n"
    b"Via: SIP/2.0/TCP sip4.example.com\r\n"
    b"Via: SIP/2.0/TCP sip3.example.com\r\n"
    b"Via: SIP/2.0/TCP sip2.example.com\r\n"
    b"Via: SIP/2.0/TCP sip1.example.com\r\n"
    b"Via: SIP/2.0/TCP host.example.com;received=192.0.2.5;branch=very" + b"long" * 50 + b"branchvalue\r\n"
    b"Max-Forwards: 70\r\n"
    b"Contact: <sip:" + b"amazinglylongcallername" * 5 + b"@host5.example.net>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"l: 150\r\n"
    b"\r\n" + SDP_150
)

DBLREQ = (  # 3.1.1.8 Extra Trailing Octets in a UDP Datagram
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:j.user@example.com;tag=43251j3j324\r\n"
    b"Max-Forwards: 8\r\n"
    b"I: dblreq.0ha0isndaksdj99sdfafnl3lk233412\r\n"
    b"Contact: sip:j.user@host.example.com\r\n"
    b"CSeq: 8 REGISTER\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.125;branch=z9hG4bKkdjuw23492\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
    b"INVITE sip:joe@example.com SIP/2.0\r\n"
    b"t: sip:joe@example.com\r\n"
    b"From: sip:caller@example.net;tag=141334\r\n"
    b"Max-Forwards: 8\r\n"
    b"Call-ID: dblreq.0ha0isnda977644900765@192.0.2.15\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.15;branch=z9hG4bKkdjuw380234\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 150\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.15\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.15\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m =video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

SEMIURI = (  # 3.1.1.9 Semicolon-Separated Parameters in URI User Part
    b"OPTIONS sip:user;par=u%40example.net@example.com SIP/2.0\r\n"
    b"To: sip:j_user@example.com\r\n"
    b"From: sip:caller@example.org;tag=33242\r\n"
    b"Max-Forwards: 3\r\n"
    b"Call-ID: semiuri.0ha0isndaksdj\r\n"
    b"CSeq: 8 OPTIONS\r\n"
    b"Accept: application/sdp, application/pkcs7-mime,\r\n"
    b"        multipart/mixed, multipart/signed,\r\n"
    b"        message/sip, message/sipfrag\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKkdjuw\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

TRANSPORTS = (  # 3.1.1.10 Varied and Unknown Transport Types
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: <sip:caller@example.com>;tag=323\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID:  transports.kijh4akdnaqjkwendsasfdj\r\n"
    b"Accept: application/sdp\r\n"
    b"CSeq: 60 OPTIONS\r\n"
    b"Via: SIP/2.0/UDP t1.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Via: SIP/2.0/SCTP t2.example.com;branch=z9hG4bKklasjdhf\r\n"
    b"Via: SIP/2.0/TLS t3.example.com;branch=z9hG4bK2980unddj\r\n"
    b"Via: SIP/2.0/UNKNOWN t4.example.com;branch=z9hG4bKasd0f3en\r\n"
    b"Via: SIP/2.0/TCP t5.example.com;branch=z9hG4bK0a9idfnee\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

MPART01_BINARY = bytes.fromhex(  # the DER blob the RFC gives in <hex>; it holds 0x00 octets
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

MPART01 = (  # 3.1.1.11 Multipart MIME Message
    b"MESSAGE sip:kumiko@example.org SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK-d87543-4dade06d0bdb11ee-1--d87543-;rport\r\n"
    b"Max-Forwards: 70\r\n"
    b"Route: <sip:127.0.0.1:5080>\r\n"
    b"Identity: r5mwreLuyDRYBi/0TiPwEsY3rEVsk/G2WxhgTV1PF7hHuLIK0YWVKZhKv9Mj8UeXqkMVbnVq37CD+813gvYjcBUaZngQm"
    b"Xc9WNZSDNGCzA+fWl9MEUHWIZo1CeJebdY/XlgKeTa0Olvq0rt70Q5jiSfbqMJmQFteeivUhkMWYUA=\r\n"
    b"Contact: <sip:fluffy@127.0.0.1:5070>\r\n"
    b"To: <sip:kumiko@example.org>\r\n"
    b"From: <sip:fluffy@example.com>;tag=2fb0dcc9\r\n"
    b"Call-ID: 3d9485ad0c49859b@Zmx1ZmZ5LW1hYy0xNi5sb2NhbA..\r\n"
    b"CSeq: 1 MESSAGE\r\n"
    b"Content-Transfer-Encoding: binary\r\n"
    b"Content-Type: multipart/mixed;boundary=7a9cbec02ceef655\r\n"
    b"Date: Sat, 15 Oct 2005 04:44:56 GMT\r\n"
    b"User-Agent: SIPimp.org/0.2.5 (curses)\r\n"
    b"Content-Length: 553\r\n"
    b"\r\n"
    b"--7a9cbec02ceef655\r\n"
    b"Content-Type: text/plain\r\n"
    b"Content-Transfer-Encoding: binary\r\n"
    b"\r\n"
    b"Hello\r\n"
    b"--7a9cbec02ceef655\r\n"
    b"Content-Type: application/octet-stream\r\n"
    b"Content-Transfer-Encoding: binary\r\n"
    b"\r\n" + MPART01_BINARY + b"\r\n"
    b"--7a9cbec02ceef655--\r\n"
)

UNREASON = (  # 3.1.1.12 Unusual Reason Phrase
    b"SIP/2.0 200 = 2**3 * 5**2 \xd0\xbd\xd0\xbe \xd1\x81\xd1\x82\xd0\xbe \xd0\xb4\xd0\xb5\xd0\xb2\xd1\x8f"
    b"\xd0\xbd\xd0\xbe\xd1\x81\xd1\x82\xd0\xbe \xd0\xb4\xd0\xb5\xd0\xb2\xd1\x8f\xd1\x82\xd1\x8c - "
    b"\xd0\xbf\xd1\x80\xd0\xbe\xd1\x81\xd1\x82\xd0\xbe\xd0\xb5\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.198;branch=z9hG4bK1324923\r\n"
    b"Call-ID: unreason.1234ksdfak3j2erwedfsASdf\r\n"
    b"CSeq: 35 INVITE\r\n"
    b"From: sip:user@example.com;tag=11141343\r\n"
    b"To: sip:user@example.edu;tag=2229\r\n"
    b"Content-Length: 154\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Contact: <sip:user@host198.example.com>\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.198\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.198\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

NOREASON = (  # 3.1.1.13 Empty Reason Phrase
    b"SIP/2.0 100 \r\n"
    b"Via: SIP/2.0/UDP 192.0.2.105;branch=z9hG4bK2398ndaoe\r\n"
    b"Call-ID: noreason.asndj203insdf99223ndf\r\n"
    b"CSeq: 35 INVITE\r\n"
    b"From: <sip:user@example.com>;tag=39ansfi3\r\n"
    b"To: <sip:user@example.edu>;tag=902jndnke3\r\n"
    b"Content-Length: 0\r\n"
    b"Contact: <sip:user@host105.example.com>\r\n"
    b"\r\n"
)

# --- 3.1.2 Invalid messages ----------------------------------------------------------------

BADINV01 = (  # 3.1.2.1 Extraneous Header Field Separators
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:caller@example.net;tag=134161461246\r\n"
    b"Max-Forwards: 7\r\n"
    b"Call-ID: badinv01.0ha0isndaksdjasdf3234nas\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.15;;,;,,\r\n"
    b'Contact: "Joe" <sip:joe@example.org>;;;;\r\n'
    b"Content-Length: 152\r\n"
    b"Content-Type: application/sdp\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.15\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.15\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

CLERR = (  # 3.1.2.2 Content Length Larger Than Message
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"Max-Forwards: 80\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:caller@example.net;tag=93942939o2\r\n"
    b"Contact: <sip:caller@hungry.example.net>\r\n"
    b"Call-ID: clerr.0ha0isndaksdjweiafasdk3\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Via: SIP/2.0/UDP host5.example.com;branch=z9hG4bK-39234-23523\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 9999\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.155\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.155\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

NCL = (  # 3.1.2.3 Negative Content-Length
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"Max-Forwards: 254\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:caller@example.net;tag=32394234\r\n"
    b"Call-ID: ncl.0ha0isndaksdj2193423r542w35\r\n"
    b"CSeq: 0 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.53;branch=z9hG4bKkdjuw\r\n"
    b"Contact: <sip:caller@example53.example.net>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: -999\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.53\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.53\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

SCALAR02 = (  # 3.1.2.4 Request Scalar Fields with Overlarge Values
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/TCP host129.example.com;branch=z9hG4bK342sdfoi3\r\n"
    b"To: <sip:user@example.com>\r\n"
    b"From: <sip:user@example.com>;tag=239232jh3\r\n"
    b"CSeq: 36893488147419103232 REGISTER\r\n"
    b"Call-ID: scalar02.23o0pd9vanlq3wnrlnewofjas9ui32\r\n"
    b"Max-Forwards: 300\r\n"
    b"Expires: 1" + b"0" * 100 + b"\r\n"
    b"Contact: <sip:user@host129.example.com>\r\n"
    b"  ;expires=280297596632815\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

SCALARLG = (  # 3.1.2.5 Response Scalar Fields with Overlarge Values
    b"SIP/2.0 503 Service Unavailable\r\n"
    b"Via: SIP/2.0/TCP host129.example.com;branch=z9hG4bKzzxdiwo34sw;received=192.0.2.129\r\n"
    b"To: <sip:user@example.com>\r\n"
    b"From: <sip:other@example.net>;tag=2easdjfejw\r\n"
    b"CSeq: 9292394834772304023312 OPTIONS\r\n"
    b"Call-ID: scalarlg.noase0of0234hn2qofoaf0232aewf2394r\r\n"
    b"Retry-After: 949302838503028349304023988\r\n"
    b'Warning: 1812 overture "In Progress"\r\n'
    b"Content-Length: 0\r\n"
    b"\r\n"
)

QUOTBAL = (  # 3.1.2.6 Unterminated Quoted String in Display Name
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b'To: "Mr. J. User <sip:j.user@example.com>\r\n'
    b"From: sip:caller@example.net;tag=93334\r\n"
    b"Max-Forwards: 10\r\n"
    b"Call-ID: quotbal.aksdj\r\n"
    b"Contact: <sip:caller@host59.example.net>\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.59:5050;branch=z9hG4bKkdjuw39234\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 152\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.15\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.15\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

LTGTRURI = (  # 3.1.2.7 <> Enclosing Request-URI
    b"INVITE <sip:user@example.com> SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=39291\r\n"
    b"Max-Forwards: 23\r\n"
    b"Call-ID: ltgtruri.1@192.0.2.5\r\n"
    b"CSeq: 1 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.5\r\n"
    b"Contact: <sip:caller@host5.example.net>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 159\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.5\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.5\r\n"
    b"t=3149328700 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

LWSRURI = (  # 3.1.2.8 Malformed SIP Request-URI (embedded LWS)
    b"INVITE sip:user@example.com; lr SIP/2.0\r\n"
    b"To: sip:user@example.com;tag=3xfe-9921883-z9f\r\n"
    b"From: sip:caller@example.net;tag=231413434\r\n"
    b"Max-Forwards: 5\r\n"
    b"Call-ID: lwsruri.asdfasdoeoi2323-asdfwrn23-asd834rk423\r\n"
    b"CSeq: 2130706432 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKkdjuw2395\r\n"
    b"Contact: <sip:caller@host1.example.net>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 159\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.1\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.1\r\n"
    b"t=3149328700 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

LWSSTART = (  # 3.1.2.9 Multiple SP Separating Request-Line Elements
    b"INVITE  sip:user@example.com  SIP/2.0\r\n"
    b"Max-Forwards: 8\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=8814\r\n"
    b"Call-ID: lwsstart.dfknq234oi243099adsdfnawe3@example.com\r\n"
    b"CSeq: 1893884 INVITE\r\n"
    b"Via: SIP/2.0/UDP host1.example.com;branch=z9hG4bKkdjuw3923\r\n"
    b"Contact: <sip:caller@host1.example.net>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 150\r\n"
    b"\r\n" + SDP_150
)

TRWS = (  # 3.1.2.10 SP Characters at End of Request-Line
    b"OPTIONS sip:remote-target@example.com SIP/2.0  \r\n"
    b"Via: SIP/2.0/TCP host1.examle.com;branch=z9hG4bK299342093\r\n"
    b"To: <sip:remote-target@example.com>\r\n"
    b"From: <sip:local-resource@example.com>;tag=329429089\r\n"
    b"Call-ID: trws.oicu34958239neffasdhr2345r\r\n"
    b"Accept: application/sdp\r\n"
    b"CSeq: 238923 OPTIONS\r\n"
    b"Max-Forwards: 70\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

ESCRURI = (  # 3.1.2.11 Escaped Headers in SIP Request-URI
    b"INVITE sip:user@example.com?Route=%3Csip:example.com%3E SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=341518\r\n"
    b"Max-Forwards: 7\r\n"
    b"Contact: <sip:caller@host39923.example.net>\r\n"
    b"Call-ID: escruri.23940-asdfhj-aje3br-234q098w-fawerh2q-h4n5\r\n"
    b"CSeq: 149209342 INVITE\r\n"
    b"Via: SIP/2.0/UDP host-of-the-hour.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 150\r\n"
    b"\r\n" + SDP_150
)

BADDATE = (  # 3.1.2.12 Invalid Time Zone in Date Header Field
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=2234923\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID: baddate.239423mnsadf3j23lj42--sedfnm234\r\n"
    b"CSeq: 1392934 INVITE\r\n"
    b"Via: SIP/2.0/UDP host.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Date: Fri, 01 Jan 2010 16:00:00 EST\r\n"
    b"Contact: <sip:caller@host5.example.net>\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Content-Length: 150\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.5\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.5\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

REGBADCT = (  # 3.1.2.13 Failure to Enclose name-addr URI in <>
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:user@example.com;tag=998332\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID: regbadct.k345asrl3fdbv@10.0.0.1\r\n"
    b"CSeq: 1 REGISTER\r\n"
    b"Via: SIP/2.0/UDP 135.180.130.133:5060;branch=z9hG4bKkdjuw\r\n"
    b"Contact: sip:user@example.com?Route=%3Csip:sip.example.com%3E\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

BADASPEC = (  # 3.1.2.14 Spaces within addr-spec
    b"OPTIONS sip:user@example.org SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP host4.example.com:5060;branch=z9hG4bKkdju43234\r\n"
    b"Max-Forwards: 70\r\n"
    b'From: "Bell, Alexander" <sip:a.g.bell@example.com>;tag=433423\r\n'
    b'To: "Watson, Thomas" < sip:t.watson@example.org >\r\n'
    b"Call-ID: badaspec.sdf0234n2nds0a099u23h3hnnw009cdkne3\r\n"
    b"Accept: application/sdp\r\n"
    b"CSeq: 3923239 OPTIONS\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

BADDN = (  # 3.1.2.15 Non-token Characters in Display Name
    b"OPTIONS sip:t.watson@example.org SIP/2.0\r\n"
    b"Via:     SIP/2.0/UDP c.example.com:5060;branch=z9hG4bKkdjuw\r\n"
    b"Max-Forwards:      70\r\n"
    b"From:    Bell, Alexander <sip:a.g.bell@example.com>;tag=43\r\n"
    b"To:      Watson, Thomas <sip:t.watson@example.org>\r\n"
    b"Call-ID: baddn.31415@c.example.com\r\n"
    b"Accept: application/sdp\r\n"
    b"CSeq:    3923239 OPTIONS\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

BADVERS = (  # 3.1.2.16 Unknown Protocol Version
    b"OPTIONS sip:t.watson@example.org SIP/7.0\r\n"
    b"Via:     SIP/7.0/UDP c.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Max-Forwards:     70\r\n"
    b"From:    A. Bell <sip:a.g.bell@example.com>;tag=qweoiqpe\r\n"
    b"To:      T. Watson <sip:t.watson@example.org>\r\n"
    b"Call-ID: badvers.31417@c.example.com\r\n"
    b"CSeq:    1 OPTIONS\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

MISMATCH01 = (  # 3.1.2.17 Start Line and CSeq Method Mismatch
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:caller@example.net;tag=34525\r\n"
    b"Max-Forwards: 6\r\n"
    b"Call-ID: mismatch01.dj0234sxdfl3\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Via: SIP/2.0/UDP host.example.com;branch=z9hG4bKkdjuw\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

MISMATCH02 = (  # 3.1.2.18 Unknown Method with CSeq Method Mismatch
    b"NEWMETHOD sip:user@example.com SIP/2.0\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:caller@example.net;tag=34525\r\n"
    b"Max-Forwards: 6\r\n"
    b"Call-ID: mismatch02.dj0234sxdfl3\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Contact: <sip:caller@host.example.net>\r\n"
    b"Via: SIP/2.0/UDP host.example.net;branch=z9hG4bKkdjuw\r\n"
    b"Content-Type: application/sdp\r\n"
    b"l: 138\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.1\r\n"
    b"c=IN IP4 192.0.2.1\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

BIGCODE = (  # 3.1.2.19 Overlarge Response Code
    b"SIP/2.0 4294967301 better not break the receiver\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.105;branch=z9hG4bK2398ndaoe\r\n"
    b"Call-ID: bigcode.asdof3uj203asdnf3429uasdhfas3ehjasdfas9i\r\n"
    b"CSeq: 353494 INVITE\r\n"
    b"From: <sip:user@example.com>;tag=39ansfi3\r\n"
    b"To: <sip:user@example.edu>;tag=902jndnke3\r\n"
    b"Content-Length: 0\r\n"
    b"Contact: <sip:user@host105.example.com>\r\n"
    b"\r\n"
)

# --- 3.2 Transaction layer, 3.3 Application layer, 3.4 Backward compatibility ---------------

BADBRANCH = (  # 3.2.1 Missing Transaction Identifier
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.org;tag=33242\r\n"
    b"Max-Forwards: 3\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK\r\n"
    b"Accept: application/sdp\r\n"
    b"Call-ID: badbranch.sadonfo23i420jv0as0derf3j3n\r\n"
    b"CSeq: 8 OPTIONS\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

INSUF = (  # 3.3.1 Missing Required Header Fields
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"CSeq: 193942 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.95;branch=z9hG4bKkdj.insuf\r\n"
    b"Content-Type: application/sdp\r\n"
    b"l: 152\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.95\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.95\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

UNKSCM = (  # 3.3.2 Request-URI with Unknown Scheme
    b"OPTIONS nobodyKnowsThisScheme:totallyopaquecontent SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=384\r\n"
    b"Max-Forwards: 3\r\n"
    b"Call-ID: unkscm.nasdfasser0q239nwsdfasdkl34\r\n"
    b"CSeq: 3923423 OPTIONS\r\n"
    b"Via: SIP/2.0/TCP host9.example.com;branch=z9hG4bKkdjuw39234\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

NOVELSC = (  # 3.3.3 Request-URI with Known but Atypical Scheme
    b"OPTIONS soap.beep://192.0.2.103:3002 SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=384\r\n"
    b"Max-Forwards: 3\r\n"
    b"Call-ID: novelsc.asdfasser0q239nwsdfasdkl34\r\n"
    b"CSeq: 3923423 OPTIONS\r\n"
    b"Via: SIP/2.0/TCP host9.example.com;branch=z9hG4bKkdjuw39234\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

UNKSM2 = (  # 3.3.4 Unknown URI Schemes in Header Fields
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"To: isbn:2983792873\r\n"
    b"From: <http://www.example.com>;tag=3234233\r\n"
    b"Call-ID: unksm2.daksdj@hyphenated-host.example.com\r\n"
    b"CSeq: 234902 REGISTER\r\n"
    b"Max-Forwards: 70\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.21:5060;branch=z9hG4bKkdjuw\r\n"
    b"Contact: <name:John_Smith>\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

BEXT01 = (  # 3.3.5 Proxy-Require and Require
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"To: sip:j_user@example.com\r\n"
    b"From: sip:caller@example.net;tag=242etr\r\n"
    b"Max-Forwards: 6\r\n"
    b"Call-ID: bext01.0ha0isndaksdj\r\n"
    b"Require: nothingSupportsThis, nothingSupportsThisEither\r\n"
    b"Proxy-Require: noProxiesSupportThis, norDoAnyProxiesSupportThis\r\n"
    b"CSeq: 8 OPTIONS\r\n"
    b"Via: SIP/2.0/TLS fold-and-staple.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

INVUT = (  # 3.3.6 Unknown Content-Type
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"Contact: <sip:caller@host5.example.net>\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:caller@example.net;tag=8392034\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID: invut.0ha0isndaksdjadsfij34n23d\r\n"
    b"CSeq: 235448 INVITE\r\n"
    b"Via: SIP/2.0/UDP somehost.example.com;branch=z9hG4bKkdjuw\r\n"
    b"Content-Type: application/unknownformat\r\n"
    b"Content-Length: 40\r\n"
    b"\r\n"
    b"<audio>\r\n"
    b' <pcmu port="443"/>\r\n'
    b"</audio>\r\n"
)

REGAUT01 = (  # 3.3.7 Unknown Authorization Scheme
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"To: sip:j.user@example.com\r\n"
    b"From: sip:j.user@example.com;tag=87321hj23128\r\n"
    b"Max-Forwards: 8\r\n"
    b"Call-ID: regaut01.0ha0isndaksdj\r\n"
    b"CSeq: 9338 REGISTER\r\n"
    b"Via: SIP/2.0/TCP 192.0.2.253;branch=z9hG4bKkdjuw\r\n"
    b"Authorization: NoOneKnowsThisScheme opaque-data=here\r\n"
    b"Content-Length:0\r\n"
    b"\r\n"
)

MULTI01 = (  # 3.3.8 Multiple Values in Single Value Required Fields
    b"INVITE sip:user@company.com SIP/2.0\r\n"
    b"Contact: <sip:caller@host25.example.net>\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.25;branch=z9hG4bKkdjuw\r\n"
    b"Max-Forwards: 70\r\n"
    b"CSeq: 5 INVITE\r\n"
    b"Call-ID: multi01.98asdh@192.0.2.1\r\n"
    b"CSeq: 59 INVITE\r\n"
    b"Call-ID: multi01.98asdh@192.0.2.2\r\n"
    b"From: sip:caller@example.com;tag=3413415\r\n"
    b"To: sip:user@example.com\r\n"
    b"To: sip:other@example.net\r\n"
    b"From: sip:caller@example.net;tag=2923420123\r\n"
    b"Content-Type: application/sdp\r\n"
    b"l: 154\r\n"
    b"Contact: <sip:caller@host36.example.net>\r\n"
    b"Max-Forwards: 5\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.25\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.25\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
    b"\r\n"
)

MCL01 = (  # 3.3.9 Multiple Content-Length Values
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP host5.example.net;branch=z9hG4bK293423\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:other@example.net;tag=3923942\r\n"
    b"Call-ID: mcl01.fhn2323orihawfdoa3o4r52o3irsdf\r\n"
    b"CSeq: 15932 OPTIONS\r\n"
    b"Content-Length: 13\r\n"
    b"Max-Forwards: 60\r\n"
    b"Content-Length: 5\r\n"
    b"Content-Type: text/plain\r\n"
    b"\r\n"
    b"There's no way to know how many octets are supposed to be here.\r\n"
)

BCAST = (  # 3.3.10 200 OK Response with Broadcast Via Header Field Value
    b"SIP/2.0 200 OK\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.198;branch=z9hG4bK1324923\r\n"
    b"Via: SIP/2.0/UDP 255.255.255.255;branch=z9hG4bK1saber23\r\n"
    b"Call-ID: bcast.0384840201234ksdfak3j2erwedfsASdf\r\n"
    b"CSeq: 35 INVITE\r\n"
    b"From: sip:user@example.com;tag=11141343\r\n"
    b"To: sip:user@example.edu;tag=2229\r\n"
    b"Content-Length: 154\r\n"
    b"Content-Type: application/sdp\r\n"
    b"Contact: <sip:user@host28.example.com>\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.198\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.198\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

ZEROMF = (  # 3.3.11 Max-Forwards of Zero
    b"OPTIONS sip:user@example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:caller@example.net;tag=3ghsd41\r\n"
    b"Call-ID: zeromf.jfasdlfnm2o2l43r5u0asdfas\r\n"
    b"CSeq: 39234321 OPTIONS\r\n"
    b"Via: SIP/2.0/UDP host1.example.com;branch=z9hG4bKkdjuw2349i\r\n"
    b"Max-Forwards: 0\r\n"
    b"Content-Length: 0\r\n"
    b"\r\n"
)

CPARAM01 = (  # 3.3.12 REGISTER with a Contact Header Parameter
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP saturn.example.com:5060;branch=z9hG4bKkdjuw\r\n"
    b"Max-Forwards: 70\r\n"
    b"From: sip:watson@example.com;tag=DkfVgjkrtMwaerKKpe\r\n"
    b"To: sip:watson@example.com\r\n"
    b"Call-ID: cparam01.70710@saturn.example.com\r\n"
    b"CSeq: 2 REGISTER\r\n"
    b"Contact: sip:+19725552222@gw1.example.net;unknownparam\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

CPARAM02 = (  # 3.3.13 REGISTER with a url-parameter
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP saturn.example.com:5060;branch=z9hG4bKkdjuw\r\n"
    b"Max-Forwards: 70\r\n"
    b"From: sip:watson@example.com;tag=838293\r\n"
    b"To: sip:watson@example.com\r\n"
    b"Call-ID: cparam02.70710@saturn.example.com\r\n"
    b"CSeq: 3 REGISTER\r\n"
    b"Contact: <sip:+19725552222@gw1.example.net;unknownparam>\r\n"
    b"l: 0\r\n"
    b"\r\n"
)

REGESCRT = (  # 3.3.14 REGISTER with a URL Escaped Header
    b"REGISTER sip:example.com SIP/2.0\r\n"
    b"To: sip:user@example.com\r\n"
    b"From: sip:user@example.com;tag=8\r\n"
    b"Max-Forwards: 70\r\n"
    b"Call-ID: regescrt.k345asrl3fdbv@192.0.2.1\r\n"
    b"CSeq: 14398234 REGISTER\r\n"
    b"Via: SIP/2.0/UDP host5.example.com;branch=z9hG4bKkdjuw\r\n"
    b"M: <sip:user@example.com?Route=%3Csip:sip.example.com%3E>\r\n"
    b"L:0\r\n"
    b"\r\n"
)

SDP01 = (  # 3.3.15 Unacceptable Accept Offering
    b"INVITE sip:user@example.com SIP/2.0\r\n"
    b"To: sip:j_user@example.com\r\n"
    b"Contact: <sip:caller@host15.example.net>\r\n"
    b"From: sip:caller@example.net;tag=234\r\n"
    b"Max-Forwards: 5\r\n"
    b"Call-ID: sdp01.ndaksdj9342dasdd\r\n"
    b"Accept: text/nobodyKnowsThis\r\n"
    b"CSeq: 8 INVITE\r\n"
    b"Via: SIP/2.0/UDP 192.0.2.15;branch=z9hG4bKkdjuw\r\n"
    b"Content-Length: 150\r\n"
    b"Content-Type: application/sdp\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.5\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.5\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0 12\r\n"
    b"m=video 3227 RTP/AVP 31\r\n"
    b"a=rtpmap:31 LPC\r\n"
)

INV2543 = (  # 3.4.1 INVITE with RFC 2543 Syntax
    b"INVITE sip:UserB@example.com SIP/2.0\r\n"
    b"Via: SIP/2.0/UDP iftgw.example.com\r\n"
    b"From: <sip:+13035551111@ift.client.example.net;user=phone>\r\n"
    b"Record-Route: <sip:UserB@example.com;maddr=ss1.example.com>\r\n"
    b"To: sip:+16505552222@ss1.example.net;user=phone\r\n"
    b"Call-ID: inv2543.1717@ift.client.example.com\r\n"
    b"CSeq: 56 INVITE\r\n"
    b"Content-Type: application/sdp\r\n"
    b"\r\n"
    b"v=0\r\n"
    b"o=mhandley 29739 7272939 IN IP4 192.0.2.5\r\n"
    b"s=-\r\n"
    b"c=IN IP4 192.0.2.5\r\n"
    b"t=0 0\r\n"
    b"m=audio 49217 RTP/AVP 0\r\n"
)


def _valid(raw: bytes) -> Request | Response:
    message = parse_message(raw)
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
    m = _valid(WSINV)
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
    m = _valid(INTMETH)
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
    m = _valid(ESC01)
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
    m = _valid(ESCNULL)
    assert m.to.uri.user == "null-%00-null" and unquote(m.to.uri.user) == "null-\x00-null"
    contacts = [NameAddr.parse(v).uri.user for v in m.headers.get_all("Contact")]
    assert contacts == ["%00", "%00%00"]  # two distinct registrations, not one shortened name
    assert m.headers.get("Content-Length") == "0" and m.body == b""


def test_esc02() -> None:
    m = _valid(ESC02)
    assert isinstance(m, Request) and m.method == "RE%47IST%45R" and m.cseq == (29344, "RE%47IST%45R")
    assert m.to.display == "%Z%45" and m.from_.display == "%Z%45"
    assert [NameAddr.parse(v).uri.user for v in m.headers.get_all("Contact")] == ["alias1", "alias3"]
    assert m.headers.get("C%6Fntact") == "<sip:alias2@host2.example.com>"
    assert m.vias[0].branch == "z9hG4bK209%fzsnel234"


def test_lwsdisp() -> None:
    m = _valid(LWSDISP)
    assert m.from_.display == "caller" and m.from_.uri.user == "caller" and m.from_.tag == "323"


def test_longreq() -> None:
    m = _valid(LONGREQ)
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
    m = _valid(DBLREQ)
    assert isinstance(m, Request) and m.method == "REGISTER"
    assert m.call_id == "dblreq.0ha0isndaksdj99sdfafnl3lk233412"
    assert m.body == b""  # the INVITE after the blank line is noise beyond Content-Length: 0


def test_semiuri() -> None:
    m = _valid(SEMIURI)
    assert isinstance(m, Request)
    assert unquote(m.uri.user or "") == "user;par=u@example.net" and m.uri.params == {}
    assert m.headers.get_all("Accept") == [
        "application/sdp", "application/pkcs7-mime", "multipart/mixed", "multipart/signed", "message/sip",
        "message/sipfrag",
    ]


def test_transports() -> None:
    m = _valid(TRANSPORTS)
    assert [v.transport for v in m.vias] == ["UDP", "SCTP", "TLS", "UNKNOWN", "TCP"]
    assert m.call_id == "transports.kijh4akdnaqjkwendsasfdj"


def test_mpart01() -> None:
    m = _valid(MPART01)
    assert len(m.body) == 553 and MPART01_BINARY in m.body and b"\x00" in m.body
    assert m.content_type == "multipart/mixed;boundary=7a9cbec02ceef655"
    via = m.vias[0]
    assert (via.host, via.port, via.rport) == ("127.0.0.1", 5070, None) and "rport" in via.params
    assert m.headers.get("Date") == "Sat, 15 Oct 2005 04:44:56 GMT"


def test_unreason() -> None:
    m = _valid(UNREASON)
    assert isinstance(m, Response) and m.status == 200
    assert m.reason == "= 2**3 * 5**2 но сто девяносто девять - простое"
    assert len(m.body) == 154


def test_noreason() -> None:
    m = _valid(NOREASON)
    assert isinstance(m, Response) and (m.status, m.reason) == (100, "")
    assert m.to_bytes().startswith(b"SIP/2.0 100 \r\n")  # the SP before the empty phrase is kept


# --- Messages whose problem lies above the parser: they parse, the layer above decides -------


def test_badbranch_parses_with_an_empty_transaction_id() -> None:
    m = _valid(BADBRANCH)
    assert m.vias[0].branch == "z9hG4bK"


@pytest.mark.parametrize("raw, scheme, opaque", [
    (UNKSCM, "nobodyknowsthisscheme", "totallyopaquecontent"),
    (NOVELSC, "soap.beep", "//192.0.2.103:3002"),
])
def test_unknown_request_uri_schemes_parse_for_a_416(raw: bytes, scheme: str, opaque: str) -> None:
    m = _valid(raw)
    assert isinstance(m, Request) and (m.uri.scheme, m.uri.host) == (scheme, opaque)


def test_unksm2_keeps_unknown_schemes_in_headers() -> None:
    m = _valid(UNKSM2)
    assert (m.to.uri.scheme, m.to.uri.host) == ("isbn", "2983792873")
    assert str(m.from_.uri) == "http://www.example.com" and m.from_.tag == "3234233"
    assert str(NameAddr.parse(m.headers.get("Contact") or "").uri) == "name:John_Smith"


def test_bext01_require_values() -> None:
    m = _valid(BEXT01)
    assert m.headers.get_all("Require") == ["nothingSupportsThis", "nothingSupportsThisEither"]
    assert m.headers.get_all("Proxy-Require") == ["noProxiesSupportThis", "norDoAnyProxiesSupportThis"]


def test_invut_body_is_framed() -> None:
    m = _valid(INVUT)
    assert m.content_type == "application/unknownformat" and m.body.startswith(b"<audio>") and len(m.body) == 40


def test_regaut01_unknown_auth_scheme_is_kept() -> None:
    m = _valid(REGAUT01)
    assert m.headers.get("Authorization") == "NoOneKnowsThisScheme opaque-data=here"


def test_zeromf() -> None:
    assert _valid(ZEROMF).max_forwards == 0


def test_cparam01_param_belongs_to_the_header() -> None:
    contact = NameAddr.parse(_valid(CPARAM01).headers.get("Contact") or "")
    assert contact.uri.params == {} and contact.params == {"unknownparam": None}
    assert contact.uri.user == "+19725552222"


def test_cparam02_param_belongs_to_the_uri() -> None:
    contact = NameAddr.parse(_valid(CPARAM02).headers.get("Contact") or "")
    assert contact.uri.params == {"unknownparam": None} and contact.params == {}


def test_regescrt_header_in_contact_uri() -> None:
    contact = NameAddr.parse(_valid(REGESCRT).headers.get("Contact") or "")
    assert contact.uri.headers == {"Route": "%3Csip:sip.example.com%3E"}


def test_sdp01() -> None:
    m = _valid(SDP01)
    assert m.headers.get_all("Accept") == ["text/nobodyKnowsThis"] and len(m.body) == 150


def test_inv2543_rfc2543_syntax_is_accepted() -> None:
    m = _valid(INV2543)
    assert m.max_forwards is None and m.vias[0].branch is None and m.from_.tag is None
    assert m.from_.uri.params == {"user": "phone"} and m.to.params == {"user": "phone"}
    assert m.body.endswith(b"m=audio 49217 RTP/AVP 0\r\n")  # no Content-Length: the rest of the datagram


# --- Invalid messages: refused, with an error that says why --------------------------------

INVALID = [
    # name, message, refused by, pattern the error must match, status owed
    ("badinv01", BADINV01, "validate", r"Via: .*empty parameter", 400),
    ("clerr", CLERR, "parse", r"Content-Length 9999 is larger than the 154 body bytes received", 400),
    ("ncl", NCL, "validate", r"Content-Length '-999' is not a non-negative integer", 400),
    ("scalar02", SCALAR02, "validate", r"CSeq number '36893488147419103232' is larger than 4294967295", 400),
    ("scalarlg", SCALARLG, "validate", r"CSeq number '9292394834772304023312' is larger", 400),
    ("quotbal", QUOTBAL, "validate", r"To: unterminated quoted string", 400),
    ("ltgtruri", LTGTRURI, "parse", r"Request-URI: URI '<sip:user@example.com>': character '<'", 400),
    ("lwsruri", LWSRURI, "parse", r"request line 'INVITE sip:user@example.com; lr SIP/2.0' is not", 400),
    ("lwsstart", LWSSTART, "parse", r"request line 'INVITE  sip:user@example.com  SIP/2.0' is not", 400),
    ("trws", TRWS, "parse", r"request line 'OPTIONS sip:remote-target@example.com SIP/2.0  ' is not", 400),
    ("escruri", ESCRURI, "validate", r"Request-URI .* must not carry headers", 400),
    ("baddate", BADDATE, "validate", r"Date 'Fri, 01 Jan 2010 16:00:00 EST' is not an RFC 1123 date in GMT", 400),
    ("regbadct", REGBADCT, "validate", r"Contact: URI with ',' or '\?' must be enclosed in <>", 400),
    ("badaspec", BADASPEC, "validate", r"To: URI ' sip:t.watson@example.org ': character ' '", 400),
    ("baddn", BADDN, "validate", r"From: display name 'Bell, Alexander' has characters that need quotes", 400),
    ("badvers", BADVERS, "validate", r"SIP version SIP/7.0 is not supported", 505),
    ("mismatch01", MISMATCH01, "validate", r"CSeq method 'INVITE' does not match request method 'OPTIONS'", 400),
    ("mismatch02", MISMATCH02, "validate", r"CSeq method 'INVITE' does not match request method 'NEWMETHOD'", 400),
    ("bigcode", BIGCODE, "parse", r"status code '4294967301' is not three digits", 400),
    ("insuf", INSUF, "validate", r"missing From header", 400),
    ("multi01", MULTI01, "validate", r"2 different From headers", 400),
    ("mcl01", MCL01, "validate", r"2 different Content-Length values: 13, 5", 400),
    ("bcast", BCAST, "validate", r"response has 2 Via values; a user agent accepts exactly one", 400),
]


@pytest.mark.parametrize("name, raw, stage, pattern, status", INVALID, ids=[case[0] for case in INVALID])
def test_invalid_messages_are_refused(name: str, raw: bytes, stage: str, pattern: str, status: int) -> None:
    if stage == "parse":
        with pytest.raises(SipParseError, match=pattern) as caught:
            parse_message(raw)
    else:
        message = parse_message(raw)  # readable enough for the next layer to answer it
        with pytest.raises(SipParseError, match=pattern) as caught:
            if isinstance(message, Request):
                validate_request(message)
            else:
                validate_response(message)
    assert caught.value.status == status


def test_requests_refused_by_validation_can_still_be_answered() -> None:
    from telephony.sip.message import make_response

    for _, raw, stage, _, status in INVALID:
        message = parse_message(raw) if stage == "validate" else None
        if isinstance(message, Request):
            response = make_response(message, status, to_tag="x1")
            reparsed = parse_message(response.to_bytes())
            assert isinstance(reparsed, Response) and reparsed.status == status
            assert reparsed.headers.get_all("Via") == message.headers.get_all("Via")


def test_transcribed_content_lengths_match_the_bodies() -> None:
    """Guards the transcription: where the RFC means the length to be right, it is."""
    exact = [WSINV, ESC01, LONGREQ, MPART01, UNREASON, BADINV01, QUOTBAL, LTGTRURI, LWSRURI, LWSSTART,
             ESCRURI, BADDATE, MISMATCH02, INSUF, MULTI01, BCAST, INVUT, SDP01]
    for raw in exact:
        head, _, body = raw.partition(b"\r\n\r\n")
        declared = re.search(rb"\r\n(?:Content-Length|l)\s*:\s*(\d+)", head)
        assert declared is not None and int(declared[1]) == len(body), head[:60]
