"""/estimate/, and the workload estimate wherever a page shows it: a buyer's job read from
the query string, the candidates ranked by board.estimate_board, and what each row shows
(the parts of a step, the bottleneck in words, the what-ifs), in the request's language.

The arithmetic is estimate.py's and the ranking estimate_board's; this module only reads the
form and shapes the answer for /estimate/ and the compare page's estimate rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import conditional_escape, escape, format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, gettext_lazy, ngettext
from django.utils.translation import gettext as _

from board import estimate, estimate_board, staging
from board.estimate import Workload
from board.estimate_board import Candidate, Selection
from board.models import ClusterResult
from board.ranking import EVIDENCE_CHOICES
from contract import outcomes
from contract.outcomes import Skipped
from fleet.models import Region
from web import charts, my_site, words
from web.page import best_of, cluster_name
from web.pages import verdict

MAX_JOB_NODES = 8  # the form's choice; the API takes more
MAX_GPUS_PER_NODE = 64  # as the API (api/estimate_serializers.py)
MAX_STEPS = 10**9
MAX_DATASET_GB = 1e7  # as the API (api/estimate_serializers.py)
DATA_USES = (staging.COPY_ONCE, staging.STREAM)
DEFAULT_PRESET, DEFAULT_STEPS = "gpt2-small", 10_000
PARTS = ("compute", "sync", "input", "checkpoint", "staging")  # staging: data at a site
PART_WORDS = {k: gettext_lazy(v) for k, v in outcomes.PARTS.items()}


class BadJob(ValueError):
    """The job in the query string is not one we can estimate. ``message``: in the page's
    language, the names in it kept as they are (translate="no")."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Job:
    workload: Workload
    region: str = ""
    rank_by: str = "cost"
    evidence: str = ""  # the board's class: measured figures unless "any" is asked for


# --- the form ------------------------------------------------------------------------------

def wants_estimate(query: Mapping[str, Any]) -> bool:
    return bool(query.get("preset") or query.get("steps"))


def job_from_query(query: Mapping[str, Any], nodes_key: str = "nodes", default_nodes: int = 1,
                   regions: Sequence[str] | None = None, reader: Any = None) -> Job:
    """The job a form asked for. ``nodes_key`` names the nodes-per-job field (the compare
    page's ``nodes`` lists node ids); ``reader``: the user whose sites the data may live at.
    Raises BadJob with a message in the page's language (Http404 for a site not theirs)."""
    name = str(query.get("preset", ""))
    if name not in estimate.presets():
        raise BadJob(_html(_("“%(value)s” is not a model we know: pick one of %(known)s."),
                           value=no_translate(name[:40]),
                           known=no_translate(", ".join(sorted(estimate.presets())))))
    steps = whole(query, "steps", _("Steps"), 1, MAX_STEPS, None)
    nodes = whole(query, nodes_key, _("Nodes per job"), 1, MAX_JOB_NODES, default_nodes)
    gpus = whole(query, "gpus_per_node", _("GPUs per node"), 1, MAX_GPUS_PER_NODE, 1)
    rank_by = str(query.get("rank_by") or "cost")
    if rank_by not in estimate_board.RANK_BY:
        raise BadJob(_html(_("Rank by cost or by time, not “%(value)s”."),
                           value=no_translate(rank_by[:40])))
    region = str(query.get("region") or "")
    if region and regions is not None and region not in regions:
        raise BadJob(_html(_("“%(value)s” is not a region on the board."),
                           value=no_translate(region[:40])))
    evidence = str(query.get("evidence") or "")
    if evidence not in ("", *EVIDENCE_CHOICES):
        raise BadJob(_html(_("Evidence is verified, measured or any, not “%(value)s”."),
                           value=no_translate(evidence[:40])))
    # A CPU-only job, asked for explicitly: a GPU job never takes a CPU's figure (#32).
    cpu_only = str(query.get("cpu_only") or "") in ("1", "on", "true")
    return Job(estimate.from_preset(name, steps=steps, nodes=nodes, gpus_per_node=gpus,
                                    cpu_only=cpu_only, **data_fields(query, reader)),
               region, rank_by, evidence)


