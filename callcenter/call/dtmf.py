"""The caller's keys on the phone (DTMF): each key to the call rules as it comes, the pause after the last digit
when a tool asked for some, and the keypad's log lines. What a key means is the rules' (callcenter.call.rules);
this times the wait for more digits and does what the rules answer through the conversation's `act`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from callcenter.call.rules import Action, CallRules, Escalate, KeypadClosed, KeypadOpened
from telephony import Call

log = logging.getLogger(__name__)


class Dtmf:
    """One phone call's keys. `agent_talking` says whether the agent is talking now (a key may stop it);
    `act` does the call rules' actions."""

    def __init__(
        self,
        call: Call,
        rules: CallRules,
        agent_talking: Callable[[], bool],
        act: Callable[[list[Action]], None],
    ) -> None:
        self.call, self.rules = call, rules
        self._agent_talking, self._act = agent_talking, act
        self._pause: asyncio.TimerHandle | None = None  # the wait for more digits

    async def listen(self) -> None:
        """Hand the caller's keys to the call rules until the call ends."""
        async for key in self.call.dtmf_in:
            actions = self.rules.key(key, time.monotonic(), self._agent_talking())
            if any(isinstance(action, Escalate) and action.reason == "caller_pressed_0" for action in actions):
                log.info("event=dtmf_operator call=%s", self.call.call_id)
            self._act(actions)

    def wait(self, timeout_s: float) -> None:
        """Wait `timeout_s` for more digits; then the digits typed so far are due."""
        self._cancel_pause()
        self._pause = asyncio.get_running_loop().call_later(timeout_s, self._digits_due)

    def note(self, note: KeypadOpened | KeypadClosed) -> None:
        """The keypad opened or closed (a closed keypad waits for no more digits)."""
        if isinstance(note, KeypadOpened):
            request = note.request
            log.info(
                "event=keypad_open call=%s tool=%s argument=%s max_digits=%d",
                self.call.call_id,
                request.tool,
                request.argument,
                request.max_digits,
            )
        else:
            self._cancel_pause()
            log.info("event=keypad_closed call=%s reason=%s digits=%d", self.call.call_id, note.reason, note.digits)

    def _digits_due(self) -> None:
        self._pause = None
        self._act(self.rules.digits_due())

    def _cancel_pause(self) -> None:
        if self._pause is not None:
            self._pause.cancel()
            self._pause = None
