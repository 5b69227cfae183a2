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


def test_a_stolen_session_guessing_the_old_password_is_stopped(db: Any) -> None:
    # A password change asks for the old password: a stolen session cookie must not become
    # a guessing oracle for it (and so for the account's other sign-ins).
    User.objects.create_user("bob", password="right-horse-battery")
    User.objects.create_user("carol", password="right-horse-battery")
    thief = Client()
    thief.login(username="bob", password="right-horse-battery")
    answers = [thief.post("/en/accounts/password/", {
        "old_password": f"guess{i}", "new_password1": "x-New-9183-pass",
        "new_password2": "x-New-9183-pass"}, REMOTE_ADDR=f"203.0.113.{i}").status_code
        for i in range(31)]
    assert answers[:30] == [200] * 30 and answers[30] == 429
    # Counted per account: another person changing their own password is not held up.
    carol = Client()
    carol.login(username="carol", password="right-horse-battery")
    assert carol.post("/en/accounts/password/", {
        "old_password": "right-horse-battery", "new_password1": "x-New-9183-pass",
        "new_password2": "x-New-9183-pass"}, REMOTE_ADDR="203.0.113.99").status_code == 302
