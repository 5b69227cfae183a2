"""Providers create one-time tokens; hosts exchange them for their own credentials."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fleet.models import EnrolmentToken, Node
from fleet.services import secrets
from lab.procs import REPO


def create_token(owner: Any, provider: Any, name: str = "hz-1", region: str = "hangzhou") -> Any:
    return owner.client().post(f"/api/v1/providers/{provider.pk}/enrolment-tokens",
                               {"region": region, "node_name": name}, format="json")


def test_a_provider_gets_a_token_shown_once_and_stored_hashed(provider_owner: Any, provider: Any,
                                                               hangzhou: Any) -> None:
    response = create_token(provider_owner, provider)
    assert response.status_code == 201
    plain = response.json()["token"]
    stored = EnrolmentToken.objects.get()
    assert stored.token_hash == secrets.digest(plain)
    assert plain not in json.dumps(list(EnrolmentToken.objects.values()), default=str)


def test_only_the_providers_owners_can_create_tokens(buyer: Any, provider: Any, hangzhou: Any) -> None:
    assert create_token(buyer, provider).status_code == 404


def test_an_unknown_region_is_a_400_with_the_field(provider_owner: Any, provider: Any) -> None:
    response = create_token(provider_owner, provider, region="atlantis")
    assert response.status_code == 400
    assert "region" in response.json()["errors"]


def test_a_token_works_once(provider_owner: Any, provider: Any, hangzhou: Any, client: Any) -> None:
    token = create_token(provider_owner, provider).json()["token"]
    first = client.post("/api/v1/enrol", {"token": token}, content_type="application/json")
    assert first.status_code == 201
    assert first.json()["api_key"].startswith("nk_")
    second = client.post("/api/v1/enrol", {"token": token}, content_type="application/json")
    assert second.status_code == 409
    assert "already used" in second.json()["detail"]
    assert Node.objects.count() == 1


def test_an_unknown_token_is_a_404(client: Any, db: Any) -> None:
    response = client.post("/api/v1/enrol", {"token": "nope"}, content_type="application/json")
    assert response.status_code == 404


@pytest.mark.slow
def test_benchctl_enroll_saves_the_credentials_with_mode_0600(
        live_server: Any, provider_owner: Any, provider: Any, hangzhou: Any, tmp_path: Path) -> None:
    token = create_token(provider_owner, provider).json()["token"]
    config = tmp_path / "node.json"
    argv = [sys.executable, "-m", "workers.cli", "--config", str(config), "enroll",
            "--url", live_server.url, "--token", token]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    saved = json.loads(config.read_text())
    node = Node.objects.get()
    assert saved["node_id"] == node.pk and secrets.matches(saved["api_key"], node.key_hash)
    assert saved["broker_transport_options"]["global_keyprefix"] == f"node:{node.pk}:"

    again = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert again.returncode == 2
    assert "already used" in again.stderr and "Traceback" not in again.stderr


def test_secrets_never_start_with_a_dash_that_a_command_line_takes_for_an_option() -> None:
    # Without the redraw, about 31 of 2,000 URL-safe secrets would start with "-".
    assert not [s for s in (secrets.new_secret() for _ in range(2000)) if s.startswith("-")]
