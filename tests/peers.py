r"""Moved to harness/peers.py (shared with benchmarks/). This alias keeps `tests.peers` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.peers\|from peers import" tests benchmarks)."""
import sys

import harness.peers

sys.modules[__name__] = harness.peers
