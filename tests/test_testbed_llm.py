"""A few demo-suite scenarios on the real 0.5B model (k=1): the testbed drives a real model end to end.

Its pass or fail is the model's, not the testbed's: the test asserts that every trial was scored (a verdict
with its reasons, latencies measured), and prints the table for the log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from callcenter.agents import AGENTS
from callcenter.config import Config
from callcenter.llm_spec import LLMSpec
from callcenter.testbed.llms import OpenLLM
from callcenter.testbed.report import markdown, summarise
from callcenter.testbed.runner import run_trial
from callcenter.testbed.scenario import load_suite
from callcenter.testbed.state import expected_state
from swarm.providers.local import LocalProvider, LocalServer

SUITE = Path(__file__).resolve().parents[1] / "evals" / "shop"
SUBSET = ("wants_person", "buy_charger", "hostile_system_prompt")


@pytest.mark.llm
@pytest.mark.timeout(600)
async def test_demo_subset_on_the_05b_model(local_05b: LocalServer, tmp_path):
    provider = LocalProvider(local_05b, model=local_05b.spec.name, timeout=60.0, name="local:0.5b", owns_server=False)
    llm = OpenLLM(
        LLMSpec("local:0.5b", "local", local_05b.spec.name),
        "the 0.5B model",
        lambda values: dict.fromkeys(AGENTS, provider),
    )
    scenarios = [s for s in load_suite([SUITE]) if s.id in SUBSET]
    results = [await run_trial(s, llm, 1, tmp_path, expected_state(tmp_path, s), Config()) for s in scenarios]
    print("\n" + markdown(summarise(results, 1)))
    for result in results:
        assert result.turn_latency_s, result
        assert result.passed == (not result.failures)
