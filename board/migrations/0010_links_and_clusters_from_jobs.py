"""LinkResult and ClusterResult move from jobs to the board (#31) on their tables as they are
(db_table): the state changes, the database does not."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('fleet', '0015_reference_iperf3_public_key'),
        ('jobs', '0016_links_and_clusters_move_to_the_board'),
        ('leaderboard', '0009_trials_and_evidence_ladder'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='ClusterResult',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('key', models.TextField()),
                    ('size', models.PositiveIntegerField()),
                    ('gpu_model', models.CharField(blank=True, max_length=64)),
                    ('offer', models.BooleanField(default=False)),
                    ('ranked', models.BooleanField(default=False)),
                    ('profile', models.CharField(default='default', max_length=16)),
                    ('figures', models.JSONField(default=dict)),
                    ('slowest_link_gbps', models.FloatField(null=True)),
                    ('measured_at', models.DateTimeField()),
                    ('grade', models.CharField(default='host-reported', max_length=24)),
                    ('job', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='cluster', to='jobs.benchmarkjob')),
                    ('nodes', models.ManyToManyField(related_name='clusters', to='fleet.node')),
                    ('provider', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='fleet.provider')),
                    ('region', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='fleet.region')),
                ],
                options={
                    'db_table': 'jobs_clusterresult',
                    'indexes': [models.Index(fields=['size', 'gpu_model', 'measured_at'], name='jobs_cluste_size_1fd50f_idx')],
                },
            ),
            migrations.CreateModel(
                name='LinkResult',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('throughput_gbps', models.FloatField(null=True)),
                    ('sender_gbps', models.FloatField(null=True)),
                    ('receiver_gbps', models.FloatField(null=True)),
                    ('rtt_ms', models.FloatField(null=True)),
                    ('agreed', models.BooleanField(default=False)),
                    ('confirmed', models.BooleanField(default=False)),
                    ('ranked', models.BooleanField(default=False)),
                    ('profile', models.CharField(default='default', max_length=16)),
                    ('measured_at', models.DateTimeField()),
                    ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='links', to='jobs.benchmarkjob')),
                    ('source', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='links_out', to='fleet.node')),
                    ('target', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='links_in', to='fleet.node')),
                ],
                options={
                    'db_table': 'jobs_linkresult',
                    'indexes': [models.Index(fields=['source', 'target', 'measured_at'], name='jobs_linkre_source__8a8ada_idx')],
                    'constraints': [models.UniqueConstraint(fields=('job', 'source', 'target'), name='one_link_result_per_job_direction')],
                },
            ),
        ]),
    ]
