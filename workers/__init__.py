"""`benchctl` and what it runs, for its two users, in two packages: the host agent a provider
runs on each GPU host (workers.host) and the buyer's client (workers.buyer). No Django."""
