"""How many threads torch computes with on a host's CPU, where the host does not own its cores.

torch starts one intra-op thread per core. Where several of torch's processes share the
cores (the training probe's ranks, or the lab's hosts, which are namespaces of one machine:
lab.procs.NODE_WORKER_ENV), each would start as many, and every small parallel region would
wait on threads the other processes hold the cores from. BENCH_TORCH_THREADS names the count
a host may use; unset, the probe's own default stands.
"""

from __future__ import annotations

import os
from typing import Any

ENV = "BENCH_TORCH_THREADS"


def configured() -> int | None:
    """BENCH_TORCH_THREADS as a positive count, or None where it is unset or not one."""
    value = os.environ.get(ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def for_ranks(local_ranks: int) -> int:
    """Threads for each of ``local_ranks`` processes sharing this host's cores."""
    return configured() or max(1, (os.cpu_count() or 1) // local_ranks)


def apply(torch: Any) -> None:
    """torch's threads set to BENCH_TORCH_THREADS where it is set (a measurement on the CPU
    of a host that shares its cores); torch's own count otherwise."""
    threads = configured()
    if threads:
        torch.set_num_threads(threads)
