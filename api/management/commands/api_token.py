"""Issue a user an API token (printed once), list a user's tokens, or revoke one.

    manage.py api_token alice                 # a new token for alice, printed once
    manage.py api_token alice --create-user   # create alice first if she does not exist
    manage.py api_token alice --list          # prefixes and names, never the tokens
    manage.py api_token alice --revoke ut_AbC1
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from api import tokens
from api.models import ApiToken


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for")
        parser.add_argument("--create-user", action="store_true")
        parser.add_argument("--list", action="store_true")
        parser.add_argument("--revoke", metavar="PREFIX")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        if options["create_user"]:
            User.objects.get_or_create(username=username)
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}; add --create-user to create one")
        if options["list"]:
            for token in ApiToken.objects.filter(user=user).order_by("created_at"):
                self.stdout.write(f"{token.prefix}...  {token.created_at:%Y-%m-%d %H:%M}  {token.name}")
            return
        if options["revoke"]:
            deleted, _ = ApiToken.objects.filter(user=user, prefix=options["revoke"][:tokens.SHOWN]).delete()
            if not deleted:
                raise CommandError(f"{username} has no token starting {options['revoke']!r}; "
                                   "see --list")
            self.stdout.write(f"revoked {deleted} token(s)")
            return
        self.stdout.write(tokens.issue(user, options["name"]))
