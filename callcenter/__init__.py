"""The application: the shop, its agents, one call's conversation, config and the command line.

Every error the application raises is a `CallCenterError`.
"""

from callcenter.errors import CallCenterError

__all__ = ["CallCenterError"]
