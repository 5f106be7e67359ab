r"""Moved to harness/postgres.py (shared with benchmarks/). This alias keeps `tests.postgres` imports of branches still in
flight working; remove it once none is left (grep -rn "tests.postgres\|from postgres import" tests benchmarks)."""
import sys

import harness.postgres

sys.modules[__name__] = harness.postgres