def data_fields(query: Mapping[str, Any], reader: Any) -> dict[str, Any]:
    """The job's data as Workload fields: its size, the reader's own site it lives at (none:
    on the node) and whether the job copies it once or streams it (board/staging.py)."""
    gb = amount(query, "dataset_gb", _("Data set size"), MAX_DATASET_GB)
    use = str(query.get("data_use") or staging.COPY_ONCE)
    if use not in DATA_USES:
        raise BadJob(_html(_("The data is copied once (copy-once) or streamed (stream), not "
                             "“%(value)s”."), value=no_translate(use[:40])))
    site = my_site.own(reader, query.get("data_site"))  # another buyer's: a 404, as the API
    if site is None:
        return {"dataset_gb": gb, "data_use": use}
    if not gb:
        raise BadJob(_html(_("Give the data set's size to estimate moving it from your site "
                             "%(site)s."), site=no_translate(site.name)))
    return {"dataset_gb": gb, "data_use": use, "data_site": site.pk, "data_site_name": site.name,
            "data_site_city": site.city}


def amount(query: Mapping[str, Any], key: str, label: str, high: float) -> float:
    """A number from 0 to ``high`` (0 when the field is empty)."""
    raw = str(query.get(key) or "").strip().replace(",", "")
    if not raw:
        return 0.0
    try:
        value = float(raw) if raw.isascii() and len(raw) <= 24 else -1.0
    except ValueError:
        value = -1.0
    if not 0 <= value <= high:  # NaN fails both sides
        raise BadJob(_html(_("%(field)s must be a number from 0 to %(high)s (you gave "
                             "“%(value)s”)."), field=label, high=charts.number(high),
                           value=no_translate(raw[:40])))
    return value


def whole(query: Mapping[str, Any], key: str, label: str, low: int, high: int,
          default: int | None) -> int:
    raw = str(query.get(key) or "").strip().replace(",", "")
    if not raw and default is not None:
        return default
    # ASCII digits only (no sign, exponent, "²" or a 5,000-digit number int() refuses)
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 12) or not low <= int(raw) <= high:
        raise BadJob(_html(_("%(field)s must be a whole number from %(low)s to %(high)s (you "
                             "gave “%(value)s”)."), field=label, low=charts.number(low),
                           high=charts.number(high), value=no_translate(raw[:40])))
    return int(raw)


def region_choices() -> list[str]:
    """What the board's region select offers: provinces (lower case) and region codes."""
    places = Region.objects.values_list("province", "code")
    return sorted({p.lower() for p, _ in places} | {c for _, c in places})


def form(query: Mapping[str, Any], nodes_key: str = "nodes",
         sites: Sequence[Any] = ()) -> dict[str, Any]:
    """The job form's choices and the values it shows (the query's, else the defaults);
    ``sites``: the reader's own, where the job's data may live."""
    return {"presets": [{"name": n, "params": short_count(float(p["params"]))}
                        for n, p in estimate.presets().items()],
            "preset": str(query.get("preset") or DEFAULT_PRESET),
            "steps": str(query.get("steps") or DEFAULT_STEPS),
            "nodes": str(query.get(nodes_key) or ""), "nodes_key": nodes_key,
            "node_choices": range(1, MAX_JOB_NODES + 1),
            "gpus_per_node": str(query.get("gpus_per_node") or 1),
            "max_gpus": MAX_GPUS_PER_NODE, "region": str(query.get("region") or ""),
            "rank_by": str(query.get("rank_by") or "cost"),
            "cpu_only": str(query.get("cpu_only") or "") in ("1", "on", "true"),
            "sites": sites, "dataset_gb": str(query.get("dataset_gb") or ""),
            "data_site": str(query.get("data_site") or ""),
            "data_use": str(query.get("data_use") or staging.COPY_ONCE)}


# --- in words ------------------------------------------------------------------------------

def short_count(n: float) -> str:
    """355M, 6.7B: the way model sizes are named, the same in both languages."""
    return charts.number(n / 1e9) + "B" if n >= 1e9 else charts.number(n / 1e6) + "M"


