r"""Moved to harness/certs.py (shared with benchmarks/). This alias keeps `tests.certs` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.certs\|from certs import" tests benchmarks)."""
import sys

import harness.certs

sys.modules[__name__] = harness.certs
