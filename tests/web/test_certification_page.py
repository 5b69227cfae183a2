"""The certification page a buyer can trust (#34 item 5): the published profiles only, every
tier explained, a certificate's thresholds apart from the board's score targets, and the
signing key's fingerprint, the same one `benchctl trust add` prints.

Before: the demo's lab-only profile was listed beside the published ones, 部分适用 (the tier
the demo's node held) was not explained, the board's score targets (>= 100,000 IOPS) read
like thresholds, and no fingerprint was published to compare with."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.test import Client

from api.management.commands.seed_demo import network_profile
from certification.models import CertificationProfile
from certification.services import signing
from lab.procs import REPO


def row(html: str, metric: str) -> str:
    found = re.search(rf'<tr data-metric="{re.escape(metric)}">(.*?)</tr>', html, re.S)
    assert found, metric
    return found.group(1)


def test_a_labs_profile_stays_off_the_public_page_and_api(db: Any) -> None:
    lab = network_profile()  # what the demo seeds: the network criteria alone
    assert not CertificationProfile.objects.get(name=lab).published
    html = Client().get("/en/certification/").content.decode()
    assert "single-node-training v2" in html and lab not in html
    listed = {p["name"] for p in Client().get("/api/v1/certification-profiles").json()}
    assert "multi-node-training" in listed and lab not in listed


def test_every_tier_is_explained_and_thresholds_stand_apart_from_score_targets(db: Any) -> None:
    html = Client().get("/zh-hans/certification/").content.decode()
    tiers = re.findall(r'<tr data-tier="(\w+)">', html)
    assert tiers == ["gold", "silver", "bronze", "partial"]
    assert "部分适用" in html and "不授予奖牌" in html and "不低于 50%" in html
    # The IOPS criterion: 10,000 to be certified; 100,000 for the score's full points, in a
    # column of its own, under a heading that says which is which.
    iops = row(html, "storage.randread_iops")
    assert re.search(r'class="num threshold">≥ 10,000 IOPS<', iops), iops
    assert re.search(r'class="num muted target">≥ 100,000 IOPS<', iops), iops
    assert "认证阈值" in html and "评分目标（排行榜）" in html
    assert 'target">≤ 30%<' in row(html, "training.comm_share")  # the same bound in both
    # A criterion the score has no part for says so, instead of repeating the threshold.
    assert 'class="num muted target">–<' in row(html, "network.internode_throughput")


def test_the_published_fingerprint_is_the_one_benchctl_trust_add_prints(
        transactional_db: Any, live_server: Any, tmp_path: Path) -> None:
    html = Client().get("/en/certification/").content.decode()
    published = re.search(r'id="key-fingerprint">([0-9a-f:]+)<', html)
    assert published and published.group(1) == signing.fingerprint()
    assert "benchctl trust add http://testserver" in html
    added = subprocess.run([sys.executable, "-m", "workers.cli", "trust", "add", live_server.url],
                           cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                           env={"BENCH_TRUSTED_KEYS": str(tmp_path / "trusted.pem"),
                                "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
    assert added.returncode == 0, added.stderr
    assert f"fingerprint {published.group(1)}:" in added.stdout, added.stdout
