"""Nominal link classes, and what an honest link of each class measures.

Links are sold by nominal rate (1, 10, 25, 100 GbE...). TCP goodput over Ethernet is below
it: 1448 payload bytes of every 1514 a frame takes on the wire, and protocol overhead, so a
healthy 1 GbE link measures 0.94-0.96 Gbit/s and a 10 GbE one about 9.4-9.6. A rule stated
as ">= 1 Gbit/s" fails every honest 1 GbE host. Rules are stated in classes instead, with
the field's factor: nccl-tests reports a result as failing below 0.9 of the expected figure.
Certification, the score and the diagnosis all read these.
"""

from __future__ import annotations

ATTAINABLE = 0.9


def floor(nominal_gbps: float) -> float:
    """The least an honest link of this nominal class measures (Gbit/s)."""
    return nominal_gbps * ATTAINABLE


def reaches(measured_gbps: float, nominal_gbps: float) -> bool:
    return measured_gbps >= floor(nominal_gbps)
