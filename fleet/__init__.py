"""Providers, regions, nodes, enrolment and node credentials."""
