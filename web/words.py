"""The words the pages show for the platform's own names: places, provider kinds, run
states, evidence, metric labels and their explanations.

Marked here (gettext_noop) and translated when shown, in the request's language, so one
table serves both languages and the API keeps its stable English ids.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from contract import metrics

KINDS = {"local_dc": gettext_noop("local data centre"), "cloud": gettext_noop("cloud")}

STATES = {"queued": gettext_noop("queued"), "running": gettext_noop("running"),
          "succeeded": gettext_noop("succeeded"), "failed": gettext_noop("failed"),
          "cancelled": gettext_noop("cancelled")}

TIERS = {"gold": gettext_noop("gold"), "silver": gettext_noop("silver"),
         "bronze": gettext_noop("bronze"),
         # certified on the criteria that apply (a host without a GPU: its GPU ones do not)
         "partial": gettext_noop("partial")}

REQUESTERS = {"buyer": gettext_noop("buyer"), "provider": gettext_noop("provider"),
              "platform": gettext_noop("platform")}


def place(name: str) -> str:
    return _(name) if name else name


def region(province: str, city: str) -> str:
    return f"{place(province)} · {place(city)}"


def kind(code: str) -> str:
    return _(KINDS[code]) if code in KINDS else code


def state(code: str) -> str:
    return _(STATES[code]) if code in STATES else code


def tier(code: str) -> str:
    return _(TIERS[code]) if code in TIERS else code


EVIDENCE = {"platform-verified": gettext_noop(
    "the platform's reference endpoint recorded this test itself"),
    "buyer-measured": gettext_noop("measured by a buyer's trial agent on the node, which only "
                                   "that buyer holds"),
    "host-reported": gettext_noop("reported by the provider's host: the platform cannot vouch "
                                  "for it")}


def evidence(grade: str) -> str:
    """What an evidence grade means, for its badge's tooltip (the stored source is English
    text of the platform's and stays in the API)."""
    return _(EVIDENCE.get(grade, EVIDENCE["host-reported"]))


# Each grade's badge: its class in the style sheet and its name (anything else is the host's).
BADGES = {"platform-verified": ("verified", gettext_noop("platform-verified")),
          "buyer-measured": ("measured", gettext_noop("buyer-measured")),
          "host-reported": ("claimed", gettext_noop("host-reported"))}


def badge(grade: str) -> tuple[str, str]:
    """An evidence grade's badge: its class and its name in the page's language."""
    css, name = BADGES.get(grade, BADGES["host-reported"])
    return css, _(name)


def requester(codes: str) -> str:
    """Who asked for the runs behind a figure: one code, or several joined by commas (a
    board value pooled from the runs of several requesters)."""
    return _(", ").join(_(REQUESTERS[c]) if c in REQUESTERS else c for c in codes.split(","))


# Test profiles and suites by their Chinese (or plain English) names; the code stays in the
# API and the URL.
PROFILES = {"default": gettext_noop("standard"), "quick": gettext_noop("quick"),
            "retest": gettext_noop("re-test")}
SUITES = {"network": gettext_noop("network tests"), "storage": gettext_noop("storage tests"),
          "training": gettext_noop("training tests"), "gpu": gettext_noop("GPU tests"),
          "full": gettext_noop("full suite"), "retest": gettext_noop("re-test suite"),
          "noop": gettext_noop("no-op test")}


# The published certification profiles' titles (certification/profiles.yaml names them).
CERTIFICATION_PROFILES = {"single-node-training": gettext_noop("Single-node training"),
                          "multi-node-training": gettext_noop("Multi-node training")}


def certification_profile(name: str) -> str:
    return _(CERTIFICATION_PROFILES[name]) if name in CERTIFICATION_PROFILES else name


def profile(code: str) -> str:
    return _(PROFILES[code]) if code in PROFILES else code


def suite(code: str) -> str:
    return _(SUITES[code]) if code in SUITES else code


def peer(name: str, cities: dict[str, str]) -> str:
    """Whom a figure was measured towards: another node by its name, or the platform's
    reference of a region ("reference:REGION:NAME", contract/run_spec.py) by its city."""
    kind, _sep, rest = name.partition(":")
    if kind != "reference":
        return name
    code = rest.partition(":")[0]
    return _("the %(city)s reference") % {"city": place(cities.get(code, code))}


# Figures the platform derives itself (no host posts them, so they are not in the metric
# table that samples are checked against), named as the measured ones are.
DERIVED = {"stability.hour_ratio": gettext_noop("Worst hour against the best (re-tests)")}


def label(metric: str) -> str:
    known = metrics.label(metric, _)
    if known is not None:
        return known
    return _(DERIVED[metric]) if metric in DERIVED else metric


def about(metric: str) -> str:
    known = metrics.METRICS.get(metric)
    return _(known.about) if known and known.about else ""


def unit(metric: str) -> str:
    """The unit as shown: symbols stay, the words among them are translated."""
    known = metrics.METRICS.get(metric)
    return unit_word(known.unit) if known else ""


def unit_word(symbol: str) -> str:
    return metrics.unit_word(symbol, _)
