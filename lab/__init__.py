"""Processes the tests and the demo start: a private Redis with ACLs, iperf3 servers,
node workers, the platform. Everything started here is stopped by process group."""
