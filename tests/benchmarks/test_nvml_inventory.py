"""The one NVML reader (benchmarks/nvml.py) at its seam: boards as NVML answers for them,
replayed from tests/data/nvml/ (benchmarks/nvml_recording.py).

An HGX H100 answers every call but page retirement (Ampere on remap rows instead); a GeForce
RTX 4090 refuses ECC, serial, NVLink and memory repair; an L40S passed through to a VM refuses
PCIe, power and temperature; an A100 on a 470 driver lacks the newer calls. None of them may
break the inventory: what is not known is None, never 0, and the device says why.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks import nvml
from benchmarks.nvml_recording import Recorder, Replay, record
from fleet.models import Node
from jobs.services.intake import MAX_METADATA_BYTES

DATA = Path(__file__).resolve().parents[1] / "data" / "nvml"
BOARDS = sorted(p.stem for p in DATA.glob("*.json"))
NOT_SUPPORTED = {"error": "Not Supported", "code": 3}


def recording(board: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{board}.json").read_text())
    return data


def replay(board: str) -> Replay:
    return Replay(recording(board))


def test_every_field_of_a_board_that_answers_them_all() -> None:
    found = nvml.inventory(replay("h100_sxm_hgx"))
    assert found["available"] is True and found["driver"] == "550.54.15"
    assert found["cuda_driver"] == 12040
    assert found["devices"][0] == {
        "index": 0, "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-8b1e6d2c-0000-4000-8000-000000000000", "serial": "1652324030000",
        "memory_bytes": 85520809984, "memory_total_mib": 81559, "compute_capability": "9.0",
        "pcie_gen": 5, "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16,
        "pcie_gen_gpu_max": 5, "nvlinks": 18, "nvlink_links": 18, "nvlink_down": [],
        "nvlink_version": 4, "ecc_enabled": True, "ecc_uncorrected_volatile": 0,
        "ecc_uncorrected_aggregate": 0, "ecc_corrected_volatile": 0,
        "retired_pages": None, "retired_pages_pending": None,
        "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failed": False},
        "sm_clock_max_mhz": 1980, "mem_clock_max_mhz": 2619, "power_limit_w": 700.0,
        "power_default_limit_w": 700.0,
        "not_supported": ["retired_pages", "retired_pages_pending"]}
    assert [d["index"] for d in found["devices"]] == [0, 1]
    # The node's GPU model comes from the same shape.
    assert Node.gpu_model_of({"gpu": found}) == "NVIDIA H100 80GB HBM3"


def test_fields_a_consumer_board_does_not_support_are_recorded_as_not_supported() -> None:
    board = nvml.inventory(replay("rtx_4090"))["devices"][0]
    refused = ["ecc_corrected_volatile", "ecc_enabled", "ecc_uncorrected_aggregate",
               "ecc_uncorrected_volatile", "nvlink", "remapped_rows", "retired_pages",
               "retired_pages_pending", "serial"]
    assert board["not_supported"] == refused
    assert "unknown" not in board
    for field in refused:
        if field != "nvlink":
            assert board[field] is None, field  # unknown, not 0 or False
    assert board["nvlinks"] == 0 and board["nvlink_links"] == 0
    assert board["pcie_gen_max"] == 4 and board["power_limit_w"] == 450.0


def test_a_passed_through_board_keeps_what_it_answers() -> None:
    board = nvml.inventory(replay("l40s_vgpu"))["devices"][0]
    assert board["name"] == "NVIDIA L40S" and board["memory_total_mib"] == 46068
    for field in ("serial", "pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max",
                  "pcie_gen_gpu_max", "power_limit_w", "power_default_limit_w"):
        assert board[field] is None and field in board["not_supported"], field
    assert board["ecc_enabled"] is True and board["sm_clock_max_mhz"] == 2520


def test_a_call_the_driver_lacks_is_unknown_with_its_reason_and_older_names_are_tried() -> None:
    a100 = replay("a100_pcie_40gb_gen3_slot")
    board = nvml.inventory(a100)["devices"][0]
    assert board["pcie_gen_gpu_max"] is None
    assert board["unknown"] == {"pcie_gen_gpu_max": "not in this driver or pynvml"}
    # The 470 driver knows the clock reasons only by their older name.
    snap = nvml.snapshot(a100, 0)
    assert snap["clock_event_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert "unknown" not in snap and "not_supported" not in snap


def test_a_snapshot_of_a_gpu_nvml_does_not_have_says_why() -> None:
    assert nvml.snapshot_of(replay("rtx_4090"), 3) == {"unknown": {"handle": "Invalid Argument"}}
    assert nvml.snapshot_of(replay("rtx_4090"), 0)["sm_clock_mhz"] == 210


def test_a_snapshot_reads_the_board_under_load() -> None:
    assert nvml.snapshot(replay("a100_pcie_40gb_gen3_slot"), 0) == {
        "sm_clock_mhz": 1095, "mem_clock_mhz": 1215,
        "clock_event_reasons": ["sw_power_cap", "hw_thermal_slowdown"], "power_w": 249.0,
        "temperature_c": 87, "util_percent": 100, "pcie_gen": 3, "pcie_width": 8}
    vgpu = nvml.snapshot(replay("l40s_vgpu"), 0)
    assert vgpu["power_w"] is None and vgpu["temperature_c"] is None
    assert vgpu["not_supported"] == ["pcie_gen", "pcie_width", "power_w", "temperature_c"]
    assert vgpu["clock_event_reasons"] == [] and vgpu["sm_clock_mhz"] == 2520


@pytest.mark.parametrize("board", BOARDS)
def test_any_optional_call_refused_never_raises(board: str) -> None:
    """Each recorded call but the required ones, answered NotSupported in turn: the field
    reads None with "not supported", and every other field is as before."""
    data = recording(board)
    before = nvml.inventory(Replay(data))["devices"][0]
    for call in sorted(set(data["devices"][0]) - {"nvmlDeviceGetName"}):
        changed = json.loads(json.dumps(data))
        changed["devices"][0][call] = NOT_SUPPORTED
        found = nvml.inventory(Replay(changed))
        assert found["available"] is True, call
        device = found["devices"][0]
        moved = {k for k in device if device[k] != before.get(k)} - {"not_supported", "unknown"}
        # The refused field reads None (NVLink counts stop at the refused link); nothing
        # else moves, and nothing is made up in its place.
        assert all(device[k] is None or k.startswith("nvlink") for k in moved), (call, moved)
        if moved - {"nvlinks", "nvlink_links", "nvlink_down", "nvlink_version"}:
            assert set(device["not_supported"]) >= moved - {"memory_total_mib"}, call
        nvml.snapshot(Replay(changed), 0)  # never raises either


def test_an_error_other_than_not_supported_keeps_its_words() -> None:
    data = recording("h100_sxm_hgx")
    data["devices"][0]["nvmlDeviceGetEnforcedPowerLimit"] = {"error": "GPU is lost", "code": 15}
    board = nvml.inventory(Replay(data))["devices"][0]
    assert board["power_limit_w"] is None
    assert board["unknown"] == {"power_limit_w": "GPU is lost"}


def test_an_answer_of_an_unexpected_shape_is_unknown_not_a_crash() -> None:
    data = recording("h100_sxm_hgx")
    data["devices"][0] |= {"nvmlDeviceGetEccMode": 1, "nvmlDeviceGetMaxClockInfo(1)": "fast"}
    board = nvml.inventory(Replay(data))["devices"][0]
    assert board["ecc_enabled"] is None and board["sm_clock_max_mhz"] is None
    assert board["unknown"] == {"ecc_enabled": "unreadable answer 1",
                                "sm_clock_max_mhz": "unreadable answer 'fast'"}
    assert board["mem_clock_max_mhz"] == 2619  # the rest is read as before


def test_a_board_that_fails_on_its_name_reads_as_no_gpu_with_the_reason() -> None:
    data = recording("h100_sxm_hgx")
    data["devices"][0]["nvmlDeviceGetName"] = NOT_SUPPORTED
    assert nvml.inventory(Replay(data)) == {
        "available": False, "reason": "skipped: no NVIDIA GPU (Not Supported)"}


def test_eight_gpus_fit_a_samples_metadata() -> None:
    # The GPU probe puts the inventory in its samples' metadata, which intake bounds.
    data = recording("h100_sxm_hgx")
    data["devices"] *= 4
    data["system"]["nvmlDeviceGetCount"] = 8
    found = nvml.inventory(Replay(data))
    assert len(found["devices"]) == 8
    assert len(json.dumps(found)) < MAX_METADATA_BYTES / 2


@pytest.mark.parametrize("board", BOARDS)
def test_a_recording_of_a_recording_reads_the_same(board: str) -> None:
    original = recording(board)
    again = record(Replay(original))
    for device, recorded in zip(original["devices"], again["devices"], strict=True):
        # Only calls the reader makes, as answered; and those the driver lacked, as such.
        lacked = {k for k, v in recorded.items() if k not in device}
        assert all(recorded[k] == {"error": "Function Not Found", "code": 13} for k in lacked)
        assert {k: v for k, v in recorded.items() if k not in lacked}.items() <= device.items()
    assert nvml.inventory(Replay(again)) == nvml.inventory(Replay(original))
    assert nvml.snapshot(Replay(again), 0) == nvml.snapshot(Replay(original), 0)


def test_every_recording_says_where_it_came_from() -> None:
    assert len(BOARDS) >= 5
    for board in BOARDS:
        data = recording(board)
        assert data["board"] and data["provenance"], board
        assert data["system"]["nvmlDeviceGetCount"] == len(data["devices"]), board


def test_a_given_nvml_is_left_to_its_owner_to_shut_down() -> None:
    calls: list[str] = []

    class Watched(Replay):
        def nvmlShutdown(self) -> None:  # noqa: N802 - pynvml's name
            calls.append("shutdown")

    nvml.inventory(Watched(recording("rtx_4090")))
    assert calls == []


def test_this_host_says_why_it_has_no_gpu() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU: its inventory is tested by the test below")
    found = nvml.inventory()
    assert found["available"] is False and found["reason"].startswith("skipped: no NVIDIA GPU")


@pytest.mark.skipif(nvml.load_nvml()[0] is None, reason="no NVIDIA driver (NVML) on this host")
def test_this_hosts_nvml_recorded_and_replayed_reads_the_same() -> None:
    pynvml, _ = nvml.load_nvml()
    assert pynvml is not None
    try:
        live = nvml.inventory(pynvml)
        recorder = Recorder(pynvml)
        through = nvml.inventory(recorder)
        again = recorder.recording("this host", "test")
    finally:
        pynvml.nvmlShutdown()
    assert live["available"] is True and live["devices"]
    for board in live["devices"]:
        assert board["name"] and board["memory_bytes"] and board["memory_bytes"] > 0
        assert board["pcie_gen_max"] is None or 1 <= board["pcie_gen_max"] <= 6
    # Counters may move between two reads; the facts that cannot are compared.
    static = ("name", "uuid", "memory_bytes", "compute_capability", "nvlink_links",
              "ecc_enabled", "sm_clock_max_mhz", "pcie_gen_max", "pcie_width_max")
    replayed = nvml.inventory(Replay(again))
    for a, b, c in zip(live["devices"], through["devices"], replayed["devices"], strict=True):
        assert [a[k] for k in static] == [b[k] for k in static] == [c[k] for k in static]
    assert not any(isinstance(v, float) and math.isnan(v) for v in live["devices"][0].values())
