"""Names on the node's own queue: the platform publishes them, the node worker serves them."""

from __future__ import annotations

# The one task a node worker runs: its argument is the run id; the spec comes from the
# claim over HTTPS, never from the broker (the message carries nothing to trust).
EXECUTE_RUN_TASK = "bench.execute_run"
