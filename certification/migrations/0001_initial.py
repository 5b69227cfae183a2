# The certification models, moved from the leaderboard app with their tables as they are
# (leaderboard/0007_certification_moves_out): state only, no database change.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('fleet', '0006_enrolled_nics_echo_log'),
        ('jobs', '0005_ranked_provenance_evidence'),
        ('leaderboard', '0007_certification_moves_out'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Certificate',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('profile', models.CharField(max_length=64)),
                    ('profile_version', models.PositiveIntegerField(default=1)),
                    ('tier', models.CharField(max_length=16)),
                    ('document', models.JSONField()),
                    ('signature', models.CharField(max_length=128)),
                    ('issued_at', models.DateTimeField()),
                    ('expires_at', models.DateTimeField()),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ('revoked_reason', models.CharField(blank=True, max_length=255)),
                    ('node', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='certificates', to='fleet.node')),
                    ('run', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='jobs.run')),
                ],
                options={
                    'db_table': 'leaderboard_certificate',
                    'indexes': [models.Index(fields=['node', 'expires_at'], name='leaderboard_node_id_a6a315_idx')],
                },
            ),
            migrations.CreateModel(
                name='CertificationProfile',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.SlugField()),
                    ('version', models.PositiveIntegerField()),
                    ('suite', models.CharField(max_length=32)),
                    ('description', models.TextField(blank=True)),
                    ('criteria', models.JSONField()),
                ],
                options={
                    'db_table': 'leaderboard_certificationprofile',
                    'constraints': [models.UniqueConstraint(fields=('name', 'version'), name='one_profile_version')],
                },
            ),
            migrations.CreateModel(
                name='CertificationRequest',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('status', models.CharField(choices=[('running', 'Running'), ('evaluating', 'Evaluating'), ('certified', 'Certified'), ('failed', 'Failed')], default='running', max_length=16)),
                    ('outcome', models.JSONField(blank=True, default=dict)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('certificate', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='request', to='certification.certificate')),
                    ('job', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='certification', to='jobs.benchmarkjob')),
                    ('node', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='certification_requests', to='fleet.node')),
                    ('profile', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, to='certification.certificationprofile')),
                ],
                options={
                    'db_table': 'leaderboard_certificationrequest',
                },
            ),
        ]),
    ]
