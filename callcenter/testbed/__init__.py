"""The testbed: scenario files scored by the shop's end state and the call's events, over LLMs and trials.

`voiceswarm eval` runs suites (callcenter.commands.eval); `agent_under_test` (callcenter.testbed.fixture)
lets a call centre's own pytest tests talk to the agents. `TestCaller` (callcenter.testbed.dialer) calls the voice
server over SIP for `voiceswarm call`, the demo, the phone trials and the end-to-end tests.
"""

from callcenter.testbed.fixture import AgentUnderTest, agent_under_test
from callcenter.testbed.report import pass_hat_k, summarise
from callcenter.testbed.runner import TrialResult, run_trial
from callcenter.testbed.scenario import Scenario, ScenarioError, load_scenario, load_suite
from callcenter.testbed.textcall import Expect, TextCall, TurnResult

__all__ = [
    "AgentUnderTest",
    "Expect",
    "Scenario",
    "ScenarioError",
    "TextCall",
    "TrialResult",
    "TurnResult",
    "agent_under_test",
    "load_scenario",
    "load_suite",
    "pass_hat_k",
    "run_trial",
    "summarise",
]
