"""The root of the swarm's errors, so that a user can catch every one of them with one `except`."""

from __future__ import annotations


class SwarmError(Exception):
    """The swarm's configuration or a tool's API cannot be used; the subclass and message say what."""
