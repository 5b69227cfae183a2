"""Benchmark requests, runs and attempts: dispatch, leases, sweeper, result intake."""
