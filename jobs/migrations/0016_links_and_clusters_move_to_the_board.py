"""LinkResult and ClusterResult are the board's now (#31): jobs writes runs and samples and
nothing of the board. The tables stay where they are (jobs_linkresult, jobs_clusterresult);
only the models' owner changes, so nothing is copied and a deployed database keeps its rows."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0015_run_fault'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='linkresult',
                name='job',
            ),
            migrations.RemoveField(
                model_name='linkresult',
                name='source',
            ),
            migrations.RemoveField(
                model_name='linkresult',
                name='target',
            ),
            migrations.DeleteModel(
                name='ClusterResult',
            ),
            migrations.DeleteModel(
                name='LinkResult',
            ),
        ]),
    ]