def count_words(n: float) -> str:
    """A parameter count as a reader says it: 3.55 亿 in Chinese, 355 million in English."""
    if (get_language() or "").startswith("zh"):
        return (f"{charts.number(n / 1e8)} 亿" if n >= 1e8 else f"{charts.number(n / 1e4)} 万"
                if n >= 1e4 else charts.number(n))
    return (_("%(n)s billion") % {"n": charts.number(n / 1e9)} if n >= 1e9
            else _("%(n)s million") % {"n": charts.number(n / 1e6)} if n >= 1e6
            else charts.number(n))


def workload_facts(w: Workload, rank_by: str = "") -> list[tuple[str, SafeString]]:
    rows = [(_("Model"), format_html('<code translate="no">{}</code>', w.name)),
            (_("Parameters"), conditional_escape(count_words(w.params))),
            (_("Global batch"), conditional_escape(_("%(n)s samples per optimizer step") % {
                "n": charts.number(w.global_batch)})),
            (_("Ranks"), conditional_escape(_("%(ranks)s (%(shape)s)") % {
                "ranks": w.ranks, "shape": shape(w)})),
            (_("Steps"), conditional_escape(charts.number(w.steps))),
            (_("Precision"), format_html('<code translate="no">{}</code>', w.precision))]
    if w.data_site is not None:
        rows.append((_("Data set"), data_words(w)))
    if rank_by:
        rows.append((_("Ranked by"), conditional_escape(
            _("cost of the job") if rank_by == "cost" else _("time of the job"))))
    return rows


def data_words(w: Workload) -> SafeString:
    """450 GB at your site Hangzhou office, copied once before the job (or streamed)."""
    how = (_("copied to the node once, before the job") if w.data_use == staging.COPY_ONCE
           else _("streamed from there every step"))
    return _html(_("%(gb)s GB at your site %(site)s, %(how)s"), gb=charts.number(w.dataset_gb),
                 site=no_translate(w.data_site_name), how=how)


def shape(w: Workload) -> str:
    """2 nodes × 8 GPUs each."""
    return _("%(nodes)s × %(gpus)s") % {
        "nodes": ngettext("%(n)s node", "%(n)s nodes", w.nodes) % {"n": w.nodes},
        "gpus": ngettext("%(n)s GPU each", "%(n)s GPUs each", w.gpus_per_node) % {
            "n": w.gpus_per_node}}


def headline(w: Workload) -> SafeString:
    """The job in one line, for the compare page's estimate rows."""
    return _html(_("%(model)s, %(steps)s steps, %(shape)s"),
                 model=format_html('<code translate="no">{}</code>', w.name),
                 steps=charts.number(w.steps), shape=shape(w))


def listing(items: Sequence[str]) -> str:
    return ("、" if (get_language() or "").startswith("zh") else ", ").join(items)


def _html(template: str, **values: Any) -> SafeString:
    """A translated sentence with values, as markup: the sentence is escaped and so is every
    value that is not markup already (format_html's rule, for %-style messages)."""
    return mark_safe(escape(template) % {  # noqa: S308  (everything in it is escaped)
        k: conditional_escape(v) for k, v in values.items()})


def no_translate(text: str) -> SafeString:
    return format_html('<span translate="no">{}</span>', text)


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def reason(skipped: Skipped | None) -> SafeString:
    """Why a candidate has no estimate, worded from its code in the page's language (the
    API's and benchctl's words come from the same template), names and ids kept as they
    are."""
    if skipped is None:
        return SafeString("")
    shown = {"metric": lambda v: words.label(str(v)),
             "profile": lambda v: format_html('<code translate="no">{}</code>', v),
             "names": no_translate}
    template = conditional_escape(capitalised(_(outcomes.SKIPPED[skipped.code])))  # text, not markup
    if not skipped.values:
        return template
    return format_html(template, **{k: shown.get(k, str)(v) for k, v in skipped.values.items()})


# --- the rows ------------------------------------------------------------------------------

