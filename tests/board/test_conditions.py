"""An oversold CPU named on the node's page (#32 item 1): the steal its host's kernel counted
during a probe, kept with the probe's figures."""

from __future__ import annotations

from typing import Any

from django.test import Client

from tests.fixtures import measured

STORAGE = {"storage.randread_iops": 100_000.0, "storage.randread_lat_mean": 320.0,
           "storage.checkpoint_write": 0.5}


def conditions(steal: float) -> dict[str, Any]:
    return {"conditions": {"cpu_busy": 0.8, "cpu_iowait": 0.05, "cpu_steal": steal,
                           "load1": 3.1, "cpus": 8}}


def test_steal_during_the_storage_test_reads_oversold_cpu(buyer: Any, enrol_node: Any) -> None:
    cloud, metal = enrol_node("cloud"), enrol_node("metal")
    measured(buyer, cloud, 5.0, extra=STORAGE, metadata={
        "network.tcp_throughput": conditions(0.02), **dict.fromkeys(STORAGE, conditions(0.14))})
    measured(buyer, metal, 5.0, extra=STORAGE, metadata=dict.fromkeys(STORAGE, conditions(0.01)))
    page = Client().get(f"/en/nodes/{cloud.node.pk}/").content.decode()
    assert "oversold CPU: 14% steal during the storage test" in page
    assert 'data-rule="conditions.steal"' in page
    assert "oversold CPU" not in Client().get(f"/en/nodes/{metal.node.pk}/").content.decode()
    zh = Client().get(f"/zh-hans/nodes/{cloud.node.pk}/").content.decode()
    assert "CPU 超卖" in zh and "存储测试" in zh
