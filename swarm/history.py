"""One shared history per session: the last N messages, each agent seeing its own view."""

from __future__ import annotations

from collections.abc import Iterator

from swarm.messages import Message


class History:
    def __init__(self, max_messages: int = 25) -> None:
        if max_messages < 2:
            raise ValueError("history must keep at least 2 messages")
        self.max_messages = max_messages
        self._messages: list[Message] = []

    def push(self, *messages: Message) -> None:
        self._messages.extend(messages)
        self._rotate()

    def _rotate(self) -> None:
        # Cut at the oldest point that leaves at most N messages and does not start with a tool result:
        # a result without the call that asked for it is rejected by every provider.
        cut = max(0, len(self._messages) - self.max_messages)
        while cut < len(self._messages) and self._messages[cut].role == "tool":
            cut += 1
        del self._messages[:cut]

    def flush(self, agent: str) -> None:
        """Forget what only this agent saw (its system and tool messages); shared text stays."""
        self._messages = [m for m in self._messages if m.shared or m.agent != agent]

    def copy(self) -> History:
        copied = History(self.max_messages)
        copied._messages = list(self._messages)
        return copied

    def raw(self) -> list[Message]:
        return list(self._messages)

    def for_agent(self, agent: str) -> list[Message]:
        """User and spoken assistant text of every agent, plus this agent's own system and tool messages."""
        return [m for m in self._messages if m.shared or m.agent == agent]

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __len__(self) -> int:
        return len(self._messages)
