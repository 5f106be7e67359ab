"""The supervisor's page in a real browser (headless Chromium driven by selenium) while a real SIP caller (the
built-in TestCaller, Piper audio over RTP) talks to a real VoiceServer (Whisper tiny.en, the offline router):
the call appears, its transcript shows both sides and the tool calls, the page's "End call" button ends it with
a BYE, and it moves to past calls. Before it, a past call whose transcript is HTML shows that HTML as text.
"Hand to a person now" sends the keypad-0 REFER to sipp, which waits for nothing else.

Selenium blocks: every browser step runs in a thread, so the event loop keeps serving the call meanwhile.
With VOICESWARM_SCREENSHOTS=docs the README's screenshots are written there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from callcenter.call_records import CallRecord
from callcenter.config import (
    Config,
    LLMConfig,
    SipConfig,
    SupervisorConfig,
    VoiceConfig,
)
from callcenter.server import VoiceServer
from callcenter.testbed.dialer import TestCaller
from callcenter.voice import SpeechModels
from harness.peers import Peers
from swarm.events import ToolCalled, UserText
from tests.test_voice_e2e import ACCEPT_TRANSFER, OPERATOR

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = [
    pytest.mark.timeout(150),
    pytest.mark.peers,
    pytest.mark.models,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMEDRIVER).exists(), reason="needs Debian's chromium and chromium-driver"),
]

TOKEN = "browser-test-token-0123456789"
CALLER = "+442079460321"
HOSTILE = ['<script>window.pwned = "script"</script>', "<img src=x onerror=\"window.pwned = 'img'\">"]
# Chromium's own calls home (updates, sync, metrics) are off: the page is all it talks to.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--window-size=1280,1000",
)


@pytest.fixture
async def server(tmp_path: Path, speech: SpeechModels) -> AsyncIterator[VoiceServer]:
    config = Config(
        llm=LLMConfig(provider="offline"),
        database=str(tmp_path / "shop.db"),
        sip=SipConfig(listen="127.0.0.1:0"),
        voice=VoiceConfig(
            whisper_model="tiny.en",
            calls_database=str(tmp_path / "calls.db"),
            metrics_listen="",
            shutdown_deadline_s=2.0,
            recording="on",
            recording_dir=str(tmp_path / "recordings"),
            operator=OPERATOR,
        ),
        supervisor=SupervisorConfig(listen="127.0.0.1:0", token=TOKEN),
    )
    async with VoiceServer(config, speech=speech) as started:
        yield started


@pytest.fixture
async def sipp(tmp_path: Path) -> AsyncIterator[Peers]:
    runner = Peers(tmp_path)
    yield runner
    await runner.close()


class Browser:
    """A headless Chromium; each step in a thread of its own, waits bounded."""

    def __init__(self) -> None:
        options = webdriver.ChromeOptions()
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        # The Debian driver, named: selenium would otherwise look for (and try to download) one of its own.
        self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))

    async def run(self, step: Callable[[Any], Any]) -> Any:
        return await asyncio.to_thread(step, self.driver)

    async def until(self, condition: Callable[[Any], Any], what: str, timeout_s: float = 30.0) -> Any:
        def wait(driver: Any) -> Any:
            # The page redraws its lists as the feed brings news: an element found a moment ago may be gone
            # (stale) when the condition reads it, which means look again, as for one not there yet.
            return WebDriverWait(
                driver, timeout_s, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)
            ).until(condition, f"{what}: not within {timeout_s} s")

        return await self.run(wait)

    async def texts(self, css: str) -> list[str]:
        return await self.run(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, css)])


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    opened = await asyncio.to_thread(Browser)
    try:
        yield opened
    finally:
        await asyncio.to_thread(opened.driver.quit)


def shot_dir(tmp_path: Path) -> Path:
    return Path(os.environ.get("VOICESWARM_SCREENSHOTS") or tmp_path)


def live_lines(driver: Any, who: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, f"#live .call .transcript li.{who} .text")]


async def test_a_real_call_on_the_page_from_its_start_to_past_calls(server, speech, browser, tmp_path) -> None:
    host, port = server.supervisor_address
    page = f"http://{host}:{port}"
    server.records.save(hostile_record())
    await browser.run(lambda d: d.get(f"{page}/?token={TOKEN}"))
    assert await browser.run(lambda d: d.current_url) == f"{page}/"  # the token left the address bar
    await browser.until(lambda d: d.find_element(By.ID, "feed").text == "live", "the live feed")
    assert "serving" in await browser.texts("#health .chip")
    await html_stays_text(browser)
    assert (await browser.texts("#detail .no-recording"))[0].startswith("No recording")
    await browser.run(lambda d: d.find_element(By.CSS_SELECTOR, "#detail button.close").click())

    caller = TestCaller(speech, caller_id=CALLER, transcribe=False)
    caller.prepare("I'd like to buy a new phone charger.")
    sip_host, sip_port = server.address
    async with caller.connected(f"sip:shop@{sip_host}:{sip_port}") as dialled:
        card = await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#live .call"), "the call on the page")
        assert card[0].find_element(By.CSS_SELECTOR, ".caller-id").text == "•••0321"
        await browser.until(lambda d: any("How can I help" in t for t in live_lines(d, "agent")), "the greeting")
        await caller.agent_turn()
        await caller.say("I'd like to buy a new phone charger.")
        await browser.until(
            lambda d: any("charger" in t.lower() for t in live_lines(d, "caller")), "the caller's words"
        )
        await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#live .transcript li.tool"), "a tool call")
        await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#live .chart rect.bar"), "the turn's latency")
        await browser.until(
            lambda d: d.find_element(By.CSS_SELECTOR, "#live .agent").text == "sales", "the sales agent"
        )
        await caller.agent_turn()
        await browser.run(lambda d: d.save_screenshot(str(shot_dir(tmp_path) / "supervisor.png")))
        await phone_screenshot(browser, shot_dir(tmp_path) / "supervisor-phone.png")
        await browser.run(lambda d: d.find_element(By.CSS_SELECTOR, "#live .call button.hang-up").click())
        assert await caller.hung_up(15.0), "the page's End call did not end the call"
    assert caller.exchange.end_reason == "remote_hangup"  # our BYE
    await browser.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#live .call"), "the call gone from live calls")
    row = await browser.until(
        lambda d: [
            r
            for r in d.find_elements(By.CSS_SELECTOR, "#past li")
            if r.get_attribute("data-call-id") == dialled.call_id
        ],
        "the call in past calls",
    )
    record = server.records.get(dialled.call_id)
    await browser.run(lambda _: row[0].click())
    # The recording plays in the page's player: the browser reads the WAV's length from the file we serve.
    assert record.recording and record.recording_seconds
    await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#detail audio"), "the call's detail")
    assert await browser.texts("#detail .transcript li.tool")
    await browser.run(
        lambda d: d.execute_script(
            "const a = document.querySelector('#detail audio'); a.preload = 'metadata'; a.load();"
        )
    )
    duration = await browser.until(
        lambda d: d.execute_script("return document.querySelector('#detail audio').duration || 0"),
        "the recording in the player",
        timeout_s=10.0,
    )
    assert abs(duration - record.recording_seconds) < 0.5, (duration, record.recording_seconds)
    assert len(await browser.texts("#detail .chart rect.bar")) >= 2
    said = " ".join(await browser.texts("#detail .transcript li.caller .text")).lower()
    assert "charger" in said


async def phone_screenshot(browser: Browser, path: Path) -> None:
    def shoot(driver: Any) -> None:
        driver.set_window_size(400, 860)
        try:
            driver.save_screenshot(str(path))
        finally:
            driver.set_window_size(1280, 1000)

    await browser.run(shoot)


def hostile_record() -> CallRecord:
    """A past call whose transcript and tool call are HTML that would run if the page took it for HTML."""
    started = time.time() - 3600
    record = CallRecord(
        "hostile-1",
        CALLER,
        "shop",
        started,
        started + 60,
        "completed",
        transcript=[
            {"at": started + 1, "who": "caller", "text": HOSTILE[0]},
            {"at": started + 2, "who": "agent", "text": HOSTILE[1]},
        ],
        turns=[{"stt_s": 0.3, "llm_s": 0.4, "tts_s": 0.2, "voice_to_voice_s": 0.9}],
    )
    record.add_session_events(
        "triage",
        [UserText(HOSTILE[0]), ToolCalled("triage", "t1", "search_products", {"query": HOSTILE[1]}, HOSTILE[0])],
    )
    return record


async def html_stays_text(browser: Browser) -> None:
    row = await browser.until(
        lambda d: [
            r for r in d.find_elements(By.CSS_SELECTOR, "#past li") if r.get_attribute("data-call-id") == "hostile-1"
        ],
        "the hostile call",
    )
    await browser.run(lambda _: row[0].click())
    await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#detail .transcript li.tool"), "its transcript")
    assert await browser.texts("#detail .transcript li .text") == HOSTILE
    assert "<img src=x onerror=" in (await browser.texts("#detail .transcript li.tool code"))[0]  # in JSON quotes
    assert await browser.texts("#detail .transcript li.tool .tool-result") == ["→ " + HOSTILE[0]]
    assert await browser.run(lambda d: d.find_elements(By.CSS_SELECTOR, "#detail img, #detail script")) == []
    assert await browser.run(lambda d: d.execute_script("return window.pwned === undefined"))
    # And none could have run anyway: the page allows no inline script (an injected one is refused, and logged).
    with contextlib.suppress(WebDriverException):  # a refused script may be reported as an error
        await browser.run(
            lambda d: d.execute_script(
                "const s = document.createElement('script'); s.textContent = 'window.inline = 1'; document.body.append(s);"
            )
        )
    assert await browser.run(lambda d: d.execute_script("return window.inline === undefined"))


async def test_hand_over_is_the_refer_transfer_of_keypad_0(server, browser, sipp: Peers, tmp_path) -> None:
    host, port = server.supervisor_address
    await browser.run(lambda d: d.get(f"http://{host}:{port}/?token={TOKEN}"))
    await browser.until(lambda d: d.find_element(By.ID, "feed").text == "live", "the live feed")
    scenario = tmp_path / "await_transfer.xml"
    # sipp sends no audio and waits for our REFER: only the page's button can send it.
    scenario.write_text(ACCEPT_TRANSFER)
    caller, workdir = await sipp.start_sipp(server.address, str(scenario), timeout_s=40)
    button = await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#live .call button.hand-over"), "the call")
    await browser.run(lambda _: button[0].click())
    run = await sipp.wait_sipp(caller, workdir, timeout_s=45)
    assert run.returncode == 0 and run.successful == 1, run.report()
    assert f"Refer-To: <sip:{OPERATOR}@127.0.0.1" in run.logs["messages.log"]
    row = await browser.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#past li .disposition.transferred"), "past")
    record = server.records.recent(1)[0]
    assert record.disposition == "transferred" and record.end_reason == "transferred"
    assert "Please hold, I'm putting you through to a colleague." in [line["text"] for line in record.transcript]
    assert row[0].text == "transferred"
