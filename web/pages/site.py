"""/sites/: the signed-in buyer's own sites and what `benchctl probe` measured from each to
the nodes it probed, with the command line that measures more. The owner's alone: another
buyer's site reads the same as a missing one (404)."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from board import site_figures
from config.errors import NotFound
from contract.site_probe import BOUNDS
from fleet.models import Node
from jobs.models import Site
from jobs.services import site_probes
from web import words


def probe_command(site: Site, probed: list[int]) -> str:
    """The line that measures more from this site: the active nodes it has not probed yet
    (as many as one request takes), else the ones it has, to measure them again. By id:
    a site's name may need quoting in the buyer's shell."""
    unprobed = list(Node.objects.filter(status=Node.Status.ACTIVE, trial_of__isnull=True)
                    .exclude(address="").exclude(pk__in=probed).order_by("pk")
                    .values_list("pk", flat=True)[:int(BOUNDS["nodes_per_request"])])
    nodes = unprobed or probed[:int(BOUNDS["nodes_per_request"])]
    return f"benchctl probe --site {site.pk} --nodes {','.join(map(str, nodes)) or 'ID'}"


def shown(site: Site) -> dict[str, Any]:
    rows = site_figures.figures(site)
    return {"site": site, "city": words.place(site.city), "figures": rows,
            "command": probe_command(site, [r["node"] for r in rows])}


# login_required: the user is a signed-in one (cast says so to mypy).
@login_required
def sites_page(request: HttpRequest) -> HttpResponse:
    return render(request, "web/sites.html", {
        "sites": [shown(s) for s in site_probes.sites_of(cast(User, request.user))], "one": False})


@login_required
def site_page(request: HttpRequest, site_id: int) -> HttpResponse:
    try:
        site = site_probes.site_of(cast(User, request.user), site_id)
    except NotFound:
        raise Http404("no such site of yours") from None
    return render(request, "web/sites.html", {"sites": [shown(site)], "one": True})
