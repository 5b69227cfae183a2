"""Existing DRF tokens (plain text in authtoken_token) become hashed API tokens.

They keep working: the same token now matches its digest. The plain rows are then
deleted. The authtoken app is no longer installed, so its table is read with SQL, and
only where a database has it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import migrations


def hash_tokens(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if "authtoken_token" not in connection.introspection.table_names(cursor):
            return
        cursor.execute("SELECT key, user_id, created FROM authtoken_token")
        rows = cursor.fetchall()
        ApiToken = apps.get_model("api", "ApiToken")
        for key, user_id, created in rows:
            token = ApiToken.objects.create(user_id=user_id, name="migrated DRF token",
                                            prefix=key[:8],
                                            key_hash=hashlib.sha256(key.encode()).hexdigest())
            ApiToken.objects.filter(pk=token.pk).update(created_at=created)
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):
    dependencies = [("api", "0001_api_tokens")]
    operations = [migrations.RunPython(hash_tokens, migrations.RunPython.noop)]