@dataclass
class Row:
    kind: str
    id: int
    name: str
    href: str
    provider: str
    region: str
    price: str
    on_cpu: bool
    rank: int = 0
    members: list[dict[str, Any]] = field(default_factory=list)
    step: str = "–"
    hours: str = "–"
    cost: str = "–"
    hours_value: float | None = None
    cost_value: float | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    by_hour: str = ""  # a multi-node job at its links' worst and best hours of the day
    unmeasured: str = ""  # the parts without a figure, in a sentence
    staging: str = ""  # the data's way from the buyer's site (contract.outcomes.STAGING)
    what_ifs: list[str] = field(default_factory=list)
    skipped: SafeString | str = ""
    evidence: str = ""  # the lowest rung of the figures the estimate stands on


def money(value: float | None) -> str:
    return charts.number(value) if value is not None else "–"


def parts(e: estimate.Estimate) -> list[dict[str, Any]]:
    """Each part of the step: its share (a stacked bar's segment) and seconds."""
    return [{"key": k, "label": str(PART_WORDS[k]), "share": 100 * e.shares.get(k, 0.0),
             "percent": f"{e.shares.get(k, 0.0):.0%}", "seconds": charts.number(e.parts[k])}
            for k in PARTS if e.parts.get(k)]


def row(c: Candidate, places: Mapping[str, Region], names: Mapping[int, str]) -> Row:
    place = places.get(c.region)
    out = Row(c.kind, c.id, names.get(c.id, c.name) if c.kind == "cluster" else c.name,
              reverse("node-page", args=[c.id]) if c.kind == "node" else "",
              c.provider, words.region(place.province, place.city) if place else c.region,
              charts.number(c.price_cny_month) if c.price_cny_month else "–", c.on_cpu,
              rank=c.rank, members=c.nodes if c.kind == "cluster" else [])
    e = c.estimate
    if e is None:
        out.skipped = reason(c.skipped)
        return out
    out.step, out.hours, out.cost = charts.number(e.step_s), charts.number(e.hours), money(e.cost_cny)
    out.hours_value, out.cost_value = e.hours, e.cost_cny
    out.evidence = c.evidence
    out.parts = parts(e)
    # The data's way from the site on a line of its own, worded from its code as the API
    # and benchctl word it; the bottleneck's sentence then goes without it.
    out.staging = outcomes.staging_words(e.staging, charts.number, _)
    data = estimate_board.estimate_data(e)
    out.summary = outcomes.summary(data | {"staging": {}}, charts.number, _) if out.staging \
        else data["summary"]
    out.by_hour = outcomes.by_hour({"by_hour": {k: {"hours": a.estimate.hours,
                                                    "hours_of_day": a.hours_of_day}
                                                for k, a in c.by_hour.items()}}, charts.number, _)
    if e.unmeasured:
        out.unmeasured = _("Not measured, counted as 0: %(parts)s") % {
            "parts": listing([str(PART_WORDS[p]) for p in e.unmeasured])}
    # Only a change that pays: a what-if that leaves the job at 95% of its hours or more
    # (4x accumulation on a compute-bound node) repeated the base figures in its column.
    out.what_ifs = [what_if(k, v, e.hours) for k, v in e.what_ifs.items()
                    if v.hours < e.hours * outcomes.WORTH_NAMING]
    return out


def what_if(name: str, e: estimate.Estimate, base_hours: float) -> str:
    what, hours = outcomes.what_if(name, _), charts.number(e.hours)
    saved = f"{1 - e.hours / base_hours:.0%}" if base_hours else ""
    if e.cost_cny is None:
        return _("%(what)s: %(hours)s h (%(saved)s less)") % {
            "what": what, "hours": hours, "saved": saved}
    return _("%(what)s: %(hours)s h, %(cost)s CNY (%(saved)s less)") % {
        "what": what, "hours": hours, "cost": charts.number(e.cost_cny), "saved": saved}


