"""The root of the application's errors, so that a user can catch every one of them with one `except`.

Each error keeps the built-in base it had (a bad web token is still a `ValueError`).
"""

from __future__ import annotations


class CallCenterError(Exception):
    """The configuration, the shop, its database, the swarm file or an eval cannot go on; the subclass says what."""
