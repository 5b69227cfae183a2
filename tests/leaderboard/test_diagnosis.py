"""One test per diagnosis rule: it fires on the numbers it is about, and only then."""

from __future__ import annotations

from leaderboard.services.diagnosis import diagnose


def codes(values: dict[str, float]) -> list[str]:
    return [f.code for f in diagnose(values)]


def test_a_high_comm_share_with_an_idle_gpu_is_communication_bound() -> None:
    assert codes({"training.comm_share": 0.45, "training.gpu_util_mean": 60}) == ["communication-bound"]


def test_a_busy_gpu_is_not_communication_bound_whatever_the_share() -> None:
    assert codes({"training.comm_share": 0.45, "training.gpu_util_mean": 95}) == []


def test_a_low_comm_share_is_fine() -> None:
    assert codes({"training.comm_share": 0.2}) == []


def test_a_big_gain_from_more_loader_workers_is_input_bound() -> None:
    findings = diagnose({"training.dataloader_gain": 3.0})
    assert [f.code for f in findings] == ["input-bound"]
    assert "num_workers" in findings[0].advice


def test_small_files_much_slower_than_packed_says_pack_them() -> None:
    assert codes({"storage.smallfile_read": 1000, "storage.packedfile_read": 5000}) == ["small-files"]
    assert codes({"storage.smallfile_read": 1000, "storage.packedfile_read": 1500}) == []


def test_over_10_ms_to_the_region_is_high_latency() -> None:
    assert codes({"network.tcp_rtt": 12.0}) == ["high-latency"]
    assert codes({"network.tcp_rtt": 4.0}) == []


def test_under_10_gbit_between_nodes_is_a_slow_network() -> None:
    assert codes({"network.internode_throughput": 1.0}) == ["slow-network"]
    assert codes({"network.internode_throughput": 25.0}) == []


def test_an_honest_10_gbe_link_is_not_called_slow() -> None:
    # TCP goodput over 10 GbE measures 9.4-9.6 Gbit/s; the rule is stated in link classes.
    assert codes({"network.internode_throughput": 9.54}) == []
    assert codes({"network.internode_throughput": 8.5}) == ["slow-network"]


def test_slow_checkpoint_writes_are_flagged() -> None:
    assert codes({"storage.checkpoint_write": 0.2}) == ["slow-checkpoints"]
    assert codes({"storage.checkpoint_write": 2.0}) == []
