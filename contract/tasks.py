"""Names on the node's own queue: the platform publishes them, the node worker serves them."""

from __future__ import annotations

# The one task a node worker runs: its argument is the run id; the spec comes from the
# claim over HTTPS, never from the broker (the message carries nothing to trust).
EXECUTE_RUN_TASK = "bench.execute_run"

# The node's liveness key, under its own prefix (node:<id>:alive): its worker sets it every
# heartbeat over the broker connection it already has, and the platform's sweeper takes
# (deletes) every node's key in one pipelined pass. No HTTP request, no ORM write per beat.
LIVENESS_KEY = "alive"
