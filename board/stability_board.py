"""Each node's stability figures from the platform's re-tests, read in three queries for any
number of nodes, and what a buyer is told about them.

A re-test's figure is its run's sample of the metric (the worst over its peers, as the board
takes it); a missed or refused re-test is an observation without a value. Its hour is the
hour it was due (the scheduler's clock), in the site's time zone.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _

from board import score
from board.diagnosis import Finding
from board.stability import (
    NOT_ENOUGH,
    VARIES,
    VARIES_BY_HOUR,
    Observation,
    Pause,
    Stability,
    judge,
    rules,
)
from contract import metrics
from contract.numbers import hour_spans
from fleet.models import Node, RetestPause
from fleet.services import identity
from jobs.models import Retest, Sample

# The figures whose stability tells shared from dedicated, and what sharing would mean.
WATCHED = {"network.tcp_throughput": "bandwidth", "network.tcp_rtt": "bandwidth",
           "storage.randread_iops": "storage"}
COUNTED = (Retest.Status.DONE, Retest.Status.MISSED)


def window(now: datetime | None = None) -> tuple[datetime, datetime]:
    now = now or timezone.now()
    return now - timedelta(days=settings.STABILITY_WINDOW_DAYS), now


def new_nodes(node_ids: Iterable[int], now: datetime | None = None,
              hosts: Mapping[int, list[int]] | None = None) -> set[int]:
    """The nodes whose host the platform has not re-tested for NEW_NODE_DAYS yet (its first
    done re-test, under any name it was enrolled as, is more recent, or there is none): a
    buyer reads their figures as a first impression, not a record. ``hosts``: the nodes'
    lineage where the caller has read it already."""
    ids = list(node_ids)
    hosts = hosts if hosts is not None else identity.lineage(ids)
    every = sorted({n for chain in hosts.values() for n in chain})
    since = (now or timezone.now()) - timedelta(days=settings.NEW_NODE_DAYS)
    # One probe of the (node, due_at) index a host, stopping at its first such re-test: the
    # earliest of every done re-test was 15 ms of a board page at 143 re-tests a host (#35).
    old = Retest.objects.filter(node_id=OuterRef("pk"), status=Retest.Status.DONE,
                                due_at__lte=since)
    known = set(Node.objects.filter(Exists(old), pk__in=every).values_list("pk", flat=True))
    return {n for n in ids if not any(h in known for h in hosts[n])}


def figures(node_ids: Iterable[int], wanted: Iterable[str], now: datetime | None = None,
            hosts: Mapping[int, list[int]] | None = None) -> dict[int, dict[str, Stability]]:
    """node -> metric -> its stability over the window (every node asked for, every metric).
    ``hosts``: the nodes' lineage where the caller has read it already.

    A node's figures are kept (``judged_from``) until the set of its re-tests in the window
    changes: a re-test settles, or the oldest one leaves the window. Judging every node of a
    page afresh, with its samples read, made a computed board page 260 ms in process at
    10,000 hosts re-tested 4 times a day (86 ms with them kept, #35), and at that size a
    page is computed every few seconds, each time a re-test settles."""
    ids, names = list(node_ids), list(wanted)
    start, end = window(now)
    # A host enrolled again under a new name keeps its record (fleet.services.identity).
    hosts = hosts if hosts is not None else identity.lineage(ids)
    every = sorted({n for chain in hosts.values() for n in chain})
    # Which re-tests each host has in the window, and nothing more: what names a kept
    # figure. Their hours and jobs are read for the nodes judged afresh only (2,700 times
    # is 20 ms of parsing dates on a page of 100 nodes re-tested 4 times a day).
    counted: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for host, pk, status in Retest.objects.filter(
            node_id__in=every, due_at__gte=start, due_at__lt=end,
            status__in=COUNTED).values_list("node_id", "id", "status"):
        counted[host].append((pk, status))
    pauses: dict[int, list[Pause]] = defaultdict(list)
    for p in RetestPause.objects.filter(node_id__in=every, end__gt=start, start__lt=end):
        pauses[p.node_id].append(Pause(timezone.localtime(max(p.start, start)),
                                       timezone.localtime(min(p.end, end))))
    mine = {n: sorted(x for h in hosts[n] for x in counted[h]) for n in ids}
    paused = {n: [x for h in hosts[n] for x in pauses[h]] for n in ids}
    out: dict[int, dict[str, Stability]] = {n: {} for n in ids}
    # Kept only where the re-tests alone decide: a pause's share of the window moves with
    # the window, and a node with no re-test is judged in no time.
    keys: dict[tuple[int, str], str] = {}
    for n in ids:
        if mine[n] and not paused[n]:
            digest = judged_from(mine[n])
            keys |= {(n, name): f"stability:{n}:{name}:{digest}" for name in names}
    found = cache.get_many(list(keys.values())) if keys else {}
    for (n, name), key in keys.items():
        if key in found:
            out[n][name] = found[key]
    todo = [n for n in ids if len(out[n]) < len(names)]
    # The hour and job of each re-test judged afresh; its status is the one its key names.
    due: dict[int, tuple[datetime, int | None]] = {
        pk: (at, job) for pk, at, job in Retest.objects.filter(
            pk__in=[pk for n in todo for pk, _status in mine[n]]).values_list(
                "id", "due_at", "job_id")} if todo else {}
    values: dict[tuple[int | None, str], list[float]] = defaultdict(list)
    jobs = [job for _at, job in due.values() if job]
    # A re-test's figures are written after it is due, so none is older than the window: the
    # bound lets PostgreSQL skip the samples table's older months (jobs.services.partitions).
    for row in Sample.objects.filter(run__job_id__in=jobs, metric__in=names,
                                     created_at__gte=start).values("run__job_id", "metric",
                                                                   "value") if jobs else ():
        values[(row["run__job_id"], row["metric"])].append(row["value"])
    # Converted once, not per node and metric: a board page asks for 100 nodes x 3 metrics.
    span = (timezone.localtime(start), timezone.localtime(end))
    judged: dict[str, Stability] = {}
    for node_id in todo:
        # (A re-test deleted between the two reads, with its node, is simply not there.)
        observed = [(status, timezone.localtime(due[pk][0]), due[pk][1])
                    for pk, status in mine[node_id] if pk in due]
        for name in names:
            better = metrics.METRICS[name].higher_is_better
            observations = []
            for status, at, job in observed:
                got = values.get((job, name), [])
                if status == Retest.Status.MISSED:
                    observations.append(Observation(at, None))
                elif got:  # a done re-test that did not measure this metric says nothing
                    worst = min(got) if better else max(got)
                    observations.append(Observation(at, worst))
            out[node_id][name] = judge(observations, better, paused[node_id], span)
            if (node_id, name) in keys:
                judged[keys[(node_id, name)]] = out[node_id][name]
    if judged:
        cache.set_many(judged, KEPT_SECONDS)
    return out


# A kept figure's key names everything it was judged from: a changed record is a new key,
# and an old one is never read again. A day bounds what old keys hold in the cache; a key
# still current after it is judged again.
KEPT_SECONDS = 24 * 3600


def judged_from(retests: Iterable[tuple[int, str]]) -> str:
    """What a kept figure was judged from, as a digest: these re-tests (id, status: a settled
    re-test's figures never change), under these rules, in this time zone, in this
    database."""
    text = repr((settings.DATABASES["default"].get("NAME"), settings.TIME_ZONE,
                 sorted(rules().items()), list(retests)))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def data(s: Stability) -> dict[str, Any]:
    return {"verdict": s.verdict, "retests": s.retests, "hours": s.hours, "missed": s.missed,
            "cv": s.cv, "hour_ratio": s.hour_ratio, "worst_hours": s.worst_hours,
            "by_hour": {f"{h:02d}": v for h, v in s.by_hour.items()},
            "paused_share": s.paused_share, "recurring_pause_hour": s.recurring_pause_hour}


def times(factor: float) -> str:
    """"3x" in English, "3 倍" in Chinese."""
    return _("%(n)sx") % {"n": f"{factor:.0f}"}


def finding(metric: str, s: Stability) -> Finding | None:
    """In words: "TCP throughput varies 38% across the day, lowest at 20:00-23:00: likely
    shared bandwidth"; "4 KiB random read IOPS varies 3x between re-tests: likely shared or
    network storage"."""
    if s.verdict not in (VARIES_BY_HOUR, VARIES) or metric not in WATCHED:
        return None
    spread = s.spread or 1.0
    amount = times(spread) if spread >= 2 else f"{1 - 1 / spread:.0%}"
    label = metrics.METRICS[metric].label
    storage = WATCHED[metric] == "storage"
    if s.verdict == VARIES_BY_HOUR:
        verdict = _("%(what)s varies %(amount)s across the day, worst at %(hours)s") % {
            "what": _(label), "amount": amount, "hours": hour_spans(s.worst_hours)}
    elif s.missed:
        verdict = _("%(what)s: the node missed or refused %(missed)s of its re-tests") % {
            "what": _(label), "missed": s.missed}
    else:
        between = s.value_spread or 1.0
        verdict = _("%(what)s varies %(amount)s between re-tests") % {
            "what": _(label), "amount": times(between) if between >= 2 else f"{s.cv or 0:.0%}"}
    verdict += _(": ") + (_("likely shared or network storage") if storage
                       else _("likely shared bandwidth"))
    advice = (_("ask the provider whether the disk is local and dedicated; keep hot data on "
                "local NVMe or tmpfs") if storage else
              _("ask the provider whether bandwidth is dedicated; schedule multi-node training "
                "away from the worst hours, or choose a node that is stable"))
    return Finding(f"unstable-{WATCHED[metric]}", verdict, advice)


def badge(s: Stability | None) -> str:
    """The board's word for it."""
    if s is None or s.verdict == NOT_ENOUGH:
        return _("not enough data")
    return {VARIES_BY_HOUR: _("varies by time of day"), VARIES: _("varies")}.get(
        s.verdict, _("stable"))


def score_figure(found: dict[str, Stability]) -> float | None:
    """The score's stability part: the worst hour's share of the best hour's over the watched
    figures that have a verdict (1 = the same at every hour). Weight 0 unless configured."""
    ratios = [s.hour_ratio for m, s in found.items()
              if m in WATCHED and s.verdict != NOT_ENOUGH and s.hour_ratio is not None]
    return min(ratios) if ratios else None


def scored(values: Mapping[str, float], found: dict[str, Stability]) -> dict[str, float]:
    """A node's values with the stability part the score reads, when an operator weights it:
    the board, the node's page and its report score a node alike."""
    out = dict(values)
    ratio = score_figure(found)
    if ratio is not None and score.weights().get("stability", 0) > 0:
        out[score.STABILITY] = ratio
    return out


@dataclass
class NodeStability:
    figures: dict[str, Stability]  # each watched metric
    pauses: list[RetestPause]  # the provider's pauses in the window, newest first
    paused_now: RetestPause | None


def of_node(node_id: int, now: datetime | None = None) -> NodeStability:
    """One node's watched figures and its pauses, for its page and its API."""
    now = now or timezone.now()
    start, _end = window(now)
    pauses = list(RetestPause.objects.filter(node_id=node_id, end__gt=start).order_by("-start"))
    return NodeStability(figures([node_id], WATCHED, now)[node_id], pauses,
                         next((p for p in pauses if p.start <= now < p.end), None))
