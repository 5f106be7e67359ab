"""The supervisor's page: live calls (pushed over a WebSocket) and past calls, served by `voiceswarm serve`."""

from callcenter.supervisor.live import LiveCalls
from callcenter.supervisor.routes import Sources, supervisor_app

__all__ = ["LiveCalls", "Sources", "supervisor_app"]
