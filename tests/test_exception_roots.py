"""Each package has one exception root that a user can catch, and every exception class it defines derives from it.

A class that derives straight from `Exception` (or `ValueError`, `RuntimeError`...) is a new root a user cannot
catch with the package's one `except`: derive it from the root and keep the built-in base as a second one.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from callcenter import CallCenterError
from speech import SpeechError
from swarm import SwarmError
from telephony import SipError, TelephonyError

ROOTS: dict[str, type[BaseException]] = {
    "telephony": TelephonyError,
    "speech": SpeechError,
    "swarm": SwarmError,
    "callcenter": CallCenterError,
}


def exception_classes(package: str) -> list[type[BaseException]]:
    """The exception classes defined in the package's modules (not those they import)."""
    root = importlib.import_module(package)
    names = [package, *(m.name for m in pkgutil.walk_packages(root.__path__, f"{package}."))]
    found = []
    for name in names:
        module = importlib.import_module(name)
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name
        ]
    return found


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def strays(classes: list[type[BaseException]], root: type[BaseException]) -> list[str]:
    """The classes that do not derive from the root."""
    return sorted(qualified(cls) for cls in classes if not issubclass(cls, root))


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_every_exception_a_package_defines_derives_from_its_root(package: str) -> None:
    classes = exception_classes(package)
    assert len(classes) > 3  # the modules were walked, not an empty list
    assert strays(classes, ROOTS[package]) == []


def test_the_sip_stacks_errors_are_sip_errors() -> None:
    assert strays(exception_classes("telephony.sip"), SipError) == []


def test_a_stray_root_is_named() -> None:
    class Stray(ValueError):
        pass

    class Rooted(TelephonyError, ValueError):
        pass

    assert strays([Stray, Rooted], TelephonyError) == [qualified(Stray)]


def test_a_rooted_error_is_still_caught_by_its_builtin_base() -> None:
    from telephony.rtp_packet import parse

    with pytest.raises(ValueError, match="shorter than an RTP header") as caught:
        parse(b"xx")
    assert isinstance(caught.value, TelephonyError)
