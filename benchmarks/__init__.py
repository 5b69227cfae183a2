"""Benchmark suites, runners and parsers for measurement tool output."""
