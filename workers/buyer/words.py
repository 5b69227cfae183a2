"""The words benchctl shows for the platform's names: a metric's label, its unit, its area.

The labels are the contract's (contract.metrics, contract.areas), the ones the web pages show,
with the same Chinese in benchctl's catalogue; a metric the contract does not know (a newer
platform's) shows as its id.
"""

from __future__ import annotations

from contract import areas, metrics
from contract.places import PLACES
from workers.i18n import _

AREA_LABELS = {key: label for key, label, _test in areas.AREAS}


def label(metric: str) -> str:
    return metrics.label(metric, _) or metric


def unit(symbol: str) -> str:
    return metrics.unit_word(symbol, _)


def area(metric: str) -> str:
    return _(AREA_LABELS[areas.area_of(metric)])


def region(where: str) -> str:
    """"Zhejiang/Hangzhou" (province/city, as enrolled) in the reader's language; a place
    the list does not hold shows as enrolled."""
    return "/".join(_(part) if part in PLACES else part for part in where.split("/"))
