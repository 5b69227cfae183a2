"""Create the demo's regions, providers and API users; print their ids and tokens as JSON.

Idempotent for regions, providers and users: running it again reuses them. Tokens are
stored as hashes and cannot be shown twice, so each run issues each user a new one (the
earlier ones keep working).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser

from api import tokens
from fleet.models import Provider, Region

REGIONS = {
    "hangzhou": ("Zhejiang", "Hangzhou"),
    "ningbo": ("Zhejiang", "Ningbo"),
    "shenzhen": ("Guangdong", "Shenzhen"),
    "guangzhou": ("Guangdong", "Guangzhou"),
}


def user_token(username: str) -> str:
    user, _ = User.objects.get_or_create(username=username)
    return tokens.issue(user, name="seed_demo")


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--provider", action="append", default=[], metavar="NAME=KIND",
                            help="a provider to create (kind: local_dc or cloud)")

    def handle(self, *args: Any, **options: Any) -> None:
        for code, (province, city) in REGIONS.items():
            Region.objects.get_or_create(code=code, defaults={"province": province, "city": city})
        out: dict[str, Any] = {"buyer_token": user_token("demo-buyer"), "providers": {}}
        for i, item in enumerate(options["provider"]):
            name, _, kind = item.partition("=")
            provider, _ = Provider.objects.get_or_create(name=name, defaults={"kind": kind or "cloud"})
            owner = f"provider-owner-{i + 1}"
            token = user_token(owner)
            provider.owners.add(User.objects.get(username=owner))
            out["providers"][name] = {"id": provider.pk, "token": token}
        self.stdout.write(json.dumps(out))
