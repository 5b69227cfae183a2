"""Guessing passwords: sign-in attempts are throttled per address and per account name."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture(autouse=True)
def fast_hasher(settings: Any) -> None:
    # Forty sign-ins with the production hasher take most of a minute; the throttle is
    # what is tested here, not the hash.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

def attempt(client: Client, url: str, username: str, address: str) -> Any:
    return client.post(url, {"username": username, "password": "wrong"}, REMOTE_ADDR=address)


def test_one_address_guessing_gets_429_with_retry_after(db: Any) -> None:
    User.objects.create_user("alice", password="right-horse-battery")
    client = Client()
    answers = [attempt(client, "/accounts/login/", f"user{i}", "198.51.100.7").status_code
               for i in range(10)]
    assert answers == [200] * 10  # the form again, with its error
    refused = attempt(client, "/accounts/login/", "alice", "198.51.100.7")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many sign-in attempts" in refused.content.decode()
    # The right password from that address waits too; another address is not held up.
    assert client.post("/accounts/login/", {"username": "alice", "password": "right-horse-battery"},
                       REMOTE_ADDR="198.51.100.7").status_code == 429
    assert client.post("/accounts/login/", {"username": "alice", "password": "right-horse-battery"},
                       REMOTE_ADDR="198.51.100.8").status_code == 302
    assert client.get("/accounts/login/", REMOTE_ADDR="198.51.100.7").status_code == 200


def test_many_addresses_guessing_one_account_are_stopped(db: Any) -> None:
    User.objects.create_superuser("admin", password="right-horse-battery")
    client = Client()
    answers = [attempt(client, "/admin/login/", "Admin", f"203.0.113.{i}").status_code
               for i in range(31)]
    assert answers[:30] == [200] * 30 and answers[30] == 429  # the admin's sign-in as well
