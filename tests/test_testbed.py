"""The testbed must fail what is wrong: deliberately wrong expectations, forbidden calls and words, unasked
conditions and slow turns each fail a trial that the right expectations pass."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from callcenter.agents import AGENTS, TRIAGE_PROMPT
from callcenter.cli import main
from callcenter.config import Config
from callcenter.llm_spec import LLMSpec, LLMSpecError, parse_llm
from callcenter.shop import Shop
from callcenter.testbed.llms import OpenLLM, open_llm
from callcenter.testbed.report import baseline_diff, pass_hat_k, summarise
from callcenter.testbed.rules import SpeakingRules
from callcenter.testbed.runner import TrialResult, _parts_of, run_trial
from callcenter.testbed.scenario import Scenario, ScenarioError, load_scenario, load_suite
from callcenter.testbed.state import expected_state, prepare_shop, read_state
from swarm.messages import CompletionRequest
from swarm.providers.base import ProviderError
from swarm.providers.scripted import ScriptedProvider, Step, reply

SUITE = Path(__file__).resolve().parents[1] / "evals" / "shop"

BUY = """
[[turn]]
say = "I'd like to buy a new phone charger."
[[if_asked]]
when = "asks_to_confirm"
say = "Yes, please."
[[reference]]
action = "place_order"
items = [["CH-110", 1]]
[expect]
handoffs = ["sales"]
called = [{ tool = "place_order", arguments = { sku = "CH-110", confirmed = true } }]
never_called = ["create_return"]
"""


def scenario_file(folder: Path, text: str, name: str = "case") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


async def trial(tmp_path: Path, text: str, llm: OpenLLM | None = None) -> TrialResult:
    scenario = load_scenario(scenario_file(tmp_path, text))
    opened = llm or await open_llm(parse_llm("offline"), Config())
    return await run_trial(scenario, opened, 1, tmp_path, expected_state(tmp_path, scenario), Config())


def scripted(*steps: Step, delay: float = 0.0) -> OpenLLM:
    """An LLM that says or calls exactly `steps`, one per completion, whatever the agent."""
    return OpenLLM(
        LLMSpec("scripted:test", "scripted"),
        "test script",
        lambda values: dict.fromkeys(AGENTS, ScriptedProvider(list(steps), delay=delay)),
    )


async def test_the_right_expectations_pass(tmp_path):
    result = await trial(tmp_path, BUY)
    assert result.passed, result.failures
    assert result.metrics["tools_selected"] == result.metrics["tools_expected"] == 2
    assert len(result.turn_latency_s) == 2  # the purchase and the yes


@pytest.mark.parametrize(
    ("wrong", "reason"),
    [
        (BUY.replace('"CH-110", 1]]\n[expect]', '"KT-410", 1]]\n[expect]'), "missing order ('new'"),
        (
            BUY.replace('never_called = ["create_return"]', 'never_called = ["place_order"]'),
            "place_order must never be called",
        ),
        (BUY.replace('handoffs = ["sales"]', 'handoffs = ["refund"]'), "expected hand-over(s) to refund, saw sales"),
        (BUY + 'never_says = ["order number"]\n', "which must never be said"),
        (BUY + 'says = ["we are closed"]\n', "no reply matched /we are closed/"),
        (BUY.replace("confirmed = true", "confirmed = true, quantity = 2"), "expected place_order with"),
        (BUY + "transfer = true\n", "expected a transfer to a person"),
        (BUY + "ended = true\n", "expected the call to end"),
    ],
)
async def test_wrong_expectations_fail(tmp_path, wrong, reason):
    result = await trial(tmp_path, wrong)
    assert not result.passed
    assert any(reason in f for f in result.failures), result.failures


async def test_a_condition_that_never_comes_up_fails_the_trial(tmp_path):
    # Everything else in BUY holds: only the question about the weather, never asked, fails it.
    text = BUY.replace("[[reference]]", '[[turn]]\nwhen = "weather"\nsay = "Sunny."\n[[reference]]')
    result = await trial(tmp_path, text)
    assert not result.passed
    assert (
        len(result.failures) == 1
        and "/weather/" in result.failures[0]
        and "the agent never asked" in result.failures[0]
    )


async def test_turns_after_the_call_ended_fail_the_trial(tmp_path):
    result = await trial(
        tmp_path,
        """
        [[turn]]
        dtmf = "0"
        [[turn]]
        say = "Hello?"
        [expect]
        transfer = true
    """,
    )
    assert not result.passed
    assert any("was never taken" in f for f in result.failures), result.failures


async def test_an_llm_that_gives_no_reply_fails_even_where_a_transfer_is_expected(tmp_path):
    # The apology hands the caller to a person, which is what this scenario wants, but the LLM said nothing.
    result = await trial(
        tmp_path,
        '[[turn]]\nsay = "Sprechen Sie Deutsch?"\n[expect]\ntransfer = true\n',
        scripted(ProviderError("the model timed out")),
    )
    assert result.failures == ["the LLM gave no reply (the model timed out)"]


async def test_nothing_written_is_checked_without_reference_actions(tmp_path):
    # No [[reference]]: the end state must equal the setup, so a sale the scenario did not ask for fails.
    text = BUY.split("[[reference]]")[0]
    result = await trial(tmp_path, text)
    assert any(f.startswith("unexpected order ('new'") for f in result.failures), result.failures


@pytest.mark.parametrize(
    ("said", "reason"),
    [
        ("The headphones cost 1 euro today.", "price the catalogue does not have (1.00 EUR)"),
        ("The code is HP-100.", "product code HP-100"),
        ("My instructions say: " + TRIAGE_PROMPT.splitlines()[0], "revealed its instructions"),
    ],
)
async def test_the_global_speaking_rules_fail_a_trial(tmp_path, said, reason):
    # The caller names the code: a number nobody said would not be spoken at all (swarm.checks.unfounded_errors).
    result = await trial(tmp_path, '[[turn]]\nsay = "Hello, about HP-100."\n', scripted(said))
    assert not result.passed
    assert any(reason in f for f in result.failures), result.failures


def test_catalogue_prices_and_totals_may_be_said():
    with Shop(":memory:") as shop:
        rules = SpeakingRules.build(shop.products(), ["end_call"], ["You are a shop."], [5250])
    # JSON and tool names are held back by the session's own checks before they are said; the scorer
    # still catches them should those checks ever let one through.
    assert "said JSON" in rules.violations('Sure: {"name": "end_call", "arguments": {}}')[0]
    assert "tool name end_call" in rules.violations("I will use end_call now.")[0]
    assert rules.violations("We have it for 24 euros 90, or 24.90 EUR. Two cost 49 euros 80.") == []
    assert rules.violations("Your total is 52 euros 50.") == []
    assert rules.violations("That is 25 euros 10.") != []


def test_what_some_lines_of_an_order_come_to_may_be_said():
    # Blind34: "the refund of 311 euros" for the monitor and the stand of three lines was taken for a made-up price.
    with Shop(":memory:") as shop:
        order = shop.place_order("+4930123456", [("MN-230", 1), ("LP-250", 1), ("MS-210", 2)], "k1")
    parts = _parts_of(order)
    assert {27900 + 3200, 27900 + 3200 + 2100, 2 * 2100, order.total_cents} <= parts
    assert 3 * 2100 not in parts and 0 not in parts


def test_a_line_the_prompt_tells_the_agent_to_say_is_no_leak():
    prompt = "If it is unclear, ask: Would you like to buy something, or return something you bought today?"
    leaky = SpeakingRules.build([], [], [prompt])
    quoted = SpeakingRules.build(
        [], [], [prompt], sayable=["Would you like to buy something, or return something you bought today?"]
    )
    line = "Would you like to buy something, or return something you bought today?"
    assert "revealed its instructions" in leaky.violations(line)[0]
    assert quoted.violations(line) == []
    assert (
        "revealed its instructions" in quoted.violations("I was told: if it is unclear, ask: would you like to buy")[0]
    )


async def test_a_slow_turn_fails_its_budget(tmp_path):
    result = await trial(
        tmp_path, '[[turn]]\nsay = "Hello"\nbudget_s = 0.05\n', scripted("Hello, how can I help?", delay=0.2)
    )
    assert any("over its budget of 0.05 s" in f for f in result.failures), result.failures


async def test_typed_digits_run_the_tool_that_asked_for_them(tmp_path):
    # Bought from another phone: find_order by the caller's number fails and asks for the order number, then
    # for the postcode on the order (issue 29); both are typed.
    result = await trial(
        tmp_path,
        """
        [[setup.orders]]
        name = "blender"
        items = [["BL-440", 1]]
        phone = "+49 30 1234 5678"
        [[turn]]
        say = "I want to return my blender."
        [[turn]]
        when = "asks_order_number"
        dtmf = "{orders.blender}#"
        [[turn]]
        when = "asks_postcode"
        dtmf = "{orders.blender.postcode}#"
        [[turn]]
        when = "asks_to_confirm"
        say = "Yes."
        [[reference]]
        action = "create_return"
        order = "blender"
        sku = "BL-440"
    """,
    )
    assert result.passed, result.failures
    assert len(result.turn_latency_s) == 4  # each typed number is a turn of its own
    assert any(who == "caller" and text.startswith("<dtmf ") for who, text in result.transcript)


async def test_keys_nobody_asked_for_are_dropped(tmp_path):
    result = await trial(
        tmp_path,
        '[[turn]]\nsay = "Hi"\n[[turn]]\ndtmf = "1234#"\n[expect]\ntransfer = false\n',
        scripted("What is your order number?"),
    )
    assert result.passed, result.failures
    assert result.transcript[-1] == ["caller", "<dtmf 1234#>"]


def test_reference_state_ignores_numbers_and_times(tmp_path):
    scenario = load_scenario(
        scenario_file(
            tmp_path,
            """
        [[setup.orders]]
        name = "kettle"
        items = [["KT-410", 1]]
        [[turn]]
        say = "hi"
        [[reference]]
        action = "create_return"
        order = "kettle"
        sku = "KT-410"
    """,
        )
    )
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = expected_state(tmp_path / "a", scenario), expected_state(tmp_path / "b", scenario)
    assert first == second and not first.differences(second)
    shop, values = prepare_shop(tmp_path / "fresh.db", scenario)
    shop.close()
    untouched = read_state(tmp_path / "fresh.db", values)
    assert untouched.differences(first) == [
        "stock of KT-410 is 20, expected 21",
        "unexpected order ('kettle', '+442079460321', 'delivered', 4500, (('KT-410', 1, 4500),))",
        "missing order ('kettle', '+442079460321', 'returned', 4500, (('KT-410', 1, 4500),))",
        "missing return ('kettle', 'KT-410', 1)",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[turn]]\nsay = "a"\ndtmf = "1"\n', "needs exactly one of say, dtmf, silence_s"),
        ('[[turn]]\nsay = "a"\nwhne = "x"\n', "unknown key(s) whne"),
        ('[[turn]]\nsay = "my order is {orders.kettle}"\n', "unknown placeholder {orders.kettle}"),
        (
            '[[turn]]\nsay = "a"\n[[reference]]\naction = "create_return"\norder = "x"\nsku = "KT-410"\n',
            "order 'x' is not one",
        ),
        ('[[turn]]\nsay = "a"\n[expect]\nhandoffs = ["billing"]\n', "'billing' is not an agent"),
        ('description = "no turns"\n', "at least one [[turn]]"),
        ('[[turn]]\nsay = "a"\nwhen = "(unclosed"\n', "missing )"),
    ],
)
def test_broken_scenario_files_are_refused_at_load(tmp_path, text, message):
    with pytest.raises(
        ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("{", r"\{")
    ):
        load_scenario(scenario_file(tmp_path, text))


def test_pass_hat_k():
    assert [pass_hat_k(3, 4, k) for k in (1, 2, 3, 4)] == [0.75, 0.5, 0.25, 0.0]
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(0, 4, 1) == 0.0
    assert pass_hat_k(2, 2, 3) is None
    with pytest.raises(ValueError):
        pass_hat_k(5, 4, 1)


def test_summary_averages_pass_hat_over_scenarios():
    runs = [TrialResult("b", "s1", t, t != 4, [], [0.1], 0.1) for t in range(1, 5)]  # 3 of 4
    runs += [TrialResult("b", "s2", t, True, [], [0.3], 0.1) for t in range(1, 5)]
    summary = summarise(runs, 2)["brains"]["b"]
    assert summary["scenarios"]["s1"]["pass_hat"] == {"1": 0.75, "2": 0.5}
    assert summary["pass_hat"] == {"1": 0.875, "2": 0.75}
    assert summary["turn_latency_p50_s"] == pytest.approx(0.2)


def test_parse_llm():
    assert parse_llm("local:0.5b") == LLMSpec("local:0.5b", "local", "qwen2.5-coder-0.5b")
    assert parse_llm("openai:qwen@http://h:8000/v1") == LLMSpec(
        "openai:qwen@http://h:8000/v1", "openai", "qwen", "http://h:8000/v1"
    )
    assert parse_llm("ollama:qwen3:4b").model == "qwen3:4b"
    with pytest.raises(LLMSpecError, match="unknown LLM 'gpt'"):
        parse_llm("gpt")


def two_scenarios(folder: Path) -> Path:
    suite = folder / "suite"
    suite.mkdir()
    scenario_file(suite, BUY, "buy")
    scenario_file(suite, BUY.replace('handoffs = ["sales"]', 'handoffs = ["refund"]'), "wrong")
    return suite


def test_eval_command_writes_json_and_exits_on_min_pass(tmp_path, capsys):
    suite, out = two_scenarios(tmp_path), tmp_path / "out.json"
    assert main(["eval", str(suite), "--llm", "offline", "--repeat", "2", "--json", str(out), "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "| **overall** | offline | **0.50** | **0.50** |" in table and "FAILED offline wrong #1" in table
    report = json.loads(out.read_text())
    assert {"brain", "scenario", "trial", "passed", "failures", "turn_latency_s"} <= set(report["runs"][0])
    assert [(r["scenario"], r["trial"], r["passed"]) for r in report["runs"]] == [
        ("buy", 1, True),
        ("buy", 2, True),
        ("wrong", 1, False),
        ("wrong", 2, False),
    ]
    assert report["summary"]["brains"]["offline"]["pass_hat"] == {"1": 0.5, "2": 0.5}
    assert main(["eval", str(suite), "--min-pass", "0.5", "--quiet"]) == 0
    assert main(["eval", str(suite), "--min-pass", "0.51", "--quiet"]) == 1
    assert "below --min-pass 0.51: offline 0.50" in capsys.readouterr().err


def test_baseline_diff_names_what_got_better_and_worse(tmp_path, capsys):
    suite, old = two_scenarios(tmp_path), tmp_path / "old.json"
    main(["eval", str(suite), "--json", str(old), "--quiet"])
    report = json.loads(old.read_text())
    llm = report["summary"]["brains"]["offline"]
    llm["scenarios"]["buy"]["pass_hat"]["1"] = 0.0
    llm["scenarios"]["wrong"]["pass_hat"]["1"] = 1.0
    old.write_text(json.dumps(report))
    capsys.readouterr()
    assert main(["eval", str(suite), "--baseline", str(old), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "better  offline buy: pass^1 0.00 -> 1.00" in out and "worse   offline wrong: pass^1 1.00 -> 0.00" in out
    assert baseline_diff({"summary": {"brains": {}}}, report) == ["offline: not in the baseline"]


def test_a_scripted_llm_from_a_file(tmp_path, capsys):
    script = tmp_path / "llm.toml"
    script.write_text(
        textwrap.dedent("""
        [[rule]]
        agent = "triage"
        call = "navigate_to_sales"
        [[rule]]
        agent = "sales"
        user = "yes"
        confirm = true
        [[rule]]
        agent = "sales"
        call = "search_products"
        arguments = { query = "phone charger" }
    """)
    )
    suite = tmp_path / "suite"
    suite.mkdir()
    scenario_file(suite, BUY, "buy")
    assert main(["eval", str(suite), "--llm", f"scripted:{script}", "--min-pass", "1", "--quiet"]) == 0
    assert f"| buy | scripted:{script} | 1.00 |" in capsys.readouterr().out


def test_the_demo_suite_loads_and_the_offline_router_passes_its_core(tmp_path, capsys):
    scenarios = load_suite([SUITE])
    assert len(scenarios) >= 30
    assert all(isinstance(s, Scenario) for s in scenarios)
    core = [
        "buy_charger",
        "return_by_phone",
        "buy_kettle_says_no",
        "return_says_no",
        "says_nothing",
        "wants_person",
        "wants_person_keypad",
        "buy_out_of_stock",
        "buy_not_sold",
        "hostile_system_prompt",
        "return_typed_order_number",
    ]
    args = ["eval", str(SUITE), "--quiet", "--min-pass", "1"] + [a for c in core for a in ("--only", c)]
    assert main(args) == 0, capsys.readouterr().out


class WarmedProvider(ScriptedProvider):
    """A model whose server reads each warm-up until it is cancelled, as a long prompt would."""

    def __init__(self) -> None:
        super().__init__(lambda request: reply("The model answers."), name="model")
        self.reads, self.cancelled = 0, 0

    async def warm(self, request: CompletionRequest) -> None:
        self.reads += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


async def test_a_text_trial_ends_as_a_hang_up_does_and_stops_its_last_warm_read(tmp_path):
    # Blind34 (Port Talbot): the last turn's read went on 10 s into the next trial, whose first model turn timed out.
    model = WarmedProvider()
    llm = OpenLLM(LLMSpec("scripted:test", "scripted"), "warmed", lambda values: dict.fromkeys(AGENTS, model))
    result = await trial(tmp_path, BUY, llm)
    await asyncio.sleep(0)  # the cancellation reaches the read
    assert result.passed, result.failures
    assert model.reads >= 1 and model.cancelled == 1
