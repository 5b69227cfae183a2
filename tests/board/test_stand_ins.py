"""GPU figures where a GPU is claimed (#32 item 4): a CPU's matmul stands in for no GPU's.

Before: nodes named A100 and H800 had a CPU's matmul (0.032 TFLOP/s "bf16") starred on the
board, and a GPT-2 small estimate of 3,380 hours on it. Now a GPU figure a CPU measured is
marked a stand-in: never ranked, starred, scored or taken as a GPU's by an estimate; a node
that enrolled a GPU without a GPU figure says "GPU not measured"; a CPU-only job is asked
for explicitly.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from board.models import LatestResult
from tests.api.test_estimates import A100
from tests.fixtures import measured, trial_agent
from workers.host import inventory as host_inventory

MATMUL = "gpu.matmul_tflops_bf16"
ON_CPU = {MATMUL: {"device": "cpu", "gpu": "skipped: no NVIDIA GPU"}}
CORE = {"network.tcp_rtt": 1.0, "storage.randread_iops": 100_000.0,
        "storage.randread_lat_mean": 320.0, "storage.checkpoint_write": 1.0}


def test_a_cpus_matmul_is_a_stand_in_never_ranked_or_starred(buyer: Any, enrol_node: Any) -> None:
    cpu, other = enrol_node("hz-cpu"), enrol_node("hz-other")
    measured(buyer, cpu, 9.0, extra={MATMUL: 0.032, **CORE}, metadata=ON_CPU)
    measured(buyer, other, 5.0, extra=CORE)
    row = LatestResult.objects.get(node=cpu.node, metric=MATMUL, evidence=LatestResult.ANY)
    assert row.stand_in and row.value == 0.032
    # Not on the matmul board: a CPU does not rank against GPUs.
    board = buyer.client().get(f"/api/v1/leaderboard?metric={MATMUL}&evidence=any").json()
    assert board["results"] == []
    # The node's own page keeps it, marked.
    page = Client().get(f"/en/nodes/{cpu.node.pk}/?profile=default").content.decode()
    assert "(a CPU&#x27;s figure: no GPU measured)" in page
    # No column for it, so no star, on the board that lists the node.
    html = Client().get("/en/?metric=network.tcp_throughput&evidence=any").content.decode()
    assert f'data-metric="{MATMUL}"' not in html


def test_a_gpu_job_never_takes_a_cpus_figure_and_a_cpu_only_job_does(
        buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-cpu")
    agent = trial_agent(buyer, node)
    measured(buyer, agent, 9.0, extra={MATMUL: 0.032, **CORE}, metadata=ON_CPU)
    job = {"preset": "gpt2-small", "steps": 1000}
    (gpu,) = buyer.client().post("/api/v1/estimates", {"workload": job}, format="json"
                                 ).json()["results"]
    assert gpu["estimate"] is None and gpu["skipped_code"] == "no-gpu"
    assert gpu["skipped_values"] == {"names": "hz-cpu"}
    (cpu,) = buyer.client().post("/api/v1/estimates", {"workload": job | {"cpu_only": True}},
                                 format="json").json()["results"]
    assert cpu["estimate"] is not None and cpu["on_cpu"] and cpu["rank"] == 1


def test_a_node_that_enrolled_a_gpu_without_a_gpu_figure_says_gpu_not_measured(
        buyer: Any, enrol_node: Any) -> None:
    gpu, cpu = enrol_node("hz-a100", inventory=A100), enrol_node("hz-cpu")
    for node in (gpu, cpu):
        measured(buyer, node, 9.0, extra={MATMUL: 0.032, **CORE}, metadata=ON_CPU)
    html = Client().get("/en/?metric=network.tcp_throughput&evidence=any").content.decode()
    a100_row = html[html.index('data-node="hz-a100"'):]
    assert "GPU not measured" in a100_row[:a100_row.index("</tr>")]
    compare = Client().get(f"/en/compare/?nodes={gpu.node.pk},{cpu.node.pk}").content.decode()
    gpu_row = compare[compare.index('<tr class="gpu">'):]
    assert "(GPU not measured)" in gpu_row[:gpu_row.index("</tr>")]
    assert "GPU 未测量" in Client().get(f"/zh-hans/compare/?nodes={gpu.node.pk},{cpu.node.pk}"
                                        ).content.decode()


def test_a_gpu_node_with_no_matmul_at_all_is_a_candidate_at_its_datasheet(
        buyer: Any, enrol_node: Any) -> None:
    """The board's candidates are the nodes on the board, not those with a matmul figure: a
    host that held its GPU figure back is still estimated, on its datasheet, and says so."""
    node = enrol_node("hz-a100", inventory=A100)
    measured(buyer, trial_agent(buyer, node, inventory=A100), 9.0, extra=CORE)
    (row,) = buyer.client().post("/api/v1/estimates", {"workload": {
        "preset": "gpt2-small", "steps": 1000}}, format="json").json()["results"]
    assert row["estimate"] is not None and row["evidence"] == "datasheet"
    assert row["sources"]["tflops"].startswith("datasheet of the enrolled")


def test_a_lab_host_stands_for_the_gpu_its_spec_names_and_is_estimated_on_its_datasheet(
        buyer: Any, enrol_node: Any, monkeypatch: Any) -> None:
    """The demo's hosts have no GPU: each names the model it stands for (BENCH_LAB_GPU), as
    declared, not seen by NVML. The platform takes the model as enrolled, the CPU's matmul
    stays a stand-in and the estimate is the datasheet's (certification judges no GPU on a
    declared one: the demo's certificate, tests/e2e/test_demo.py)."""
    monkeypatch.setenv(host_inventory.LAB_GPU, "NVIDIA A100-SXM4-80GB")
    declared = host_inventory.gpus()
    if not declared.get("declared"):
        pytest.skip("this host has a GPU NVML sees: nothing is declared over it")
    assert declared["available"] and declared["devices"] == [
        {"index": 0, "name": "NVIDIA A100-SXM4-80GB"}]
    lab_host = {**A100, "gpu": declared}
    node = enrol_node("hz-lab", inventory=lab_host)
    assert node.node.gpu_model == "NVIDIA A100-SXM4-80GB" and node.node.claims_gpu
    measured(buyer, trial_agent(buyer, node, inventory=lab_host), 9.0,
             extra={MATMUL: 0.032, **CORE}, metadata=ON_CPU)
    assert LatestResult.objects.get(node=node.node, metric=MATMUL,
                                    evidence=LatestResult.MEASURED).stand_in
    (row,) = buyer.client().post("/api/v1/estimates", {"workload": {
        "preset": "gpt2-small", "steps": 1000}}, format="json").json()["results"]
    assert row["evidence"] == "datasheet" and not row["on_cpu"]
    page = Client().get(f"/en/nodes/{node.node.pk}/").content.decode()
    assert "NVIDIA A100-SXM4-80GB (declared, not seen by NVML)" in page
    # Without the variable, the same host has no GPU.
    monkeypatch.delenv(host_inventory.LAB_GPU)
    assert not host_inventory.gpus()["available"]
