"""`make gpu-check` (benchmarks/gpu_check.py; its report, benchmarks/gpu_report.py): what it
says without a GPU, its measuring children run for real on this host's CPU, and its report
read from recorded NVML boards with
figures as a GPU would give them. On a GPU host the whole check runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmarks import gpu_check, nvml
from benchmarks.gpu_lines import Line, render
from benchmarks.gpu_report import distributed_lines, report
from benchmarks.nvml_recording import Replay
from benchmarks.probes import isolated
from contract import gpu_models
from workers import cli

DATA = Path(__file__).resolve().parents[1] / "data" / "nvml"
REPO = Path(__file__).resolve().parents[2]
HAS_NVML = nvml.load_nvml()[0] is not None
CUDA = torch.cuda.is_available()


def inventory(board: str, **changes: Any) -> dict[str, Any]:
    """A recorded board's inventory, with ``call=answer`` changes to its first device."""
    data = json.loads((DATA / f"{board}.json").read_text())
    data["devices"][0].update({k.replace("__", "(") + (")" if "__" in k else ""): v
                               for k, v in changes.items()})
    return nvml.inventory(Replay(data))


def snapshot(board: str) -> dict[str, Any]:
    return nvml.snapshot(Replay(json.loads((DATA / f"{board}.json").read_text())), 0)


def matmul(fractions: dict[str, float], model: gpu_models.GpuModel) -> list[dict[str, Any]]:
    # The largest size at the given fraction of peak, the smaller ones below it.
    rows = []
    for precision, fraction in fractions.items():
        for n, scale in ((2048, 0.6), (8192, 1.0)):
            value = model.peak(precision) * fraction * scale
            rows.append({"precision": precision, "n": n, "median": value, "min": value,
                         "max": value, "repetitions": 3})
    return rows


def measured(board: str, model_name: str, fractions: dict[str, float], memory: float,
             host: float, index: int = 0) -> dict[str, Any]:
    model = gpu_models.lookup(model_name)
    assert model is not None
    pcie = model.pcie_gbs() or 0.0
    return {"index": index, "nvml_index": index, "device": "cuda", "name": model_name,
            "matmul": matmul(fractions, model),
            "memory": {"mib": 1024, "median": model.memory_gbs * memory},
            "host_to_device": {"mib": 256, "median": pcie * host},
            "device_to_host": {"mib": 256, "median": pcie * host},
            "after_matmul": snapshot(board), "after_host_copy": snapshot(board),
            "nvml": {"util_mean": 99.0, "power_mean_w": 640.0}}


def distributed(world: int, busbw: float | None, util: float = 93.0) -> dict[str, Any]:
    """What measure_distributed returns on NCCL: the launcher's result and its samples."""
    result = {"world_size": world, "backend": "nccl", "model_params": 16_000_000}
    samples: dict[str, Any] = {"training.step_time": {"value": 5.0},
                               "training.compute_time": {"value": 4.0},
                               "training.gpu_util_mean": {"value": util},
                               "training.gpu_power_mean": {"value": 610.0}}
    if busbw is None:
        result["comm_skipped"] = "skipped: one rank (one GPU); all-reduce needs two or more"
    else:
        samples["training.comm_share"] = {"value": 0.2}
        samples["training.allreduce_busbw"] = {"value": busbw, "metadata": {"curve": [
            {"size_mib": 1, "busbw_gbs": busbw / 10}, {"size_mib": 256, "busbw_gbs": busbw}]}}
    return {"result": result, "samples": samples}


def found(inv: dict[str, Any], devices: list[dict[str, Any]],
          dist: dict[str, Any] | None) -> dict[str, Any]:
    return {"inventory": inv, "devices": {"torch": "2.13.0+cu124", "cuda": "12.4",
                                          "nccl": "2.21.5", "devices": devices},
            "distributed": dist, "elapsed_s": 95.0}


def marked(lines: list[Line]) -> list[tuple[str, str]]:
    return [(line.mark, line.text.strip()) for line in lines if line.mark]


def hints(lines: list[Line]) -> list[str]:
    return [hint for line in lines for hint in line.look]


# Without a GPU


