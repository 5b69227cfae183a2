"""Issuing and checking users' API tokens (`Authorization: Token <token>`)."""

from __future__ import annotations

from django.contrib.auth.models import User

from api.models import ApiToken
from fleet.services import secrets

PREFIX = "ut_"  # a user token; secret scanners and people can tell it from a node key (nk_)
SHOWN = 8  # characters of the token kept in plain, to tell a user's tokens apart


def issue(user: User, name: str = "") -> str:
    """A new token for ``user``: returned once, stored as its digest."""
    token = PREFIX + secrets.new_secret()
    ApiToken.objects.create(user=user, name=name[:100], prefix=token[:SHOWN],
                            key_hash=secrets.digest(token))
    return token


def user_for(token: str) -> User | None:
    """The token's user, in one query (every procurement request makes it)."""
    return next(iter(User.objects.raw(
        "SELECT u.* FROM auth_user u JOIN api_apitoken t ON t.user_id = u.id"
        " WHERE t.key_hash = %s", [secrets.digest(token)])), None)
