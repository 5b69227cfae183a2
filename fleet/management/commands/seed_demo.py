"""Create the demo's regions, providers, reference endpoints and API users; print their tokens.

Idempotent: running it again reuses what exists.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser
from rest_framework.authtoken.models import Token

from fleet.models import Provider, ReferenceEndpoint, Region

DEMO = [
    # region code, province, city, provider, kind
    ("hangzhou", "Zhejiang", "Hangzhou", "West Lake DC", Provider.Kind.LOCAL_DC),
    ("shenzhen", "Guangdong", "Shenzhen", "Pearl River Cloud", Provider.Kind.CLOUD),
]


def user_token(username: str) -> str:
    user, _ = User.objects.get_or_create(username=username)
    return Token.objects.get_or_create(user=user)[0].key


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--endpoint", action="append", default=[],
                            help="REGION=HOST:PORT of an iperf3 -s reference endpoint")

    def handle(self, *args: Any, **options: Any) -> None:
        endpoints = dict(e.split("=", 1) for e in options["endpoint"])
        out: dict[str, Any] = {"buyer_token": user_token("demo-buyer"), "providers": {}}
        for code, province, city, provider_name, kind in DEMO:
            region, _ = Region.objects.get_or_create(
                code=code, defaults={"province": province, "city": city})
            provider, _ = Provider.objects.get_or_create(name=provider_name,
                                                         defaults={"kind": kind})
            owner = f"owner-{code}"
            token = user_token(owner)
            provider.owners.add(User.objects.get(username=owner))
            if code in endpoints:
                host, port = endpoints[code].rsplit(":", 1)
                ReferenceEndpoint.objects.update_or_create(
                    region=region, name="ref1", defaults={"host": host, "iperf3_port": int(port)})
            out["providers"][code] = {"id": provider.pk, "name": provider.name, "token": token}
        self.stdout.write(json.dumps(out))