@pytest.mark.skipif(HAS_NVML, reason="this host has an NVIDIA driver: the whole check runs below")
def test_without_a_gpu_it_says_so_and_succeeds() -> None:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check"], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no NVIDIA GPU")
    assert done.stdout.count("\n") == 1
    assert time.monotonic() - started < 20  # no torch import, no child: nothing to measure


@pytest.mark.skipif(HAS_NVML, reason="this host has an NVIDIA driver")
def test_benchctl_doctor_gpu_runs_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["--config", str(tmp_path / "none.json"), "doctor", "--gpu"])
    out = capsys.readouterr().out
    assert "node config" in out  # the doctor's own checks first
    assert out.rstrip().splitlines()[-1].startswith("no NVIDIA GPU")
    assert code == 1  # for the missing node config, not for the GPU


def test_no_nvml_reads_as_no_gpu_with_the_reason() -> None:
    lines = report({"inventory": {"available": False,
                                  "reason": "skipped: no NVIDIA GPU (pynvml is not installed)"}})
    assert [line.text for line in lines] == [
        "no NVIDIA GPU (pynvml is not installed): nothing to check"]
    assert not any(line.low for line in lines)


# The measuring children, for real on this host (its CPU, or its GPUs)


def test_each_device_is_measured_with_the_gpu_probes_functions() -> None:
    config = {"device": "cpu", "sizes": [64, 128], "memcpy_mib": 4, "repetitions": 2}
    found = isolated.call("benchmarks.gpu_check:measure_devices", config, 120, what="test")
    assert found["torch"] == torch.__version__
    (device,) = found["devices"]
    assert [(m["precision"], m["n"]) for m in device["matmul"]] == [
        (p, n) for p in ("fp32", "tf32", "bf16", "fp16") for n in (64, 128)]
    cpu = gpu_models.cpu()
    for m in device["matmul"]:
        assert 0 < m["min"] <= m["median"] <= m["max"] <= cpu.peak(m["precision"]) * 1.05
        assert m["repetitions"] == 2
    assert device["memory"]["mib"] == 4 and 0 < device["memory"]["median"] <= cpu.memory_gbs
    assert device["host_copy_skipped"] == "skipped: no CUDA device"


@pytest.fixture(scope="module")
def nccl_part() -> dict[str, Any]:
    # The training probe's launcher with the check's config keys, two ranks (gloo on a CPU).
    config = gpu_check.distributed_config(2, timeout_s=120, model_mib=2, train_steps=3,
                                          batch=16, allreduce_max_mib=4, nvml_period_s=0.05)
    return gpu_check.measure_distributed(config)


# Its ranks beside another test's gloo ranks once aborted in C++ (SIGABRT) in CI: alone, in
# the serial part (tests/benchmarks/test_training_models.py says more).
@pytest.mark.serial
def test_the_nccl_part_is_the_training_probes_own(nccl_part: dict[str, Any]) -> None:
    result, samples = nccl_part["result"], nccl_part["samples"]
    assert result["world_size"] == 2
    assert result["backend"] == ("nccl" if CUDA and torch.cuda.device_count() >= 2 else "gloo")
    curve = samples["training.allreduce_busbw"]["metadata"]["curve"]
    assert [c["size_mib"] for c in curve] == [1, 2, 4]
    assert samples["training.step_time"]["value"] > 0
    lines = distributed_lines(nccl_part, inventory("h100_sxm_hgx"), {})
    over = f" over {result['transport']}" if result.get("transport") else ""
    assert lines[0].text.startswith(f"{result['backend']} all-reduce{over}, 2 GPUs, busbw GB/s: 1 MiB ")
    assert lines[1].text.startswith(f"DDP on {result['backend']}, 2 rank(s)")


# The report, on recorded boards


