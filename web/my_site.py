""""From my site" on the board and the compare page: the signed-in buyer's site chosen with
``?site=ID`` and its figures (board.site_figures) beside each node, in words; the estimate's
site the job's data lives at (``own``). The owner's alone: another buyer's site, a missing
one, or any site for an anonymous reader is a 404, as the API answers, so a page never
tells whether someone else's site exists."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.http import Http404, HttpRequest
from django.utils.http import urlencode

from board import site_figures
from config.errors import NotFound
from jobs.models import Site
from jobs.services import site_probes
from web.page import figure


def chosen(request: HttpRequest, key: str = "site") -> Site | None:
    """The reader's own site named by ``key`` in the query; None when none is named."""
    return own(request.user, request.GET.get(key))


def own(reader: Any, raw: Any) -> Site | None:
    """The site of ``raw``'s id if it is the reader's own; None for no id."""
    text = str(raw or "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 12) or not isinstance(
            reader, User):
        raise Http404("no such site of yours")
    try:
        return site_probes.site_of(reader, int(text))
    except NotFound:
        raise Http404("no such site of yours") from None


def choices(request: HttpRequest) -> list[Site]:
    """The sites the reader may pick from (none for an anonymous reader)."""
    return list(site_probes.sites_of(request.user)) if isinstance(request.user, User) else []


def sort_of(query: Mapping[str, Any]) -> str:
    """One of site_figures.SORTS, else "" (the board's own order)."""
    sort = str(query.get("sort") or "")
    return sort if sort in site_figures.SORTS else ""


def cells(found: Mapping[str, Any] | None) -> dict[str, Any]:
    """A node's figures from the site as the tables show them; a node the site never probed
    says so (its figures are unknown, never 0)."""
    if found is None:
        return {"probed": False}
    return {"probed": True, "rtt": figure(found.get("rtt_ms")),
            "upload": figure(found.get("upload_gbps")),
            "download": figure(found.get("download_gbps")),
            "confirmed": bool(found.get("confirmed"))}


def beside(rows: list[dict[str, Any]], site: Site, node_of: Callable[[dict[str, Any]], int],
           sort: str = "") -> list[dict[str, Any]]:
    """Page rows with ``site`` cells from the site beside each, in ``sort`` order when given
    (site_figures.beside's, the unprobed nodes last); ``node_of(row)`` is a row's node id."""
    wrapped = site_figures.beside([{"node": {"id": node_of(r)}, "row": r} for r in rows], site,
                                  sort)
    return [w["row"] | {"site": cells(w["site"])} for w in wrapped]


def sort_links(query: Mapping[str, Any]) -> dict[str, str]:
    """Each "from my site" order as the page's query with its sort (the other choices kept)."""
    kept = {k: v for k, v in query.items() if k != "sort"}
    return {sort: "?" + urlencode(kept | {"sort": sort}) for sort in site_figures.SORTS}

