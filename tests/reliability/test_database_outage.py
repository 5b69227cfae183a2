"""PostgreSQL stops while the API serves: 503 with a message, nothing half-made, then it resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from lab import procs

pytestmark = pytest.mark.slow
PROVIDER = "West Lake DC"
# A generous wait: the suite runs this beside the demo on two cores, and each gunicorn worker's
# first request imports the URL conf and every view; what is asserted is the status, not speed.
WAIT = 60


@pytest.fixture
def platform_on_private_db(tmp_path: Path, private_redis: Any) -> Iterator[dict[str, Any]]:
    pg = procs.start_private_postgres()
    port = procs.free_port()
    env = {**os.environ, "DATABASE_URL": pg.url, "REDIS_URL": private_redis.admin_url,
           "NODE_BROKER_ACL": "true", "PUBLIC_API_URL": f"http://127.0.0.1:{port}",
           "DB_CONN_MAX_AGE": "60"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=procs.REPO, env=env,
                   check=True, capture_output=True)
    seed = subprocess.run([sys.executable, "manage.py", "seed_demo",
                           f"--provider={PROVIDER}=local_dc"], cwd=procs.REPO, env=env,
                          check=True, capture_output=True, text=True).stdout
    web = procs.start("web-private-db", [sys.executable, "-m", "gunicorn", "config.wsgi", "-b",
                                         f"127.0.0.1:{port}", "-w", "2"], tmp_path, env)
    url = f"http://127.0.0.1:{port}"
    procs.wait_for(lambda: _status(f"{url}/api/v1/health") == 200, 30, "gunicorn")
    yield {"url": url, "pg": pg, "seed": json.loads(seed), "web": web}
    web.stop()
    pg.remove()


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        return requests.get(url, headers=headers, timeout=WAIT).status_code
    except requests.RequestException:
        return 0


def test_requests_get_503_while_the_database_is_down_and_service_resumes(
        platform_on_private_db: dict[str, Any]) -> None:
    url, pg, seed = (platform_on_private_db[k] for k in ("url", "pg", "seed"))
    owner = {"Authorization": f"Token {seed['providers'][PROVIDER]['token']}"}
    buyer = {"Authorization": f"Token {seed['buyer_token']}"}
    token = requests.post(f"{url}/api/v1/providers/{seed['providers'][PROVIDER]['id']}"
                          "/enrolment-tokens", headers=owner, timeout=WAIT,
                          json={"region": "hangzhou", "node_name": "hz-1"}).json()["token"]
    node_id = requests.post(f"{url}/api/v1/enrol", json={"token": token},
                            timeout=WAIT).json()["node_id"]
    body = {"nodes": [node_id], "suite": "noop"}
    assert requests.post(f"{url}/api/v1/benchmarks", headers=buyer, json=body,
                         timeout=WAIT).status_code == 202

    pg.stop()
    for method, path in (("get", "/api/v1/benchmarks"), ("post", "/api/v1/benchmarks"),
                         ("get", "/api/v1/health"), ("get", "/")):
        response = requests.request(method, f"{url}{path}", headers=buyer, json=body, timeout=WAIT)
        assert response.status_code == 503, (path, response.text[:300])
        assert "database is unavailable" in response.json()["detail"]
        assert "Traceback" not in response.text

    pg.start()
    jobs = requests.get(f"{url}/api/v1/benchmarks", headers=buyer, timeout=WAIT)
    assert jobs.status_code == 200
    assert len(jobs.json()["results"]) == 1  # the POST made during the outage left nothing behind
    assert [len(j["runs"]) for j in jobs.json()["results"]] == [1]
    assert platform_on_private_db["web"].alive()
    assert requests.get(f"{url}/api/v1/health", timeout=WAIT).json()["status"] == "ok"