def rows(found: list[Candidate]) -> list[Row]:
    codes = {c.region for c in found}
    places = {r.code: r for r in Region.objects.filter(code__in=codes)}
    clusters = [c.id for c in found if c.kind == "cluster"]
    names = {r.pk: cluster_name(r) for r in ClusterResult.objects.filter(pk__in=clusters)
             .select_related("provider", "region")} if clusters else {}
    return [row(c, places, names) for c in found]


def ranked(job: Job) -> list[Row]:
    """The board's candidates for this job, estimated and ranked; the skipped ones last."""
    found = rows(estimate_board.rank(job.workload, Selection(region=job.region,
                                                             evidence=job.evidence), job.rank_by))
    link_clusters(found, job)
    return found


def link_clusters(found: list[Row], job: Job) -> None:
    """A cluster has no page of its own: its name opens the compare page with the best other
    cluster, this job's estimate in it."""
    ranked_clusters = [r for r in found if r.kind == "cluster" and r.rank]
    for r in ranked_clusters:
        other = next((o for o in ranked_clusters if o.id != r.id), None)
        if other is not None:
            r.href = compare_url(job, clusters=[r.id, other.id])


def compare_url(job: Job, nodes: Sequence[int] = (), clusters: Sequence[int] = ()) -> str:
    w = job.workload
    query: dict[str, str | int] = {k: ",".join(map(str, v)) for k, v in (
        ("nodes", nodes), ("clusters", clusters)) if v}
    query |= {"preset": w.name, "steps": w.steps, "job_nodes": w.nodes,
              "gpus_per_node": w.gpus_per_node}
    return reverse("compare-page") + "?" + urlencode(query)


# --- the compare page ----------------------------------------------------------------------

def compare_job(query: Mapping[str, Any], sizes: Sequence[int], reader: Any = None) -> Job:
    """The compare page's job: nodes per job from ``job_nodes``, else the clusters' size
    when they are all one size (a node alone: one)."""
    default = sizes[0] if sizes and len(set(sizes)) == 1 else 1
    return job_from_query(query, nodes_key="job_nodes", default_nodes=default, reader=reader)


def compare_rows(job: Job, node_ids: list[int], cluster_ids: list[int],
                 order: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """The compare page's "estimate for your job" rows: one cell per candidate, in the
    page's column order, the quickest and the cheapest marked."""
    found = estimate_board.rank(job.workload, Selection(nodes=tuple(node_ids),
                                                        clusters=tuple(cluster_ids),
                                                        evidence=job.evidence))
    by_key = {(r.kind, r.id): r for r in rows(found)}
    cells = [by_key.get(k) for k in order]
    quickest = best_of([c.hours_value if c else None for c in cells], higher=False)
    cheapest = best_of([c.cost_value if c else None for c in cells], higher=False)
    return {"headline": headline(job.workload), "cells": [
        {"row": c, "best_hours": i in quickest, "best_cost": i in cheapest}
        for i, c in enumerate(cells)]}


# --- the page ----------------------------------------------------------------------------

def estimate_page(request: HttpRequest) -> HttpResponse:
    """A buyer's own training job on every candidate of the board, cheapest or quickest
    first; the candidates without the figures it needs listed apart, with the reason."""
    problem, job, found, answer = "", None, [], None
    try:
        job = job_from_query(request.GET, regions=region_choices(), reader=request.user)
        found = ranked(job)
        answer = verdict.box(job.workload, Selection(region=job.region, evidence=job.evidence),
                             job.rank_by)
    except BadJob as exc:
        problem = exc.message
    return render(request, "web/estimate.html", {
        "problem": problem, "job": job, "rows": [r for r in found if r.rank],
        "skipped": [r for r in found if not r.rank],
        "facts": workload_facts(job.workload, job.rank_by) if job else [],
        "job_form": form(request.GET, sites=my_site.choices(request)), "verdict": answer,
        "no_change_pays": _("No change tried here (4x gradient accumulation, packed data, a "
                            "faster link) would cut the job by %(share)s or more.") % {
            "share": f"{1 - outcomes.WORTH_NAMING:.0%}"},
        "regions": Region.objects.order_by("province", "city"),
        "provinces": sorted(set(Region.objects.values_list("province", flat=True))),
    }, status=400 if problem else 200)

