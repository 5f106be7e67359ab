r"""Moved to harness/fake_ollama.py (shared with benchmarks/). This alias keeps `tests.fake_ollama` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.fake_ollama\|from fake_ollama import" tests benchmarks)."""
import sys

import harness.fake_ollama

sys.modules[__name__] = harness.fake_ollama
