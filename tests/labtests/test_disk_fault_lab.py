"""A slow disk injected and named (#36): one lab host's processes in a throttled blkio cgroup.

Three nodes of one region share the machine's disk; slow-disk (lab/faults.py) puts one
host's node worker, and with it every fio the storage probe starts, in a blkio cgroup
capped at a few thousand IOPS, while the other two keep the real disk. The three are
measured through the platform with the fault bench's parameters, and the job's diagnosis
(GET /api/v1/links?job=ID, where the bench reads it) must name that host's disk, slow, and
nothing else; cleared, the cgroup is gone. The job is the storage probe alone: the bench's
suite adds the network probe, which takes this lab a minute more (issue #31: the suite's
time), and the disk's figures are the same probe's either way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.models import Run, Sample
from jobs.services import submission
from lab import blkio, faults
from lab.procs import wait_for
from lab.stack import LabStack
from perf import fault_bench
from tests.labtests.labs import lab_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, cgroups)"),
    pytest.mark.skipif(not (blkio.ROOT / blkio.THROTTLES[0]).exists(),
                       reason="no cgroup v1 blkio throttling on this kernel"),
]

NAMES = ["f1", "f2", "f3"]


@pytest.fixture
def lab(live_server: Any, private_redis: Any, provider: Any, provider_owner: Any, hangzhou: Any,
        tmp_path: Path) -> Iterator[LabStack]:
    node = {"kind": "node", "region": "hangzhou", "provider": provider.name,
            "rate_mbit": fault_bench.RATE_MBIT}
    yield from lab_of({"name": "df", "hosts": [node | {"name": n} for n in NAMES]},
                      live_server, private_redis, provider_owner, tmp_path)


def test_a_slow_disk_is_named_and_its_cgroup_goes_with_the_fault(lab: LabStack,
                                                                   buyer: Any) -> None:
    fault = faults.Fault("slow-disk", ("f2",), faults.KINDS["slow-disk"][1])
    faults.inject(lab, fault)
    group = faults.disk_cgroup(lab, "f2")
    try:
        # The worker is in the group, and nothing of the other hosts is.
        pids = {int(p) for p in (group / "cgroup.procs").read_text().split()}
        assert lab.nodes["f2"].worker.popen.pid in pids
        assert not pids & {lab.nodes[n].worker.popen.pid for n in ("f1", "f3")}
        job, _ = submission.submit(buyer.user, [lab.nodes[n].node_id for n in NAMES],
                                   "storage", fault_bench.PARAMS)
        wait_for(lambda: not Run.objects.filter(job=job, status__in=["queued", "running"])
                 .exists(), 240, "the job", interval=1.0)
        # fio's own processes were in the group (children of the worker's, born in it):
        # the group's I/O is theirs.
        serviced = (group / "blkio.throttle.io_serviced").read_text().split()
        assert int(serviced[serviced.index("Total") + 1]) > faults.disk_iops(fault), serviced
    finally:
        faults.clear(lab, fault)
    for run in Run.objects.filter(job=job):
        assert run.status == "succeeded", (run.node.name, run.error)
    iops = {s.run.node.name: s for s in Sample.objects.filter(
        run__job=job, metric="storage.randread_iops").select_related("run__node")}
    print({name: (round(s.value), s.n, s.cv, s.min, s.max) for name, s in sorted(iops.items())})
    # O_DIRECT, so the throttle is what fio saw: no page cache between them.
    assert all(s.metadata.get("direct") == 1 for s in iops.values())
    slowest = iops["f2"].max
    assert slowest is not None and slowest <= 1.1 * faults.disk_iops(fault), slowest

    answer = buyer.client().get(f"/api/v1/links?job={job.pk}").json()
    print([f["verdict"] for f in answer["diagnosis"]])
    assert {(f["part"], f["kind"]) for f in answer["diagnosis"]} == {("disk:f2", "slow")}
    (found,) = answer["diagnosis"]
    assert found["rule"] == "disk_faults.slow_share" and found["code"] == "slow-disk"
    assert f"{iops['f2'].value:,.0f}" in found["verdict"]

    # Cleared: the group is gone, its worker back where it was, and the disk its own again.
    assert not group.exists()
    assert blkio.group_of(lab.nodes["f2"].worker.popen.pid) == group.parent
