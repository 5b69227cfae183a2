"""What every page shares: a figure as the tables show it, a metric's label and unit, the
winners of a row, each node's newest certificate, the link matrix, a node's address and a
cluster's name. Each page's own shapes live with its view, in web.pages.

Words come from web.words and are translated here, at request time; numbers are
formatted once (contract.numbers), the same in tables and charts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from board import clusters, links
from board.models import ClusterResult, LinkResult
from certification.models import Certificate
from contract import metrics
from web import charts, words

# The board's candidate columns (a node's own figures; links and clusters have views of
# their own). Only those with a figure among the rows shown appear; the ranked one first.
COLUMN_METRICS = ["network.tcp_throughput", "network.tcp_rtt", "storage.randread_iops",
                  "storage.checkpoint_write", "training.dataloader_samples_per_s",
                  "training.allreduce_busbw", "training.comm_share", "training.samples_per_s",
                  "training.gpu_util_mean"]


def figure(value: float | None, metric: str = "") -> str:
    """A value as the tables show it; a ratio as a percentage."""
    if value is None:
        return "–"
    if metric and metrics.METRICS.get(metric) and metrics.METRICS[metric].unit == "ratio" \
            and metric != "training.dataloader_gain":
        return f"{value:.0%}"
    return charts.number(value)


def unit_of(metric: str) -> str:
    if metric == clusters.SLOWEST_LINK:
        return "Gbit/s"
    known = metrics.METRICS.get(metric)
    if known and known.unit == "ratio" and metric != "training.dataloader_gain":
        return "%"
    return words.unit(metric)


def label_of(metric: str) -> str:
    return _("Slowest link") if metric == clusters.SLOWEST_LINK else words.label(metric)


def best_of(values: Sequence[float | None], higher: bool) -> set[int]:
    """Indexes of the best value; equal figures (as shown) share it: a tie is a tie, and
    when every figure is equal nobody is better."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(known) < 2:
        return set()
    top = (max if higher else min)(v for _, v in known)
    best = {i for i, v in known if charts.number(v) == charts.number(top)}
    return set() if len(best) == len(known) else best


def all_equal(values: Sequence[float | None]) -> bool:
    shown = {charts.number(v) for v in values if v is not None}
    return len(shown) == 1 and sum(v is not None for v in values) > 1


def newest_valid(node_ids: Iterable[int] | None = None, limit: int = 500) -> dict[int, Certificate]:
    """Each node's newest valid certificate (of these nodes, or of every node)."""
    found = Certificate.objects.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())
    if node_ids is not None:
        found = found.filter(node_id__in=list(node_ids))
    out: dict[int, Certificate] = {}
    for cert in found.select_related("node__provider", "node__region").order_by("-issued_at")[:limit]:
        out.setdefault(cert.node_id, cert)
    return out


def link_chart(found: list[LinkResult]) -> str:
    grid = links.matrix(found)
    return charts.link_matrix([n["name"] for n in grid["nodes"]], [
        charts.LinkCell(li["from_name"], li["to_name"], li["throughput_gbps"], li["rtt_ms"],
                        li["confirmed"], li["agreed"]) for li in grid["links"]],
        charts.MatrixWords(_("sender"), _("receiver"), _("confirmed by both ends"),
                           _("not confirmed by the receiver"),
                           _("both ends agree, but both are the provider's hosts")))


def node_url(node_id: int) -> str:
    return reverse("node-page", args=[node_id])


def cluster_name(result: ClusterResult) -> str:
    where = " · ".join(x for x in (
        result.provider.name if result.provider else _("mixed providers"),
        words.place(result.region.city) if result.region else _("mixed regions")) if x)
    model = result.gpu_model if result.gpu_model not in ("", "none") else "CPU"
    return f"{where} · {result.size} × {model}"

