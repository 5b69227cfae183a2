# Certification moved into its own app (certification/): its three models leave the
# leaderboard's state here and enter certification's in certification/0001_initial. The
# tables stay where they are (the models keep their db_table): nothing is copied.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0006_certification_evaluating'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(name='CertificationRequest'),
            migrations.DeleteModel(name='Certificate'),
            migrations.DeleteModel(name='CertificationProfile'),
        ]),
    ]
