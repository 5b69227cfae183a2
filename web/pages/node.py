"""A node's page: its figures with their evidence, their history, its score and diagnosis,
its stability, its certificate, its host's own inventory and its links."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from board import clusters, conditions, diagnosis, links, score, stability_board
from board.models import LatestResult
from board.ranking import (
    DEFAULT_METRIC,
    Filters,
    history,
    node_values,
    profile_for,
)
from contract import metrics
from fleet.models import Node
from web import charts, stability_page, words
from web.page import (
    figure,
    link_chart,
    unit_of,
)

HISTORY_METRICS = ["network.tcp_throughput", "network.tcp_rtt", "storage.randread_iops",
                   "storage.checkpoint_write", "training.allreduce_busbw", "training.step_time"]


def metric_rows(latest: QuerySet[LatestResult]) -> list[dict[str, Any]]:
    return [{"row": r, "label": words.label(r.metric) + (
                 " " + _("(a CPU's figure: no GPU measured)") if r.stand_in else ""),
             "about": words.about(r.metric),
             "metric": r.metric, "value": figure(r.value, r.metric), "unit": unit_of(r.metric),
             "spread": f"{figure(r.p5, r.metric)}–{figure(r.p95, r.metric)}" if r.p5 is not None else "",
             "within": f"{figure(r.within_p5, r.metric)}–{figure(r.within_p95, r.metric)}"
             if r.within_p5 is not None else "",
             "runs": f"{figure(r.run_min, r.metric)}–{figure(r.run_max, r.metric)}",
             "conditions": run_conditions(r)}
            for r in latest if r.metric in metrics.METRICS and not r.metric.startswith("noop.")]


def run_conditions(r: LatestResult) -> str:
    """How the runs it is made of were measured, where not all alone (board.beside)."""
    if r.shared:
        return _("measured beside other runs on its machine: none alone")
    if r.runs_apart:
        return ngettext("%(count)d run measured beside others on its machine left out",
                        "%(count)d runs measured beside others on its machine left out",
                        r.runs_apart) % {"count": r.runs_apart}
    return ""


def histories(node: Node, viewer: Any = None) -> list[dict[str, Any]]:
    out = []
    for name in HISTORY_METRICS:
        # In the site's time zone, as the tables show dates.
        points = [(timezone.localtime(p["measured_at"]), p["value"])
                  for p in history(node, name, viewer=viewer) if p["measured_at"]]
        if points:
            out.append({"metric": name, "label": words.label(name), "svg": charts.line_chart(
                points, unit_of(name), words.label(name), _("date measured"),
                time_title=_("time measured on %(date)s"))})
    return out


def score_parts(values: Mapping[str, float]) -> list[dict[str, Any]]:
    """Each part of the score: its name, the figure it uses, the target, how near (0-100%)."""
    scored = score.score(values)
    got = scored.parts
    weight = score.weights()
    out = []
    for part in score.PARTS:
        metric = next((m for m in part.metrics if m in values), part.metrics[0])
        share = got.get(part.name)
        shown, target = score_figure(values.get(metric), metric), score_figure(part.target, metric)
        out.append({"label": _(part.label), "why": part.why, "metric": words.label(metric),
                    "value": shown, "target": ("≥ " if part.higher_is_better else "≤ ") + target,
                    # A ratio reads "94%" already: no unit beside it ("94% %" was doubled).
                    "unit": "" if target.endswith("%") else unit_of(metric),
                    "share": None if share is None else round(100 * share),
                    # Shown against its target, counted in no node's score (#32): the
                    # weight column says so in a dash, the note under the table in words.
                    "counted": part.name in scored.counted,
                    "weight": charts.number(weight.get(part.name, 0)),
                    "weight_why": score.weight_why(part.name)})
    return out


def score_figure(value: float | None, metric: str) -> str:
    """As the tables show it; the stability part (a ratio the platform derives, not in the
    metric table) as a percentage, as its chart and the stability page read it."""
    if metric == score.STABILITY and value is not None:
        return f"{value:.0%}"
    return figure(value, metric)


def _gib(value: Any) -> str:
    return f"{charts.number(value / 2**30)} GiB" if isinstance(value, (int, float)) and value else "–"


def inventory(inv: Any) -> list[tuple[str, str]]:
    """The host's own description of itself, as label/value rows (it is a claim: the
    figures on the page are what was measured)."""
    if not isinstance(inv, dict) or not inv:
        return []
    rows: list[tuple[str, str]] = []
    gpu: dict[str, Any] = inv["gpu"] if isinstance(inv.get("gpu"), dict) else {}
    devices = [d for d in gpu.get("devices", []) if isinstance(d, dict)] if gpu.get("available") else []
    models: dict[str, int] = {}
    for d in devices:
        models[str(d.get("name"))] = models.get(str(d.get("name")), 0) + 1
    named = ", ".join(f"{n} × {m}" for m, n in models.items())
    if devices and gpu.get("declared"):  # a lab host standing for a GPU node: no NVML saw it
        rows.append((_("GPUs"), _("%(models)s (declared, not seen by NVML)") % {"models": named}))
    elif devices:
        rows.append((_("GPUs"), named))
        mem = devices[0].get("memory_bytes")
        rows.append((_("GPU memory (each)"), _gib(mem)))
        pcie = devices[0]
        if pcie.get("pcie_gen"):
            rows.append((_("PCIe link (now / max)"), f"Gen{pcie.get('pcie_gen')} x{pcie.get('pcie_width')}"
                         f" / Gen{pcie.get('pcie_gen_max')} x{pcie.get('pcie_width_max')}"))
        if devices[0].get("nvlinks") is not None:
            rows.append((_("NVLink links"), str(devices[0].get("nvlinks"))))
        rows.append((_("NVIDIA driver"), str(gpu.get("driver") or "–")))
        cuda = gpu.get("cuda_driver")
        # NVML gives the CUDA version the driver supports as 1000 * major + 10 * minor.
        version = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else "–"
        rows.append((_("CUDA (driver)"), version))
    else:
        rows.append((_("GPUs"), _("none (no NVIDIA GPU found)")))
    rows.append((_("CPU"), f"{inv.get('cpu_model', '–')} · {inv.get('cpu_cores', '–')} "
                 + _("cores")))
    rows.append((_("Memory"), _gib(inv.get("memory_bytes"))))
    nics = [n for n in inv.get("nics", []) if isinstance(n, dict) and n.get("name") != "lo"]
    if nics:
        rows.append((_("Network interfaces"), ", ".join(
            f"{n['name']} ({charts.number(n['speed_mbps'] / 1000)} Gbit/s)" if n.get("speed_mbps")
            else f"{n['name']} ({_('speed not reported')})" for n in nics)))
    disks = [d for d in inv.get("disks", []) if isinstance(d, dict)]
    if disks:
        rows.append((_("Disks"), ", ".join(
            f"{d.get('name')} {_gib(d.get('size_bytes'))} "
            f"{_('HDD') if d.get('rotational') else _('SSD/NVMe')}"
            + (f" ({d['model']})" if d.get("model") else "") for d in disks)))
    rows.append((_("Kernel"), str(inv.get("kernel", "–"))))
    rows.append((_("Python"), str(inv.get("python", "–"))))
    tools: dict[str, Any] = inv["tools"] if isinstance(inv.get("tools"), dict) else {}
    for tool, version in sorted(tools.items()):
        rows.append((str(tool), str(version) if version else _("not installed")))
    return rows



def node_page(request: HttpRequest, node_id: int) -> HttpResponse:
    node = get_object_or_404(Node.objects.select_related("provider", "region"), pk=node_id,
                             trial_of__isnull=True)
    profile = request.GET.get("profile") or profile_for(Filters(metric=DEFAULT_METRIC))
    # A node's own page diagnoses every figure it has, each marked with its evidence below;
    # it scores the measured ones only, as the board does.
    values = node_values([node.pk], profile, "any").get(node.pk, {})
    measured = node_values([node.pk], profile).get(node.pk, {})
    latest = LatestResult.objects.filter(node=node, profile=profile,
                                         evidence=LatestResult.ANY).order_by("metric")
    certificate = node.certificates.order_by("-issued_at").first()  # type: ignore[attr-defined]
    near = links.neighbourhood(node.pk, request.user)
    stable = stability_page.node_section(node)
    findings = (diagnosis.diagnose(values) + stability_page.findings(stable)
                + conditions.findings(conditions.of_newest_run(node.pk, profile)))
    # Scored as the board scores it. The score card shows the stability figure the chart
    # below is drawn from even where it is unweighted (the default): weight –, not counted,
    # rather than "not measured" beside a chart of its measurements.
    shown = dict(measured)
    hour_ratio = stability_board.score_figure(stable["figures"])
    if hour_ratio is not None:
        shown[score.STABILITY] = hour_ratio
    measured = stability_board.scored(measured, stable["figures"])
    return render(request, "web/node.html", {
        "node": node, "profile": profile, "latest": metric_rows(latest),
        "histories": histories(node, request.user), "score": score.score(measured),
        "score_parts": score_parts(shown), "findings": findings, "stability": stable,
        "certificate": certificate, "inventory": inventory(node.inventory),
        "link_chart": link_chart(near), "link_findings": clusters.link_findings(near),
    })

