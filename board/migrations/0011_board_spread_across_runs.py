"""A board value's p5-p95 is now the spread of the runs it is the median of (#32), and the
newest run's own spread moves beside it (within_p5, within_p95); a GPU figure a CPU
measured is marked a stand-in (stand_in). Every board row is
recomputed from its runs, with the services of this release (board.latest), so no row
keeps a range its value lies outside of."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def recompute(apps: Any, schema_editor: Any) -> None:
    from board import latest
    from board.models import LatestResult

    touched: dict[tuple[int, str], set[str]] = {}
    for node_id, profile, metric in LatestResult.objects.values_list("node_id", "profile", "metric"):
        touched.setdefault((node_id, profile), set()).add(metric)
    for (node_id, profile), names in touched.items():
        latest.refresh(node_id, profile, names)


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0010_links_and_clusters_from_jobs'),
    ]

    operations = [
        migrations.AddField(
            model_name='latestresult',
            name='within_p5',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='latestresult',
            name='within_p95',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='latestresult',
            name='stand_in',
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(recompute, migrations.RunPython.noop),
    ]
