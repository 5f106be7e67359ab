"""A caller cannot write a log line of their own (issue 25): the From user's control characters stay escaped."""

from __future__ import annotations

import io
import logging

import pytest

from callcenter.log_safety import SafeFormatter, printable
from telephony.sip.uri import SipUri
from telephony.sip_call import _user


@pytest.mark.parametrize(
    ("uri", "user"),
    [
        ("sip:%2B4930123456@pbx.example", "+4930123456"),
        ("sip:alice%20smith@pbx.example", "alice smith"),
        ("sip:1%0Aevent=forged@pbx.example", "1%0Aevent=forged"),
        ("sip:x%0D%0A%1B%5B31m@pbx.example", "x%0D%0A%1B[31m"),
    ],
)
def test_the_from_user_is_decoded_but_never_to_a_control_character(uri: str, user: str) -> None:
    assert _user(SipUri.parse(uri)) == user


def test_log_lines_escape_what_the_network_sent() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(SafeFormatter("%(levelname)s %(message)s"))
    log = logging.getLogger("test_log_safety")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("event=call_answered call=%s caller=%s", "abc\r\nINFO event=forged", "+49\x1b[2J")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("event=failed call=%s", "x\ny")
    finally:
        log.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "WARNING event=call_answered call=abc\\r\\nINFO event=forged caller=+49\\x1b[2J"
    assert lines[1] == "ERROR event=failed call=x\\ny"
    assert lines[2].startswith("Traceback")  # our own traceback keeps its lines
    assert not any(line.startswith("INFO event=forged") for line in lines)


def test_printable_values_are_one_bounded_line() -> None:
    assert printable("kiosk-1") == "kiosk-1"
    assert printable("a\nb\u2028c") == "a\\nb\\u2028c"
    assert len(printable("x" * 1000)) == 200


def test_a_caller_without_digits_is_masked_in_the_call_log() -> None:
    from callcenter.voice import _logged_caller

    assert _logged_caller("alice.smith", "DE") == "•••"
    assert _logged_caller("anonymous", "DE") == "anonymous"  # no identity to hide
    assert "30123456" not in _logged_caller("+4930123456", "DE")
