"""The buyer's site probe in the lab (#33): `benchctl probe` from a site host's namespace to
enrolled node workers of two cities, over shaped links and the geography's detour relays.

A site in Hangzhou, two Hangzhou nodes (200 and 100 Mbit/s) and a Shenzhen node (200 Mbit/s);
the Hangzhou-Shenzhen round trip is the demo spec's figure. What the CLI stores must be the
lab's model: each node's RTT is the path's raw round trip plus the city pair's figure (0
within a city), its throughput both ways the shaped rate's TCP goodput; the node confirms it
saw the site's own address; the figures are the buyer's alone, and the estimate's copy of a
data set from the site runs at them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from benchmarks import runner
from jobs.models import SiteProbe
from lab import procs
from lab.stack import ECHO_PORT, LabStack
from tests.labtests.labs import lab_of
from tests.labtests.test_links_clusters_lab import GOODPUT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (ip netns, nft, tc)"),
]

FAST, SLOW = 200, 100  # Mbit/s
HZ_SZ_MS = 15.5  # lab/specs/demo.yaml's figure, with its source
TOLERANCE_MS = 0.5
SECONDS = 3  # each iperf3 test, after the 1 s the probe omits
DATASET_GB = 2000
GPU = "NVIDIA A100-SXM4-80GB"

NODE = {"kind": "node", "provider": "West Lake DC", "gpu": GPU}
SPEC: dict[str, Any] = {
    "name": "site1", "subnet": "10.215.3",
    "hosts": [NODE | {"name": "hz1", "region": "hangzhou", "rate_mbit": FAST},
              NODE | {"name": "hz2", "region": "hangzhou", "rate_mbit": SLOW},
              NODE | {"name": "sz1", "region": "shenzhen", "rate_mbit": FAST},
              {"name": "office", "kind": "site", "region": "hangzhou"}],
    "geography": {
        "cities": {"hangzhou": {"regions": ["hangzhou"], "at": [30.274, 120.155]},
                   "shenzhen": {"regions": ["shenzhen"], "at": [22.543, 114.058]}},
        "within_city": {"rtt_ms": 0, "source": "none added within a city (lab/specs/demo.yaml)"},
        "pairs": [{"between": ["hangzhou", "shenzhen"], "rtt_ms": HZ_SZ_MS,
                   "source": "great circle 1,052 km; bound 2 x 1,052 km / 204,218 km/s = "
                             "10.30 ms; x 1.5 route = 15.45 ms"}]}}
RATES = {"hz1": FAST, "hz2": SLOW, "sz1": FAST}
ADDED_MS = {"hz1": 0.0, "hz2": 0.0, "sz1": HZ_SZ_MS}


@pytest.fixture
def lab(live_server: Any, private_redis: Any, provider: Any, provider_owner: Any, hangzhou: Any,
        shenzhen: Any, tmp_path: Path) -> Iterator[LabStack]:
    for stack in lab_of(SPEC, live_server, private_redis, provider_owner, tmp_path):
        # Each node's test server (a thread of its node worker) at a reference's raised
        # priority, as the CLI below: a provider's host is a machine of its own, and on two
        # cores shared with the demo (load 17) its late wake-ups read as the path's: every one
        # of a Hangzhou node's 20 round trips took 0.6 ms over a 0.07 ms path. PRIO_PGRP
        # reaches every thread of the group (setpriority on a pid, only its main thread).
        for node in stack.nodes.values():
            os.setpriority(os.PRIO_PGRP, node.worker.popen.pid, -10)
        # An echo server on each node's address: the path's raw round trip from the site,
        # which the probe's figure is compared with (lab/rtt.py); raised as the test server.
        for host in RATES:
            stack.keep(procs.start(f"echo-{host}", stack.lab.exec_argv(host, [
                "nice", "-n", "-10", sys.executable, "-m", "workers.cli", "echo-server", "--bind",
                stack.lab.address(host), "--port", str(ECHO_PORT)]), tmp_path,
                env={"PYTHONPATH": str(procs.REPO)}))
        yield stack


def benchctl_at(lab: LabStack, host: str, token: str, *args: str) -> Any:
    """`benchctl` run on the buyer's machine: in the site host's namespace, the platform
    reached through its uplink."""
    # Raised priority, as the lab's references run: the buyer's machine is a machine of its
    # own, and its round trips are its figures; a late wake-up on two busy cores is not.
    done = runner.run(lab.lab.exec_argv(host, [
        "nice", "-n", "-10", "env", f"PYTHONPATH={procs.REPO}", f"BENCH_URL=http://127.0.0.1:{lab.api_port}",
        f"BENCH_TOKEN={token}", "COLUMNS=200", sys.executable, "-m", "workers.cli", *args]),
        timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def estimate(live_server: Any, actor: Any, site_id: int, node_id: int) -> requests.Response:
    return requests.post(f"{live_server.url}/api/v1/estimates", headers=actor.headers, timeout=30,
                         json={"workload": {"preset": "resnet50", "steps": 1000,
                                            "dataset_gb": DATASET_GB, "data_at": "site",
                                            "site": site_id, "data_use": "copy-once"},
                               "nodes": [node_id]})


def fastest_in_turn(lab: LabStack, node: str, series: int = 3) -> tuple[float, float]:
    """The fastest one-byte round trip from the site to ``node``'s echo, raw (past the
    relays) and through the geography, each of ``series`` series taken in turn."""
    raw, through = [], []
    for _ in range(series):
        for past, into in ((True, raw), (False, through)):
            into.append(lab.tcp_rtt("office", lab.lab.address(node), ECHO_PORT, raw=past,
                                    fastest=True))
    return min(raw), min(through)


def test_benchctl_probe_from_a_site_measures_the_lab_s_model_of_each_node(
        lab: LabStack, live_server: Any, buyer: Any, other_buyer: Any) -> None:
    benchctl_at(lab, "office", buyer.token, "sites", "add", "Hangzhou office", "--city",
                "Hangzhou")
    ids = {name: lab.nodes[name].node_id for name in RATES}
    done = benchctl_at(lab, "office", buyer.token, "probe", "--site", "Hangzhou office",
                       "--nodes", ",".join(str(i) for i in ids.values()), "--seconds",
                       str(SECONDS), "--format", "json")
    rows = {r["node"]: r for r in json.loads(done.stdout[done.stdout.index("["):])}
    assert set(rows) == set(RATES), done.stdout + done.stderr

    site_address = lab.lab.address("office")
    for name, node_id in ids.items():
        probe = SiteProbe.objects.get(node_id=node_id, site__name="Hangzhou office")
        # The path's own round trip from the site, past the relays, timed the same way
        # (one-byte echoes): what the model adds its city pair's figure to (lab/rtt.py).
        # Each side's fastest, as tests/labtests/test_geography_lab.py compares: the relay
        # never sends early, so a machine busy with other labs only lengthens a round trip
        # (beside the demo, at a load of 16 on two cores, the stored median of a Shenzhen
        # node read 0.73 ms over the model while its fastest was on it).
        # The fastest of three series, taken in turn with the detoured path's below, so that
        # a busy spell lengthens both alike: one series read 5.3 ms at best on a 0.1 ms path,
        # and two raw series taken first read 0.173 ms at best where the detour's, just after,
        # read 0.110 on the same path (CI's serial part).
        raw, through = fastest_in_turn(lab, name)
        modelled = raw + ADDED_MS[name]
        shaped = RATES[name] * GOODPUT / 1000
        assert probe.rtt_ms is not None and probe.upload_gbps and probe.download_gbps
        print(f"{name}: RTT median {probe.rtt_ms:.3f} fastest {min(probe.rtts_ms):.3f} ms "
              f"(raw fastest {raw:.3f} + {ADDED_MS[name]} = {modelled:.3f} modelled), "
              f"up {probe.upload_gbps:.4f} down {probe.download_gbps:.4f} Gbit/s "
              f"(shaped TCP {shaped:.4f}), hops {probe.hop_count}, "
              f"node saw {probe.node_record and probe.node_record['client']}")
        # The lab's own echo over the same detour: the model plus the relay's user-space
        # hops (0.25-0.33 ms on a quiet machine, 0.57 ms once in CI's serial part), which
        # the probe pays as well. The probe must read what the lab's path is, and that path
        # must carry at least the city pair's figure.
        assert through >= modelled - 0.05, (name, through, modelled)
        assert min(probe.rtts_ms) == pytest.approx(through, abs=TOLERANCE_MS), (name, through)
        # The stored figure (the median) is never shorter than the model.
        assert probe.rtt_ms >= modelled - TOLERANCE_MS, name
        assert probe.upload_gbps == pytest.approx(shaped, rel=0.05), name
        assert probe.download_gbps == pytest.approx(shaped, rel=0.05), name
        # The node's record: it served both tests, to the site's own address (the detour
        # relay is transparent), and so confirmed them.
        assert probe.node_record is not None and probe.node_record["client"] == site_address
        assert len(probe.node_record["served"]) == 2 and probe.confirmed, name
        assert rows[name]["confirmed"] is True
        # One bridge between them: the node is the first hop (tracepath is ICMP/UDP,
        # never detoured).
        assert probe.hop_count == 1, (name, probe.hops)

    site_id = SiteProbe.objects.values_list("site_id", flat=True).distinct().get()
    # Another buyer cannot see the site, its figures or estimate on them.
    other = requests.get(f"{live_server.url}/api/v1/sites/{site_id}",
                         headers=other_buyer.headers, timeout=10)
    assert other.status_code == 404, other.text
    assert estimate(live_server, other_buyer, site_id, ids["hz1"]).status_code == 404

    # The estimate copies the data set at the measured site-to-node throughput; the node at
    # half the rate takes twice as long.
    copy_hours = {}
    for name in ("hz1", "hz2"):
        response = estimate(live_server, buyer, site_id, ids[name])
        assert response.status_code == 200, response.text
        (row,) = response.json()["results"]
        staged = row["estimate"]["staging"]
        probe = SiteProbe.objects.get(node_id=ids[name], site_id=site_id)
        assert probe.upload_gbps is not None
        expected = DATASET_GB * 1e9 * 8 / (probe.upload_gbps * 1e9) / 3600
        print(f"{name}: copying {DATASET_GB} GB takes {staged['values']['copy_hours']:.2f} h "
              f"at {staged['values']['gbps']} Gbit/s ({row['estimate']['summary']})")
        assert staged["code"] == "copy-once"
        assert staged["values"]["copy_hours"] == pytest.approx(expected, rel=0.01)
        copy_hours[name] = staged["values"]["copy_hours"]
    assert copy_hours["hz2"] / copy_hours["hz1"] == pytest.approx(FAST / SLOW, rel=0.1)
