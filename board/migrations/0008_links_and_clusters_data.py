"""Existing multi-node measurements move to the links and clusters they measured.

Nothing measured is lost: the samples stay as posted. Each multi-node job gets its node
count, its link results (the sender's view only: the receiver's own log was not kept
before) and its cluster result; node board rows built from link figures or from
multi-node training are recomputed from single-node figures alone.

It runs the services of this release (board.multi_node, board.latest)
on the schema this migration follows.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Count


def move(apps: Any, schema_editor: Any) -> None:
    from contract import metrics
    from jobs.models import BenchmarkJob
    from board import multi_node
    from board.models import LatestResult
    from board import latest

    multi = list(BenchmarkJob.objects.annotate(n=Count("runs")).filter(n__gt=1)
                 .values_list("pk", "n"))
    for job_id, n in multi:
        BenchmarkJob.objects.filter(pk=job_id).update(node_count=n)
        multi_node.record(job_id)
    touched = set(LatestResult.objects.filter(metric__in=metrics.LINK_METRICS)
                  .values_list("node_id", "profile", "metric"))
    touched |= set(LatestResult.objects.filter(
        metric__startswith=f"{metrics.CLUSTER_FAMILY}.",
        node__runs__job_id__in=[j for j, _ in multi]).values_list("node_id", "profile", "metric"))
    for node_id, profile, metric in touched:
        LatestResult.objects.filter(node_id=node_id, profile=profile, metric=metric).delete()
        latest.refresh(node_id, profile, {metric})


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0007_certification_moves_out"),
                    ("jobs", "0006_links_and_clusters")]
    operations = [migrations.RunPython(move, migrations.RunPython.noop)]
