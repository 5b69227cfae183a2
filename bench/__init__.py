"""Benchmarks of the platform itself and of its accuracy (`make bench`, `make bench-accuracy`)."""
