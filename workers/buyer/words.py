"""The words benchctl shows for the platform's names: a metric's label, its unit, its area.

The labels are the contract's (contract.metrics, contract.areas), the ones the web pages show,
with the same Chinese in benchctl's catalogue; a metric the contract does not know (a newer
platform's) shows as its id.
"""

from __future__ import annotations

from contract import areas, metrics
from workers.i18n import _

AREA_LABELS = {key: label for key, label, _test in areas.AREAS}


def label(metric: str) -> str:
    known = metrics.METRICS.get(metric)
    return _(known.label) if known else metric


def unit(symbol: str) -> str:
    """The unit as shown: symbols stay, the words among them are translated."""
    return _(metrics.UNIT_WORDS[symbol]) if symbol in metrics.UNIT_WORDS else symbol


def area(metric: str) -> str:
    return _(AREA_LABELS[areas.area_of(metric)])