def test_a_healthy_h100_board_reads_each_figure_beside_its_published_one() -> None:
    inv = inventory("h100_sxm_hgx")
    boards = [measured("h100_sxm_hgx", "NVIDIA H100 80GB HBM3",
                       {"fp32": 0.75, "tf32": 0.7, "bf16": 0.76, "fp16": 0.76}, 0.88, 0.85, i)
              for i in (0, 1)]
    lines = report(found(inv, boards, distributed(2, 380.0)))
    assert marked(lines) == []
    text = [line.text for line in lines]
    assert text[0] == ("GPU check: 2 GPU(s), driver 550.54.15, CUDA driver 12.4, torch "
                       "2.13.0+cu124 (CUDA 12.4, NCCL 2.21.5)")
    assert text[1].startswith("GPU 0: NVIDIA H100 80GB HBM3, 80 GiB, PCIe Gen5 x16 now, Gen5 "
                              "x16 max, NVLink 18/18 up, ECC on, SM max 1980 MHz, power limit "
                              "700 W [H100 SXM: NVIDIA H100 Tensor Core GPU datasheet (SXM)]")
    bf16 = next(t for t in text if "bf16 n=8192" in t)
    assert bf16.endswith("752.0 TFLOP/s  0.76 of 989.5 (0.95 of the 0.803 measured attainable)")
    assert any(t.endswith("GB/s  0.88 of 3350") for t in text)
    assert any("host to device (pinned)" in t and t.endswith("0.85 of PCIe Gen5 x16 63.0")
               for t in text)
    assert any(t.startswith("nccl all-reduce, 2 GPUs") and t.endswith(
        "peak 380.0  0.84 of NVLink one direction 450") for t in text)
    assert text[-1] == "done in 95 s"


def test_a_board_in_a_gen3_x8_slot_with_ecc_errors_says_what_to_look_at() -> None:
    inv = inventory("a100_pcie_40gb_gen3_slot")
    board = measured("a100_pcie_40gb_gen3_slot", "NVIDIA A100-PCIE-40GB",
                     {"bf16": 0.45}, 0.85, 0.22)
    lines = report(found(inv, [board], distributed(1, None)))
    assert marked(lines) == [
        ("FIX", "uncorrected ECC errors: 2 since the driver loaded, 2 in the board's life"),
        ("FIX", "a memory row remap is pending (1 uncorrectable rows)"),
        ("LOW", "matmul bf16 n=8192     140.4 TFLOP/s  0.45 of 312 (0.55 of the 0.811 "
                "measured attainable)"),
        ("LOW", "host to device (pinned)      6.9 GB/s  0.22 of PCIe Gen4 x16 31.5"),
        ("LOW", "device to host (pinned)      6.9 GB/s  0.22 of PCIe Gen4 x16 31.5"),
    ]
    seen = hints(lines)
    assert "SM clock 1095 MHz under load, of 1410 MHz max" in seen
    assert any(h.startswith("clocks held back by: sw_power_cap, hw_thermal_slowdown") for h in seen)
    assert "87 C under load: the cooling" in seen
    assert any(h.startswith("PCIe running at Gen3 x8 under load; the board is Gen4 x16") for h in seen)
    assert any("nvidia-smi -r" in h for h in seen)
    assert any(line.text.startswith("NCCL all-reduce: one GPU on this host") for line in lines)


def test_the_smaller_sizes_are_shown_but_not_judged() -> None:
    board = measured("h100_sxm_hgx", "NVIDIA H100 80GB HBM3", {"fp32": 0.9}, 0.9, 0.9)
    lines = report(found(inventory("h100_sxm_hgx"), [board], None))
    small = next(line for line in lines if "fp32 n=2048" in line.text)
    assert "0.54 of 67" in small.text and not small.low  # under 0.6, but a small size


def test_links_down_and_a_lowered_power_limit_are_faults() -> None:
    inv = inventory("h100_sxm_hgx", nvmlDeviceGetNvLinkState__3=0,
                    nvmlDeviceGetEnforcedPowerLimit=500000)
    lines = report(found(inv, [], None))
    assert marked(lines) == [("FIX", "NVLink links down: [3]"),
                             ("FIX", "power limit 500 W, below the board's default 700 W")]


