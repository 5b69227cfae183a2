# Each node's re-tests in the stability window read from the index alone (board.stability_board).
# Built concurrently: the re-tests table grows by 40,000 rows a day at 10,000 hosts, and a plain
# CREATE INDEX would hold its writers (the scheduler, every result) for the build.

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('fleet', '0017_record_generation'),
        ('jobs', '0019_samples_by_month'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='retest',
            index=models.Index(fields=['node', 'due_at'], include=('id', 'status'),
                               name='retest_node_due_covering'),
        ),
        RemoveIndexConcurrently(
            model_name='retest',
            name='jobs_retest_node_id_e7f09e_idx',
        ),
    ]
