"""Who sees what: the public sees ranked runs and the links of ranked jobs; an unranked run (a
custom workload, a suite that does not rank), a custom job and a job that mixes providers only
its owner. One place decides it, so no view can forget to: every public page and API asks here.

``viewer`` is the signed-in user (None or anonymous: the public; a user id for a background
caller acting for a job's owner); staff see everything.
``prefix`` is the path from the queried model to its run (``"run__"`` for samples) or, for
links and clusters, "" (they carry ``ranked`` and ``job`` themselves).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet

M = TypeVar("M", bound=Model)


def rule(viewer: Any = None, prefix: str = "") -> Q:
    """The filter: ranked, or the viewer's own job."""
    public = Q(**{f"{prefix}ranked": True})
    if isinstance(viewer, int):
        return public | Q(**{f"{prefix}job__owner_id": viewer})
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return public
    return public | Q(**{f"{prefix}job__owner": viewer})


def visible(rows: QuerySet[M], viewer: Any = None, prefix: str = "") -> QuerySet[M]:
    if viewer is not None and getattr(viewer, "is_staff", False):
        return rows
    return rows.filter(rule(viewer, prefix))
