r"""Moved to harness/kamailio.py (shared with benchmarks/). This alias keeps `tests.kamailio` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.kamailio\|from kamailio import" tests benchmarks)."""
import sys

import harness.kamailio

sys.modules[__name__] = harness.kamailio
