"""The baseline for submission throughput: a minimal Django + DRF app that inserts one row
and enqueues one Celery task on commit, served the same way as the platform."""
