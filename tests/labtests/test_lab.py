"""A two-host lab with one shaped link: the platform's stored figures match the link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from certification.models import CertificationRequest
from certification.services import profiles, signing
from fleet.models import Provider, Region
from jobs.models import Run
from jobs.services import submission
from lab import netlab
from lab.procs import REPO, wait_for
from lab.stack import LabStack
from tests.labtests.labs import lab_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, tc)"),
]

RATE_MBIT = 200
DELAY_MS = 5.0


def two_host_lab(live_server: Any, private_redis: Any, provider: Provider, provider_owner: Any,
                 tmp_path: Path, rate_mbit: float, delay_ms: float) -> Iterator[LabStack]:
    yield from lab_of({"name": "t1", "hosts": [
        {"name": "n1", "kind": "node", "region": "hangzhou", "provider": provider.name,
         "rate_mbit": rate_mbit, "delay_ms": delay_ms},
        {"name": "ref", "kind": "reference", "region": "hangzhou"}]},
        live_server, private_redis, provider_owner, tmp_path)


@pytest.fixture
def lab(live_server: Any, private_redis: Any, provider: Provider, provider_owner: Any,
        hangzhou: Region, tmp_path: Path) -> Iterator[LabStack]:
    yield from two_host_lab(live_server, private_redis, provider, provider_owner, tmp_path,
                            RATE_MBIT, DELAY_MS)


def test_the_stored_throughput_and_tcp_rtt_match_the_shaped_link(lab: LabStack, buyer: Any) -> None:
    node = lab.nodes["n1"]
    job, _ = submission.submit(buyer.user, [node.node_id], "network",
                               {"iperf3_duration": 3, "iperf3_omit": 1, "repetitions": 2,
                                "max_repetitions": 2, "ping_count": 10})
    wait_for(lambda: Run.objects.get(job=job).status not in ("queued", "running"), 120,
             "the lab run", interval=0.5)
    run = Run.objects.get(job=job)
    assert run.status == "succeeded", run.error
    gbps = run.samples.get(metric="network.tcp_throughput").value
    rtt = run.samples.get(metric="network.tcp_rtt").value
    # The path's own round trip, as the reference times it, without the relay's delay; and
    # the relayed path the run was timed on, timed the same way just after. The relay's own
    # wake-ups are part of that path: 0.1 ms on a quiet machine, 0.61 ms once in CI's serial
    # part, so the stored figure is held to the relayed path, and the relayed path to the
    # delay it was asked to add. Each yardstick is the least median of three series: a busy
    # spell of the machine only lengthens a series (ci9's relayed read 6.92 ms beside a
    # stored 5.39, the relay 1.8 ms late for that one series), it never shortens one.
    base = min(lab.base_rtt("n1", "ref") for _ in range(3))
    relayed = min(lab.base_rtt("n1", "ref", relayed=True) for _ in range(3))
    rate = RATE_MBIT / 1000
    print(f"\nshaped {rate} Gbit/s: stored {gbps:.4f} Gbit/s (ratio {gbps / rate:.3f}); "
          f"added {DELAY_MS} ms to a {base:.3f} ms path (relayed {relayed:.3f} ms): "
          f"TCP RTT {rtt:.3f} ms")
    assert 0.95 * rate <= gbps <= 1.02 * rate
    assert relayed >= base + DELAY_MS - 0.05
    assert abs(rtt - relayed) <= max(0.5, 0.05 * DELAY_MS)
    # A relay that ran late by over a millisecond would measure the machine, not the path.
    assert relayed - (base + DELAY_MS) <= 1.0


def test_the_lab_leaves_nothing_behind(live_server: Any, private_redis: Any, tmp_path: Path) -> None:
    spec = netlab.LabSpec.from_dict({"name": "t2", "hosts": [{"name": "a", "rate_mbit": 100},
                                                              {"name": "b", "kind": "reference"}]})
    lab = netlab.NetLab(spec)
    lab.up()
    assert lab.ns("a") in netlab.namespaces()
    lab.down()
    assert not [n for n in netlab.namespaces() if n.startswith("bl-t2-")]
    assert not [link for link in netlab.root_links() if link.startswith("blt2")]


@pytest.fixture
def fast_lab(live_server: Any, private_redis: Any, provider: Provider, provider_owner: Any,
             hangzhou: Region, tmp_path: Path) -> Iterator[LabStack]:
    yield from two_host_lab(live_server, private_redis, provider, provider_owner, tmp_path,
                            2000, 1.0)


def test_a_lab_node_is_certified_end_to_end_and_its_certificate_verifies_offline(
        fast_lab: LabStack, provider_owner: Any, settings: Any, tmp_path: Path) -> None:
    settings.CERTIFICATION_JOB_PROFILE = "quick"
    settings.CERT_SIGNING_KEY_FILE = str(tmp_path / "key.pem")
    signing.private_key.cache_clear()
    profiles.load_profiles(REPO / "tests" / "data" / "certification" / "lab-profiles.yaml")
    node = fast_lab.nodes["n1"]
    response = provider_owner.client().post(f"/api/v1/nodes/{node.node_id}/certifications",
                                            {"profile": "lab-single-node"}, format="json")
    assert response.status_code == 202
    request_id = response.json()["id"]
    wait_for(lambda: CertificationRequest.objects.get(pk=request_id).status in ("certified", "failed"),
             400, "the certification run", interval=1)
    cert_request = CertificationRequest.objects.get(pk=request_id)
    assert cert_request.status == "certified", cert_request.outcome
    body = provider_owner.client().get(f"/api/v1/certificates/{cert_request.certificate_id}").json()
    throughput = next(c for c in body["document"]["criteria"] if c["metric"] == "network.tcp_throughput")
    assert throughput["source"].startswith("reference hangzhou:ref")  # its own iperf3 log
    assert "iperf3 server's log" in throughput["source"]
    rtt = next(c for c in body["document"]["criteria"] if c["metric"] == "network.tcp_rtt")
    assert "echo server sent and timed" in rtt["source"]  # the relayed 1 ms, as the reference paced it
    # Every criterion was measured (and verified): a medal, never "partial".
    assert body["document"]["not_measured"] == [], body["document"]
    assert body["document"]["tier"] in ("gold", "silver", "bronze"), body["document"]
    assert body["document"]["title"] == "certified: lab-single-node"
    print(f"\ncertified {body['document']['tier']}: " + ", ".join(
        f"{c['metric']}={c['value']}" for c in body["document"]["criteria"]))

    cert_file, pem = tmp_path / "cert.json", tmp_path / "platform.pem"
    cert_file.write_text(json.dumps(body))
    pem.write_bytes(signing.public_pem())
    verify = [sys.executable, "-m", "workers.cli", "verify", str(cert_file), "--public-key", str(pem),
              "--offline"]
    done = subprocess.run(verify, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("VALID"), done.stdout + done.stderr
    body["document"]["tier"] = "platinum"
    cert_file.write_text(json.dumps(body))
    done = subprocess.run(verify, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "signature does not match" in done.stdout
