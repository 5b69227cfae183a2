"""NvmlSampler against a fake pynvml (no GPU on this host), and its real no-GPU path."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from benchmarks import nvml as nvml_module
from benchmarks.nvml import NO_GPU, NvmlSampler


@dataclass
class Rates:
    gpu: int
    memory: int = 0


class FakeNvml:
    """pynvml's surface as the sampler uses it; utilisation cycles through ``utils`` per device."""

    def __init__(self, utils: list[list[int]], power_mw: list[int] | None = None) -> None:
        self.utils = utils
        self.power_mw = power_mw
        self.calls = [0] * len(utils)

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802 - pynvml's names
        return len(self.utils)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Rates:  # noqa: N802
        series = self.utils[handle]
        value = series[self.calls[handle] % len(series)]
        self.calls[handle] += 1
        return Rates(gpu=value)

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:  # noqa: N802
        if self.power_mw is None:
            raise RuntimeError("Not Supported")
        return self.power_mw[handle]


def test_summary_from_known_readings() -> None:
    fake = FakeNvml([[100, 90, 50, 70]], power_mw=[300_000])
    sampler = NvmlSampler(period_s=0.01, nvml=fake)
    assert sampler.available
    for _ in range(4):
        sampler.sample_once()
    summary = sampler.summary()
    assert summary is not None
    assert summary.samples == 4 and summary.devices == 1
    assert summary.util_mean == pytest.approx(77.5)
    # numpy-style linear p5 of [50, 70, 90, 100]: 50 + 0.15 * 20
    assert summary.util_p5 == pytest.approx(53.0)
    assert summary.below80 == pytest.approx(0.5)
    assert summary.power_mean_w == pytest.approx(300.0)


def test_thread_samples_at_the_period_and_all_devices() -> None:
    fake = FakeNvml([[95], [60]], power_mw=[250_000, 350_000])
    sampler = NvmlSampler(period_s=0.02, nvml=fake)
    sampler.start()
    time.sleep(0.25)
    summary = sampler.stop()
    assert summary is not None and summary.devices == 2
    ticks = fake.calls[0]
    assert 5 <= ticks <= 20  # ~12 at 20 ms over 250 ms, generous for a loaded machine
    assert fake.calls[1] == ticks
    assert summary.util_mean == pytest.approx(77.5)
    assert summary.below80 == pytest.approx(0.5)
    assert summary.power_mean_w == pytest.approx(300.0)
    # Stopped means stopped.
    time.sleep(0.06)
    assert fake.calls[0] == ticks


def test_device_subset_and_missing_power() -> None:
    fake = FakeNvml([[10], [100], [100]])
    sampler = NvmlSampler(devices=[1, 2, 7], nvml=fake)  # 7 does not exist: ignored
    sampler.sample_once()
    summary = sampler.summary()
    assert summary is not None and summary.devices == 2
    assert summary.util_mean == 100.0 and summary.below80 == 0.0
    assert summary.power_mean_w is None  # unknown, not 0


def test_short_window_still_reads_once() -> None:
    fake = FakeNvml([[42]])
    sampler = NvmlSampler(period_s=60.0, nvml=fake)
    summary = sampler.stop()  # never started: the window was shorter than a tick
    assert summary is not None and summary.samples == 1 and summary.util_mean == 42.0


def test_no_devices_is_skipped() -> None:
    sampler = NvmlSampler(nvml=FakeNvml([]))
    assert not sampler.available and sampler.skipped == NO_GPU
    sampler.start()
    assert sampler.stop() is None


def test_real_host_without_gpu_says_so() -> None:
    # This host has pynvml but no NVIDIA driver: the real load fails and says why.
    nvml, reason = nvml_module.load_nvml()
    if nvml is not None:
        pytest.skip("an NVIDIA driver is present on this host")
    assert reason == NO_GPU
    sampler = NvmlSampler(period_s=0.01)
    assert sampler.skipped == NO_GPU
    sampler.start()
    assert sampler.stop() is None


class LostNvml(FakeNvml):
    """Device 1 has fallen off the bus: NVML refuses its utilisation."""

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Rates:  # noqa: N802
        if handle == 1:
            raise RuntimeError("GPU is lost")
        return super().nvmlDeviceGetUtilizationRates(handle)


def test_a_tick_nvml_refuses_is_left_out_with_its_reason() -> None:
    sampler = NvmlSampler(nvml=LostNvml([[90], [10]], power_mw=[300_000, 100_000]))
    sampler.sample_once()
    sampler.sample_once()
    summary = sampler.summary()
    assert summary is not None and summary.samples == 2  # device 0's two ticks only
    assert summary.util_mean == 90.0  # not (90 + 0) / 2: no 0 stands in for the lost board
    assert sampler.unknown == {"util_percent": "GPU is lost"}


def test_a_window_without_any_utilisation_says_why() -> None:
    sampler = NvmlSampler(period_s=60.0, devices=[1], nvml=LostNvml([[90], [10]]))
    assert sampler.stop() is None
    assert sampler.skipped == "skipped: NVML gave no utilisation (GPU is lost)"
