"""Users' API tokens are stored as digests: a copy of the database holds no credential."""

from __future__ import annotations

import hashlib
import importlib
import json
from io import StringIO
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from rest_framework.test import APIClient

from api.models import ApiToken


def client(token: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api


def test_an_issued_token_works_and_only_its_digest_is_stored(db: Any) -> None:
    out = StringIO()
    call_command("api_token", "alice", "--create-user", "--name", "procurement", stdout=out)
    token = out.getvalue().strip()
    assert token.startswith("ut_") and len(token) > 40
    assert client(token).get("/api/v1/nodes").status_code == 200
    dump = json.dumps(list(ApiToken.objects.values()), default=str)
    assert token not in dump and hashlib.sha256(token.encode()).hexdigest() in dump
    assert client(token[:-1] + "x").get("/api/v1/nodes").status_code == 401
    listing = StringIO()
    call_command("api_token", "alice", "--list", stdout=listing)
    assert token[:8] in listing.getvalue() and token not in listing.getvalue()
    call_command("api_token", "alice", "--revoke", token[:8], stdout=StringIO())
    assert client(token).get("/api/v1/nodes").status_code == 401


def test_a_missing_user_gets_the_fix(db: Any) -> None:
    with pytest.raises(CommandError, match="--create-user"):
        call_command("api_token", "nobody", stdout=StringIO())


def test_plain_drf_tokens_become_digests_that_keep_working(db: Any) -> None:
    # A database from before this change: DRF's authtoken table with the token in plain.
    user = User.objects.create(username="legacy")
    plain = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY,"
                       " created timestamptz NOT NULL, user_id integer NOT NULL)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, now(), %s)", [plain, user.pk])
    migration = importlib.import_module("api.migrations.0002_hash_existing_tokens")
    with connection.schema_editor() as editor:
        migration.hash_tokens(apps, editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone() == (0,)
    assert not ApiToken.objects.filter(key_hash=plain).exists()
    assert client(plain).get("/api/v1/nodes").status_code == 200
