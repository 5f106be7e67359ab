"""pytest plugin: the `agent_under_test` fixture. Enable it in a conftest.py with

    pytest_plugins = ["callcenter.testbed.pytest_plugin"]

and write (with pytest-asyncio or anyio):

    async def test_kettle_return(agent_under_test):
        async with agent_under_test(orders={"kettle": [("KT-410", 1)]}) as s:
            r = await s.run("I want to return my kettle")
            r.expect.handoff("refund")
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from callcenter.testbed.fixture import agent_under_test as _agent_under_test


@pytest.fixture
def agent_under_test(tmp_path: Path) -> Callable[..., Any]:
    """`agent_under_test(llm="offline", *, providers=None, caller=..., orders=None, sold_out=())`: an async
    context manager giving the agents on a fresh shop in the test's tmp_path."""
    return functools.partial(_agent_under_test, folder=tmp_path)
