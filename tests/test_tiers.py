"""The test tiers of tests/conftest.py: every module it names exists, and `-m` leaves out only whole modules it
deselects (so `make test-fast` imports no model runtime, and `-m llm` still finds the LLM tests)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests import conftest
from tests.conftest import MODEL_FIXTURES, MODULE_TIERS, PEER_FIXTURES, deselects_whole

FAST = "not peers and not models and not slow"


def test_every_tiered_module_exists() -> None:
    here = Path(__file__).parent
    assert [name for name in MODULE_TIERS if not (here / f"{name}.py").exists()] == []


def test_every_fixture_that_tiers_a_test_exists() -> None:
    """A renamed fixture would silently put its tests in the fast tier."""
    defined = {
        name for plugin in (conftest, *map(importlib.import_module, conftest.pytest_plugins)) for name in dir(plugin)
    }
    assert sorted((PEER_FIXTURES | MODEL_FIXTURES) - defined) == []


@pytest.mark.parametrize(
    ("expression", "tiers", "left_out"),
    [
        (FAST, ("models",), True),
        (FAST, ("peers", "models"), True),
        ("models", ("models",), False),
        ("not models", ("peers", "models"), True),
        ("llm", ("models",), False),  # some of its tests may carry llm
        ("not llm", ("models",), False),  # and some not
        ("slow and not peers", ("peers",), True),
        ("slow and not peers", ("models",), False),  # a test of it may be marked slow by hand
    ],
)
def test_a_module_is_left_out_only_when_no_test_of_it_can_be_selected(
    expression: str, tiers: tuple[str, ...], left_out: bool
) -> None:
    assert deselects_whole(expression, tiers) is left_out


def test_the_fast_tier_leaves_out_what_runs_models_peers_or_seconds() -> None:
    assert all(deselects_whole(FAST, tiers) for tiers in MODULE_TIERS.values())
