"""Webhooks: a buyer's URL told of events (a job finished, a certificate issued or revoked)
instead of polling. Below jobs: jobs and certification emit into its outbox, it imports
neither (tests/deploy/test_layout.py)."""