def test_an_all_reduce_well_under_nvlink_points_at_the_transport() -> None:
    slow = distributed(8, 40.0)
    slow["result"]["transport"] = "NET/Socket"
    lines = distributed_lines(slow, inventory("h100_sxm_hgx"), {})
    assert lines[0].text.startswith("nccl all-reduce over NET/Socket, 8 GPUs")
    assert lines[0].mark == "LOW" and lines[0].text.endswith("0.09 of NVLink one direction 450")
    assert "NCCL_DEBUG=INFO" in lines[0].look[0]
    # A PCIe board is measured against its PCIe link, not NVLink it does not have.
    pcie = distributed_lines(distributed(2, 20.0), inventory("rtx_4090"), {})
    assert pcie[0].mark == "" and pcie[0].text.endswith("0.63 of PCIe Gen4 x16 one direction 31.5")


def test_low_utilisation_through_the_ddp_steps_is_informational() -> None:
    lines = distributed_lines(distributed(2, 380.0, util=41.0),
                                        inventory("h100_sxm_hgx"), {})
    util = next(line for line in lines if "NVML through the DDP steps" in line.text)
    assert "utilisation 41% mean, power 610 W mean" in util.text and not util.low


def test_a_model_the_table_lacks_is_a_fix_and_its_figures_have_no_fraction() -> None:
    inv = inventory("rtx_4090", nvmlDeviceGetName="Tesla V100-SXM2-32GB")
    board = measured("rtx_4090", "NVIDIA GeForce RTX 4090", {"fp32": 0.8}, 0.9, 0.8)
    lines = report(found(inv, [board], None))
    assert ("FIX", "Tesla V100-SXM2-32GB is not in contract/data/gpu_models.yaml: its figures "
                   "have no reference (and intake refuses them)") in marked(lines)
    matmul_lines = [line.text for line in lines if "matmul fp32" in line.text]
    assert matmul_lines and all(" of " not in t for t in matmul_lines)


def test_parts_that_failed_say_so() -> None:
    lines = report({"inventory": inventory("rtx_4090"),
                    "devices": {"error": "the per-GPU measurement timed out after 240 s"},
                    "distributed": {"error": "NCCL error: unhandled system error"}})
    assert marked(lines) == [
        ("FAIL", "per-GPU measurement failed: the per-GPU measurement timed out after 240 s"),
        ("FAIL", "NCCL all-reduce and DDP failed: NCCL error: unhandled system error")]


def test_a_gpu_that_failed_or_was_left_out_says_so() -> None:
    inv = inventory("h100_sxm_hgx")
    lines = report(found(inv, [{"index": 0, "nvml_index": 0, "failed": "CUDA error: out of memory"},
                               {"index": 1, "skipped": "the check's time budget (150 s) was spent "
                                                      "on the GPUs before this one"}], None))
    assert marked(lines) == [
        ("FAIL", "failed: CUDA error: out of memory"),
        ("FAIL", "the check's time budget (150 s) was spent on the GPUs before this one")]


def test_rendered_lines_carry_their_mark_and_hints() -> None:
    text = render([Line("  matmul bf16", "LOW", ["the cooling"]), Line("done")])
    assert text == "  matmul bf16  <- LOW\n      look at: the cooling\ndone"


# On a GPU host: all of it


@pytest.mark.skipif(not CUDA or not HAS_NVML,
                    reason="no NVIDIA GPU with CUDA and NVML on this host")
def test_the_whole_check_on_this_gpu_host(tmp_path: Path) -> None:
    out = tmp_path / "gpu-check.json"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", "--json", str(out),
                           "--sizes", "2048,4096"], cwd=REPO, capture_output=True, text=True,
                          timeout=330, check=False)
    assert time.monotonic() - started < 300, "the check must take under five minutes"
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "FAIL" not in done.stdout, done.stdout
    results = json.loads(out.read_text())
    for board in results["devices"]["devices"]:
        model = gpu_models.lookup(board["name"])
        assert model is not None, f"add {board['name']} to contract/data/gpu_models.yaml"
        for m in board["matmul"]:
            assert 0 < m["median"] <= model.peak(m["precision"]) * 1.05, m
        assert 0 < board["memory"]["median"] <= model.memory_gbs * 1.05
        assert 0 < board["host_to_device"]["median"] <= (model.pcie_gbs() or 0) * 1.05
    assert results["distributed"]["result"]["backend"] == "nccl"
