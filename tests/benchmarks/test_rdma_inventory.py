"""The RDMA part of the host inventory, read from recorded /sys trees and `rdma link` output
(tests/data/rdma/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.parsers.rdma import inventory, parse_rdma_link, peer_memory_module, read_sysfs
from workers.host import inventory as host_inventory

DATA = Path(__file__).resolve().parent.parent / "data" / "rdma"


def link_text(case: str) -> str:
    return (DATA / case / "rdma_link.txt").read_text(encoding="utf-8")


def test_an_active_infiniband_hdr_port_with_its_ipoib_netdev_and_peermem() -> None:
    [device] = read_sysfs(DATA / "ib_hdr_active")

    assert (device.name, device.hca_type, device.fw_ver, device.node_type) == (
        "mlx5_0", "MT4123", "20.36.1010", "CA")
    [port] = device.ports
    assert port.name == "mlx5_0/1" and port.active
    assert (port.state, port.phys_state) == ("ACTIVE", "LinkUp")
    assert port.rate_gbps == 200.0 and port.rate == "200 Gb/sec (4X HDR)"
    assert (port.link_layer, port.transport) == ("InfiniBand", "IB")
    assert port.netdev == "ibp65s0"
    assert peer_memory_module(DATA / "ib_hdr_active") == "nvidia_peermem"


def test_roce_ports_are_ethernet_link_layer_with_their_netdevs() -> None:
    devices = read_sysfs(DATA / "roce_100g")

    ports = [p for d in devices for p in d.ports]
    assert [(p.name, p.transport, p.rate_gbps, p.netdev) for p in ports] == [
        ("mlx5_0/1", "RoCE", 100.0, "ens1f0np0"), ("mlx5_1/1", "RoCE", 100.0, "ens1f1np1")]
    assert all(p.active for p in ports)
    assert peer_memory_module(DATA / "roce_100g") is None


def test_a_port_without_link_is_listed_but_not_active() -> None:
    summary = inventory(DATA / "down_port", link_text("down_port"))

    [device] = summary["devices"]
    [port] = device["ports"]
    assert (port["state"], port["phys_state"], port["transport"]) == ("DOWN", "Polling", "IB")
    assert summary["active_ports"] == []  # RDMA hardware, but nothing an RDMA job could use
    assert summary["gpudirect_module"] == "nvidia_peermem"
    # The older iproute2 layout ("0/1: mlx5_0/1: ...") reads the same.
    assert summary["rdma_link"] == [{"device": "mlx5_0", "port": 1, "state": "DOWN",
                                     "physical_state": "POLLING", "netdev": None}]


def test_a_host_without_rdma_says_so_and_keeps_the_tools_error() -> None:
    summary = inventory(DATA / "none", link_text("none"))

    assert summary["devices"] == [] and summary["active_ports"] == []
    assert summary["gpudirect_module"] is None
    assert summary["rdma_link"] == []
    assert summary["rdma_link_error"] == "Failed to open NETLINK_RDMA socket"
    assert "no RDMA device" in summary["reason"]


def test_without_the_rdma_tool_the_inventory_still_reads_sys() -> None:
    summary = inventory(DATA / "ib_hdr_active", None)

    assert summary["active_ports"] == ["mlx5_0/1"] and "rdma_link" not in summary


def test_rdma_link_fills_a_roce_netdev_that_sys_did_not_show(tmp_path: Path) -> None:
    tree = tmp_path / "host"
    shutil.copytree(DATA / "roce_100g", tree)
    shutil.rmtree(tree / "sys/class/infiniband/mlx5_1/ports/1/gid_attrs")
    shutil.rmtree(tree / "sys/class/infiniband/mlx5_1/device")

    assert read_sysfs(tree)[1].ports[0].netdev is None
    summary = inventory(tree, link_text("roce_100g"))
    assert [p["netdev"] for d in summary["devices"] for p in d["ports"]] == [
        "ens1f0np0", "ens1f1np1"]


@pytest.mark.parametrize(("text", "expected"), [
    ("link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 7 sm_lid 1 lmc 0 state ACTIVE "
     "physical_state LINK_UP \n", [("mlx5_0", 1, "ACTIVE", "LINK_UP", None)]),
    ("link rxe_0/1 state ACTIVE physical_state LINK_UP netdev p1p1\n",
     [("rxe_0", 1, "ACTIVE", "LINK_UP", "p1p1")]),
    ("", []),
    ("Failed to open NETLINK_RDMA socket\n", []),
])
def test_rdma_link_lines(text: str, expected: list[tuple[object, ...]]) -> None:
    assert [(li.device, li.port, li.state, li.physical_state, li.netdev)
            for li in parse_rdma_link(text)] == expected


def test_unreadable_files_leave_fields_empty_instead_of_raising(tmp_path: Path) -> None:
    port = tmp_path / "sys/class/infiniband/mlx5_9/ports/1"
    port.mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (tmp_path / "sys/class/infiniband/mlx5_9/ports/not-a-port").mkdir()

    [device] = read_sysfs(tmp_path)
    [only] = device.ports
    assert only.active and only.rate_gbps is None and only.transport == "unknown"
    assert device.hca_type == "" and only.netdev is None


def test_the_host_inventory_carries_the_rdma_entry() -> None:
    collected = host_inventory.collect()

    assert set(collected["rdma"]) >= {"devices", "active_ports", "gpudirect_module"}
    # This machine's own /sys, whatever it has, reads the same way as a recorded tree.
    assert collected["rdma"]["active_ports"] == [
        f"{d.name}/{p.port}" for d in read_sysfs(Path("/")) for p in d.ports if p.active]
