"""Which node tests which link when, in a multi-node job.

Rounds where each node is in at most one test, so two iperf3 tests never share a link.
Both sides compute the same schedule from the job's mesh (ordered by rank).
"""

from __future__ import annotations


def link_rounds(n: int) -> list[list[tuple[int, int]]]:
    """Ordered (client, server) pairs covering every link both ways, by the circle method
    of round-robin tournaments: 2(n-1) rounds for even n, 2n for odd."""
    if n < 2:
        return []
    ranks: list[int | None] = [*range(n), *([None] if n % 2 else [])]
    m = len(ranks)
    schedule: list[list[tuple[int, int]]] = []
    for _ in range(m - 1):
        pairs = [(ranks[i], ranks[m - 1 - i]) for i in range(m // 2)]
        real = [(a, b) for a, b in pairs if a is not None and b is not None]
        schedule.append(real)
        schedule.append([(b, a) for a, b in real])
        ranks = [ranks[0], ranks[-1], *ranks[1:-1]]
    return schedule
