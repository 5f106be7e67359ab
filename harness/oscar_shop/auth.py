"""DRF's token authentication under the standard scheme name: `Authorization: Bearer <token>` (RFC 6750), which is
what VoiceSwarm's HTTP shop sends (DRF's own keyword is "Token")."""

from rest_framework.authentication import TokenAuthentication  # type: ignore[import-untyped]


class BearerToken(TokenAuthentication):
    keyword = "Bearer"
