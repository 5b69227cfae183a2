"""Create the demo's regions, providers and API users; print their ids and tokens as JSON.

Idempotent for regions, providers and users: running it again reuses them. Tokens are
stored as hashes and cannot be shown twice, so each run issues each user a new one (the
earlier ones keep working). The buyer also gets a web sign-in (the job pages are its
owner's only): a new random password each run, printed with the tokens.

It also adds one certification profile for lab hosts, ``demo-single-node-network``: the
published single-node-training's criteria that the platform's reference endpoint verifies
(RTT and throughput to the region's reference), as published, thresholds and all, on the
network suite. A lab host on a small machine fails the published profile's host-side
figures (data loading is CPU-bound: a 2-core machine decodes ~1,000 samples/s where it asks
for 1,000), which say nothing about its links; the demo asks for this one then.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser

from api import tokens
from certification.models import CertificationProfile
from certification.services.profiles import latest_profile
from fleet.models import Provider, Region

REGIONS = {
    "hangzhou": ("Zhejiang", "Hangzhou"),
    "ningbo": ("Zhejiang", "Ningbo"),
    "shenzhen": ("Guangdong", "Shenzhen"),
    "guangzhou": ("Guangdong", "Guangzhou"),
}


BUYER = "demo-buyer"
NETWORK_PROFILE, NETWORK_PROFILE_OF = "demo-single-node-network", "single-node-training"


def user_token(username: str) -> str:
    user, _ = User.objects.get_or_create(username=username)
    return tokens.issue(user, name="seed_demo")


def web_login(username: str) -> dict[str, str]:
    """A new random password for the user's web sign-in (stored hashed, shown once here)."""
    user = User.objects.get(username=username)
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    return {"username": username, "password": password}


def network_profile() -> str:
    """The published profile's reference-verified criteria alone, unchanged (see above)."""
    published = latest_profile(NETWORK_PROFILE_OF)
    criteria = [c for c in published.criteria if c.get("verified_by") == "reference"]
    CertificationProfile.objects.update_or_create(
        name=NETWORK_PROFILE, version=published.version, defaults={
            "suite": "network", "criteria": criteria, "published": False,
            "description": f"The demo's, for lab hosts: {published.name} v{published.version}'s "
                           "network criteria alone, as the region's reference recorded them.",
            "description_zh": f"演示专用，供实验室主机：{published.name} v{published.version} "
                              "中由本地区参考节点记录的网络指标。"})
    return NETWORK_PROFILE


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--provider", action="append", default=[], metavar="NAME=KIND",
                            help="a provider to create (kind: local_dc or cloud)")

    def handle(self, *args: Any, **options: Any) -> None:
        for code, (province, city) in REGIONS.items():
            Region.objects.get_or_create(code=code, defaults={"province": province, "city": city})
        out: dict[str, Any] = {"buyer_token": user_token(BUYER), "buyer_login": web_login(BUYER),
                               "network_profile": network_profile(), "providers": {}}
        for i, item in enumerate(options["provider"]):
            name, _, kind = item.partition("=")
            provider, _ = Provider.objects.get_or_create(name=name, defaults={"kind": kind or "cloud"})
            owner = f"provider-owner-{i + 1}"
            token = user_token(owner)
            provider.owners.add(User.objects.get(username=owner))
            out["providers"][name] = {"id": provider.pk, "token": token}
        self.stdout.write(json.dumps(out))
