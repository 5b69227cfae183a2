"""The platform's own performance, not the nodes': how fast it dispatches, accepts and completes
runs and serves the board (`make bench`, against bare Celery and a minimal Django app measured
in the same run), and how accurately it reports links the lab shaped (`make bench-accuracy`).

The probes that benchmark a GPU node are in `benchmarks/`; nothing here runs on a host.
"""
