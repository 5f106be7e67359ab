r"""Moved to harness/cluster.py (shared with benchmarks/). This alias keeps `tests.cluster` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.cluster\|from cluster import" tests benchmarks)."""
import sys

import harness.cluster

sys.modules[__name__] = harness.cluster
