"""Tests for benchmarks.parsers.nccl against NCCL INFO log excerpts (tests/data/nccl/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.parsers import ParseError
from benchmarks.parsers.nccl import channel_kind, parse_nccl_log
from benchmarks.probes.training import nccl_warnings, transport
from benchmarks.probes.training_ddp import nccl_log_env

DATA = Path(__file__).resolve().parent.parent / "data" / "nccl"


def recorded(*names: str) -> str:
    return "".join((DATA / name).read_text(encoding="utf-8") for name in names)


def test_it_reads_infiniband_with_gpudirect_rdma_between_nodes() -> None:
    log = parse_nccl_log(recorded("ib_gdr_2.18.5.log"))

    assert log.version == "2.18.5+cuda12.2"
    assert log.network == "IB"
    assert log.devices == {"IB": ("mlx5_0:1/IB",)}
    assert log.channels == {"NET/IB": 6, "P2P/IPC": 2}
    assert log.transport == "NET/IB"
    assert log.net_devices == ("mlx5_0:1/IB",)
    assert log.gdr is True
    assert log.nvls_channels == 0
    assert not log.ib_disabled and not log.no_ib_device


def test_it_names_each_roce_device_a_channel_used_and_sees_gdr_disabled() -> None:
    log = parse_nccl_log(recorded("roce_gdr_disabled_2.21.5.log"))

    assert log.version == "2.21.5+cuda12.4"
    assert log.transport == "NET/IB"
    # "[RO]" (relaxed ordering) and the OOB interface are not devices.
    assert log.devices == {"IB": ("mlx5_0:1/RoCE", "mlx5_1:1/RoCE")}
    assert log.net_devices == ("mlx5_0:1/RoCE", "mlx5_1:1/RoCE")
    # No channel said GDRDMA, and NCCL said why: disabled for both HCAs.
    assert log.gdr is False


def test_ib_disabled_by_the_environment_falls_back_to_sockets_across_ranks() -> None:
    one = parse_nccl_log(recorded("socket_ib_disabled_2.19.3.rank0.log"))
    both = parse_nccl_log(recorded("socket_ib_disabled_2.19.3.rank0.log",
                                   "socket_ib_disabled_2.19.3.rank1.log"))

    assert both.network == "Socket" and both.ib_disabled
    assert both.transport == "NET/Socket"
    assert both.net_devices == ("eth0:10.40.0.31<0>",)
    assert both.gdr is False  # data crossed nodes, and no channel went GPU to NIC directly
    # The second rank's connections are counted too; the version came from rank 0 only.
    assert one.channels == {"NET/Socket": 6, "P2P/IPC": 2}
    assert both.channels == {"NET/Socket": 8, "P2P/IPC": 4}
    assert both.version == "2.19.3+cuda12.3"


def test_one_node_without_rdma_reports_shared_memory_and_the_network_it_would_use() -> None:
    log = parse_nccl_log(recorded("socket_no_ib_device_single_node_2.18.5.log"))

    assert log.no_ib_device and not log.ib_disabled
    assert log.network == "Socket"
    assert log.devices == {"Socket": ("eth0:172.16.8.5<0>",)}
    # No data crossed a node: the transport is the intra-node one, no NET device was used.
    assert log.transport == "SHM"
    assert log.net_devices == ()


def test_nvlink_sharp_channels_and_cumem_p2p_on_one_h100_node() -> None:
    log = parse_nccl_log(recorded("nvls_single_node_2.21.5.log"))

    assert log.nvls_channels == 16
    assert log.transport == "P2P/CUMEM"
    assert log.network == "IB" and len(log.devices["IB"]) == 8
    assert log.gdr is None


def test_a_plugin_built_on_ib_verbs_uses_the_ib_device_list() -> None:
    log = parse_nccl_log(recorded("ibext_plugin_2.21.5.log"))

    assert log.network == "IBext_v8"
    assert log.transport == "NET/IBext_v8"
    # "NET/IBext_v8/1(4)/GDRDMA": device 1 through proxy rank 4.
    assert log.net_devices == ("mlx5_0:1/IB", "mlx5_3:1/IB")
    assert log.gdr is True
    assert log.channels == {"NET/IBext_v8": 4, "P2P/CUMEM": 2}


@pytest.mark.parametrize(("via", "kind"), [
    ("NET/IB/0/GDRDMA", "NET/IB"), ("NET/Socket/3", "NET/Socket"),
    ("NET/IBext_v8/5(2)/GDRDMA", "NET/IBext_v8"), ("P2P/IPC/read", "P2P/IPC"),
    ("P2P/CUMEM", "P2P/CUMEM"), ("P2P/direct pointer", "P2P/direct pointer"),
    ("SHM/direct/direct", "SHM"),
])
def test_channel_transports_are_grouped_by_kind(via: str, kind: str) -> None:
    assert channel_kind(via) == kind


@pytest.mark.parametrize("text", [
    "",
    "NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable\n",
    "Traceback (most recent call last):\n  File \"x.py\", line 1\n",
])
def test_a_log_without_init_lines_is_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nccl_log(text)


@given(st.text(max_size=400))
def test_any_text_parses_or_raises_parse_error(text: str) -> None:
    try:
        log = parse_nccl_log(text)
    except ParseError:
        return
    assert log.transport is None or isinstance(log.transport, str)


@given(st.permutations(recorded("ib_gdr_2.18.5.log").splitlines()))
def test_the_order_of_lines_does_not_change_what_is_found(lines: list[str]) -> None:
    # Ranks' logs interleave when they share a file: each line must stand alone.
    log = parse_nccl_log("\n".join(lines))
    assert log.transport == "NET/IB" and log.net_devices == ("mlx5_0:1/IB",) and log.gdr


def test_the_launcher_reads_every_ranks_log_it_finds(tmp_path: Path) -> None:
    # What launch_ranks does once the ranks have exited, with the files where the ranks'
    # NCCL_DEBUG_FILE put them.
    for rank, name in enumerate(["socket_ib_disabled_2.19.3.rank0.log",
                                 "socket_ib_disabled_2.19.3.rank1.log"]):
        env = nccl_log_env(str(tmp_path), rank)
        assert (env["NCCL_DEBUG"], env["NCCL_DEBUG_SUBSYS"]) == ("INFO", "INIT,NET")
        Path(env["NCCL_DEBUG_FILE"]).write_text(recorded(name))

    found = transport({"backend": "nccl"}, tmp_path)

    assert (found["transport"], found["net_device"]) == ("NET/Socket", "eth0:10.40.0.31<0>")
    assert found["nccl"]["channels"] == {"NET/Socket": 8, "P2P/IPC": 4}
    assert found["nccl"]["ib_disabled"] and found["nccl"]["version"] == "2.19.3+cuda12.3"


def test_no_nccl_log_leaves_the_transport_unknown_with_the_reason(tmp_path: Path) -> None:
    found = transport({"backend": "nccl"}, tmp_path)

    assert found["transport"] is None and "NCCL_DEBUG=INFO" in found["transport_unknown"]


def test_gloo_names_tcp_and_the_interface_the_ranks_were_given(tmp_path: Path) -> None:
    found = transport({"backend": "gloo", "socket_ifname": {"GLOO_SOCKET_IFNAME": "veth-a"}},
                      tmp_path)

    assert found == {"transport": "gloo/tcp", "net_device": "veth-a"}


def test_a_failed_launch_ends_with_the_warnings_nccl_wrote_to_its_log(tmp_path: Path) -> None:
    # With NCCL_DEBUG_FILE set NCCL's WARN lines go to the file, not stderr: the launcher
    # appends them to the error the probe reports.
    text = recorded("roce_gdr_disabled_2.21.5.log") + (
        "gpu-b1:5120:5197 [0] transport/net_ib.cc:1294 NCCL WARN NET/IB : Got completion "
        "from peer 10.30.1.22<48411> with status=12 opcode=0 len=0 vendor err 129 (Send)\n")
    Path(nccl_log_env(str(tmp_path), 0)["NCCL_DEBUG_FILE"]).write_text(text)

    said = nccl_warnings(tmp_path)

    assert said.startswith("gpu-b1:5120:5197 [0] transport/net_ib.cc:1294 NCCL WARN NET/IB")
    assert nccl_warnings(tmp_path / "elsewhere") == ""
