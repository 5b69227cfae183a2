"""What jobs tells the apps above it (board, certification), without importing them:
they connect in their AppConfig.ready()."""

from django.dispatch import Signal

# A run's result was stored, with ``run`` and ``samples`` (the stored Sample rows) and
# ``succeeded``. Sent inside the transaction that stores it: a projection written by a
# receiver (the board's latest values) commits or rolls back with the run itself.
run_stored = Signal()

# Every run of a job has finished; sent after commit with ``job_id`` and ``requested_by``
# (the run's requester: buyer, provider or platform). A single-node job costs no query.
job_finished = Signal()

# A result's inventory names GPU boards the node did not enrol with (``node``, ``reason``);
# sent after commit. What vouched for the old boards (certificates) no longer does.
hardware_changed = Signal()
