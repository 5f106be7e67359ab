"""Django settings of the throw-away oscar shop: SQLite at $OSCAR_SHOP_DB, the REST API only, token auth.

Not a production configuration: a fixed secret key, DEBUG off (so that errors are JSON, not debug pages), no static
files, no e-mail. What oscar and oscar-api need is as FACTS.md measured it.
"""

import os

from oscar import INSTALLED_APPS as OSCAR_APPS  # type: ignore[import-untyped]
from oscar.defaults import *  # type: ignore[import-untyped]  # noqa: F403 (oscar's settings are read by name)

SECRET_KEY = "voiceswarm-throw-away-oscar-shop-for-tests-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "harness.oscar_shop.urls"
SITE_ID = 1
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-gb"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

INSTALLED_APPS = [*OSCAR_APPS, "rest_framework", "rest_framework.authtoken", "oscarapi"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # oscar-api's in place of Django's session middleware: a `Session-Id` header gives a cookie-less basket
    "oscarapi.middleware.HeaderSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "oscar.apps.basket.middleware.BasketMiddleware",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("OSCAR_SHOP_DB", "oscar.sqlite3"),
        # runserver answers each request on its own thread: wait for the writer rather than fail
        "OPTIONS": {"timeout": 20},
    }
}

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

HAYSTACK_CONNECTIONS = {"default": {"ENGINE": "haystack.backends.simple_backend.SimpleEngine"}}
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
STATIC_URL = "/static/"

REST_FRAMEWORK = {
    # A server-to-server client: a token (10-30 ms a request), not Basic auth (hashes the password each time)
    "DEFAULT_AUTHENTICATION_CLASSES": ["harness.oscar_shop.auth.BearerToken"],
}

OSCAR_DEFAULT_CURRENCY = "EUR"
OSCAR_ALLOW_ANON_CHECKOUT = True
OSCARAPI_BLOCK_ADMIN_API_ACCESS = False  # the staff order list: the only way to find a caller's orders
OSCAR_REQUIRED_ADDRESS_FIELDS = ("line1", "country")  # a phone order has the caller's number, not always a postcode
LOGGING = {"version": 1, "disable_existing_loggers": False}
