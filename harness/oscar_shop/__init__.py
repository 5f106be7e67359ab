"""A minimal API-only django-oscar shop (with django-oscar-api) on SQLite: the reference backend the HTTP shop's
tests sell through (issue 24). Started by harness.oscar; nothing of VoiceSwarm imports it."""
