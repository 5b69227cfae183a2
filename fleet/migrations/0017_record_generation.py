from django.db import migrations


class Migration(migrations.Migration):
    """The record's generation (fleet/services/generation.py): a sequence, not a row, so
    writers never wait on one another for it, and no rollback hands a number out again for
    other contents."""

    dependencies = [("fleet", "0016_node_gpu_model_upper")]

    operations = [
        migrations.RunSQL("CREATE SEQUENCE record_generation",
                          reverse_sql="DROP SEQUENCE record_generation"),
    ]
