"""Stand-ins for what a tool is given, for tests that call tools directly (no swarm session around them)."""

from __future__ import annotations

from collections.abc import Sequence

from swarm.events import EndReason, EscalationReason, Event
from swarm.messages import Message


class NoSession:
    """The `ToolContext.session` of a tool that must not touch the session: any use fails the test."""

    def escalate(self, reason: EscalationReason, detail: str = "") -> None:
        raise AssertionError(f"the tool escalated ({reason}): it was not expected to touch the session")

    def end_call(self, reason: EndReason = "goodbye", detail: str = "") -> None:
        raise AssertionError(f"the tool ended the call ({reason}): it was not expected to touch the session")

    def change_agent(self, name: str) -> None:
        raise AssertionError(f"the tool changed the agent to {name}: it was not expected to touch the session")

    def navigate_back(self) -> str:
        raise AssertionError("the tool navigated back: it was not expected to touch the session")

    def get_agent_history(self, agent: str | None = None) -> list[Message]:
        raise AssertionError("the tool read the history: it was not expected to touch the session")

    @property
    def events(self) -> Sequence[Event]:
        return ()  # nothing happened before: reading an empty log touches nothing
