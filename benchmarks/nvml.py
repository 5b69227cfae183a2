"""The host's GPUs through NVML: their inventory, and utilisation and power sampled on a
background thread.

pynvml is imported lazily so that hosts without it (or without an NVIDIA driver) can still
import this module; the sampler then says why it has no figures instead of inventing zeros.
"""

from __future__ import annotations

import contextlib
import importlib
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.sample import percentile

NO_GPU = "skipped: no NVIDIA GPU"
# A GPU under this utilisation is counted as starved (waiting on input, comms or the host).
BUSY_THRESHOLD = 80.0


@dataclass(frozen=True)
class UtilisationSummary:
    samples: int  # one per device per tick
    util_mean: float  # %
    util_p5: float  # %
    below80: float  # fraction of samples under BUSY_THRESHOLD
    power_mean_w: float | None  # None when the board does not report power
    devices: int


def load_nvml() -> tuple[Any | None, str | None]:
    """(initialised pynvml module, None), or (None, why not) when there is no usable NVML."""
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError:
        return None, f"{NO_GPU} (pynvml is not installed)"
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - any NVMLError (no driver, no library) means no GPU
        return None, NO_GPU if _is_nvml_error(nvml, exc) else f"{NO_GPU} ({exc})"
    return nvml, None


def _is_nvml_error(nvml: Any, exc: Exception) -> bool:
    error_type = getattr(nvml, "NVMLError", None)
    return isinstance(error_type, type) and isinstance(exc, error_type)


MIB = 1 << 20
NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS


def inventory(nvml: Any | None = None) -> dict[str, Any]:
    """The GPUs as NVML sees them, one shape for the node's inventory and the GPU probe:
    ``{"available": True, "driver", "cuda_driver", "devices": [...]}``, or
    ``{"available": False, "reason"}``.

    Only the count, the name and the handle are required of a board; every other field is
    read guarded, since NVML answers NotSupported for some of them on some boards (PCIe
    fields under virtualisation, serials on consumer cards, NVLink on PCIe cards): unknown
    is None, never 0. ``nvml`` is an initialised pynvml-like object (tests pass a recorded
    one); without it, pynvml is loaded and shut down here.
    """
    owned = nvml is None
    if nvml is None:
        nvml, skipped = load_nvml()
        if nvml is None:
            return {"available": False, "reason": skipped}
    try:
        devices = []
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = _optional(lambda h: int(nvml.nvmlDeviceGetMemoryInfo(h).total), handle)
            devices.append({
                "index": index,
                "name": _text(nvml.nvmlDeviceGetName(handle)),
                "uuid": _optional_text(nvml, "nvmlDeviceGetUUID", handle),
                "serial": _optional_text(nvml, "nvmlDeviceGetSerial", handle),
                "memory_bytes": memory,
                "memory_total_mib": memory // MIB if memory is not None else None,
                "pcie_gen": _optional(getattr(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", None), handle),
                "pcie_width": _optional(getattr(nvml, "nvmlDeviceGetCurrPcieLinkWidth", None), handle),
                "pcie_gen_max": _optional(getattr(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", None),
                                          handle),
                "pcie_width_max": _optional(getattr(nvml, "nvmlDeviceGetMaxPcieLinkWidth", None),
                                            handle),
                "nvlinks": nvlink_count(nvml, handle),
            })
        return {"available": True, "driver": _optional_text(nvml, "nvmlSystemGetDriverVersion"),
                "cuda_driver": _optional(lambda _: int(nvml.nvmlSystemGetCudaDriverVersion()), None),
                "devices": devices}
    except Exception as exc:  # noqa: BLE001 - an NVML that fails on the required fields: no GPU
        return {"available": False, "reason": f"{NO_GPU} ({exc})"}
    finally:
        if owned:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(read: Callable[[Any], Any] | None, handle: Any) -> int | None:
    if read is None:
        return None
    try:
        return int(read(handle))
    except Exception:  # noqa: BLE001 - NVML raises NotSupported on some boards: unknown, not 0
        return None


def _optional_text(nvml: Any, name: str, *args: Any) -> str | None:
    try:
        return _text(getattr(nvml, name)(*args))
    except Exception:  # noqa: BLE001 - NotSupported, or an older pynvml without the call
        return None


def nvlink_count(nvml: Any, handle: Any) -> int:
    active = 0
    for link in range(NVLINK_MAX_LINKS):
        try:
            if nvml.nvmlDeviceGetNvLinkState(handle, link):
                active += 1
        except Exception:  # noqa: BLE001 - NotSupported / InvalidArgument: no more links
            break
    return active


class NvmlSampler:
    """Samples utilisation and power of ``devices`` (default: all) every ``period_s``.

    ``nvml`` is a pynvml-like object, already initialised; tests inject a fake one. Without
    it, the real pynvml is loaded; if that fails, ``skipped`` holds the reason and
    ``stop()`` returns None.
    """

    def __init__(self, period_s: float = 0.1, devices: list[int] | None = None,
                 nvml: Any | None = None) -> None:
        self.period_s = period_s
        self.skipped: str | None = None
        self._owns_nvml = nvml is None
        if nvml is None:
            nvml, self.skipped = load_nvml()
        self._nvml = nvml
        self._handles: list[Any] = []
        if nvml is not None:
            try:
                count = int(nvml.nvmlDeviceGetCount())
                indices = [i for i in (devices if devices is not None else range(count)) if i < count]
                self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
            except Exception as exc:  # noqa: BLE001 - an NVML failure here means no usable GPU
                self.skipped = f"{NO_GPU} ({exc})"
            if not self._handles and self.skipped is None:
                self.skipped = NO_GPU
        self._util: list[float] = []
        self._power_w: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self.skipped is None

    def start(self) -> None:
        if not self.available:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> UtilisationSummary | None:
        """Stop sampling; the summary, or None when unavailable (see ``skipped``)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if not self.available:
            return None
        if not self._util:
            # The window was shorter than one tick: take one reading rather than report nothing.
            self.sample_once()
        if self._owns_nvml and self._nvml is not None:
            # Shutting down is best effort: the figures are already taken.
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
        return self.summary()

    def _loop(self) -> None:
        next_tick = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_tick += self.period_s
            # Sleep to the next tick, not period_s, so the rate does not drift with NVML latency.
            self._stop.wait(max(0.0, next_tick - time.monotonic()))

    def sample_once(self) -> None:
        assert self._nvml is not None
        for handle in self._handles:
            self._util.append(float(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
            # Some boards do not report power; their utilisation still counts. NVML gives mW.
            with contextlib.suppress(Exception):
                self._power_w.append(float(self._nvml.nvmlDeviceGetPowerUsage(handle)) / 1000.0)

    def summary(self) -> UtilisationSummary | None:
        if not self._util:
            return None
        ordered = sorted(self._util)
        return UtilisationSummary(
            samples=len(ordered),
            util_mean=statistics.fmean(ordered),
            util_p5=percentile(ordered, 5),
            below80=sum(1 for u in ordered if u < BUSY_THRESHOLD) / len(ordered),
            power_mean_w=statistics.fmean(self._power_w) if self._power_w else None,
            devices=len(self._handles),
        )
