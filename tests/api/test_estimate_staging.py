"""POST /api/v1/estimates with the data at the buyer's site: staged at what the buyer's own
probe from that site measured, unknown without one, and another buyer's site is no one's."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.services import site_probes
from tests.api.test_estimates import A100, post
from tests.fixtures import Actor, measured, trial_agent

pytestmark = pytest.mark.django_db
FIGURES = {"gpu.matmul_tflops_bf16": 200.0, "training.dataloader_samples_per_s": 1000.0,
           "storage.packedfile_read": 50_000.0}


def probed(buyer: Actor, site: Any, node: Any, gbps: float, rtt_ms: float) -> None:
    (issued,) = site_probes.issue(site, [node.pk])
    site_probes.claim(node, issued.token)
    site_probes.results(buyer.user, issued.probe.pk, {
        "rtts_ms": [rtt_ms], "upload_gbps": gbps, "download_gbps": gbps})


def test_the_data_at_a_site_is_copied_at_the_site_s_measured_throughput(
        enrol_node: Any, buyer: Actor, other_buyer: Actor) -> None:
    e = enrol_node("solo", inventory=A100, address="127.0.0.1")
    measured(buyer, trial_agent(buyer, e, inventory=A100), 5.0, extra=FIGURES)
    site = site_probes.create_site(buyer.user, "Hangzhou office", "Hangzhou")
    job = {"workload": {"preset": "resnet50", "steps": 1000, "dataset_gb": 450,
                        "data_at": "site", "site": site.pk}}
    (unknown,) = post(buyer, job).json()["results"]
    assert unknown["estimate"]["staging"]["code"] == "unknown"
    assert "staging" in unknown["estimate"]["unmeasured"]
    assert "unknown" in unknown["estimate"]["summary"]

    probed(buyer, site, e.node, gbps=1.0, rtt_ms=20.0)
    (row,) = post(buyer, job).json()["results"]
    staged = row["estimate"]["staging"]
    assert staged["code"] == "copy-once"
    assert staged["values"]["copy_hours"] == pytest.approx(450e9 * 8 / 1e9 / 3600)
    assert row["estimate"]["hours"] == pytest.approx(
        unknown["estimate"]["hours"] + staged["values"]["copy_hours"])
    assert "copying 450 GB from your Hangzhou office takes 1 h" in row["estimate"]["summary"]

    # Another buyer cannot estimate on this site's figures, nor learn it exists.
    assert post(other_buyer, job).status_code == 404
    # A site without data_at site, or data_at site without a site: 400.
    bad = {"workload": {"preset": "resnet50", "steps": 1000, "data_at": "site"}}
    assert post(buyer, bad).status_code == 400
