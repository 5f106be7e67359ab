r"""Moved to harness/speech_corpus.py (shared with benchmarks/). This alias keeps `tests.speech_corpus` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.speech_corpus\|from speech_corpus import" tests benchmarks)."""
import sys

import harness.speech_corpus

sys.modules[__name__] = harness.speech_corpus
