"""The host's GPUs through NVML, read in this one module: their inventory, a snapshot of
their clocks and power under load, and utilisation and power sampled on a background thread.

Every call goes through Reader: a field a board refuses (NVMLError_NotSupported) is None and
recorded as "not supported", never an exception and never a 0. pynvml is imported lazily so
that hosts without it (or without an NVIDIA driver) can still import this module; the sampler
then says why it has no figures instead of inventing zeros.
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

from contract.sample import percentile

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
# NVML_NVLINK_MAX_LINKS of current pynvml (18 through Hopper): links are read until NVML
# refuses one, so a board with fewer stops early.
NVLINK_MAX_LINKS = 36
# The answers of a field some boards refuse (NVMLError_NotSupported: ECC on consumer cards,
# PCIe under a hypervisor, NVLink on PCIe cards), and of a call this driver or pynvml lacks.
NOT_SUPPORTED = "not supported"
NOT_IN_DRIVER = "not in this driver or pynvml"
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_FUNCTION_NOT_FOUND = 13
# pynvml's enum values, spelled here so that a recorded NVML (tests) needs no pynvml.
CLOCK_SM, CLOCK_MEM = 1, 2
ECC_CORRECTED, ECC_UNCORRECTED = 0, 1
ECC_VOLATILE, ECC_AGGREGATE = 0, 1
RETIRED_MULTIPLE_SBE, RETIRED_DBE = 0, 1
TEMPERATURE_GPU = 0
# nvmlClocksEventReason* bits (formerly ClocksThrottleReason*): why the clocks are below max.
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def why_unknown(exc: BaseException) -> str:
    """What an NVML failure says about the field: not supported, not in this driver, or
    the error's own words (a GPU that fell off the bus, a permission)."""
    code = getattr(exc, "value", None)
    if code == NVML_ERROR_NOT_SUPPORTED or type(exc).__name__ == "NVMLError_NotSupported":
        return NOT_SUPPORTED
    if (code == NVML_ERROR_FUNCTION_NOT_FOUND or isinstance(exc, AttributeError)
            or type(exc).__name__ == "NVMLError_FunctionNotFound"):
        return NOT_IN_DRIVER
    return str(exc) or type(exc).__name__


class Reader:
    """NVML's calls on one handle, each guarded: a refused field is None and ``unknown``
    says why (``"not supported"`` for NVMLError_NotSupported). The only place NVML is read."""

    def __init__(self, nvml: Any, handle: Any = None) -> None:
        self.nvml = nvml
        self.handle = handle
        self.unknown: dict[str, str] = {}

    def call(self, field: str, name: str, *args: Any,
             convert: Callable[[Any], Any] | None = None) -> Any:
        """``convert(nvml.name(handle, *args))`` (no handle for system calls), or None with
        the reason: NVML's refusal, or an answer of a shape ``convert`` cannot read."""
        try:
            function = getattr(self.nvml, name)
            value = function(*args) if self.handle is None else function(self.handle, *args)
        except Exception as exc:  # noqa: BLE001 - any NVML refusal is a fact about the board
            self.unknown.setdefault(field, why_unknown(exc))
            return None
        try:
            return convert(value) if convert is not None else value
        except (TypeError, ValueError, AttributeError, IndexError, KeyError):
            self.unknown.setdefault(field, f"unreadable answer {value!r:.60}")
            return None

    def number(self, field: str, name: str, *args: Any, scale: float = 1.0) -> Any:
        return self.call(field, name, *args, convert=int if scale == 1.0
                         else lambda v: round(float(v) * scale, 3))

    def text(self, field: str, name: str, *args: Any) -> str | None:
        value: str | None = self.call(field, name, *args, convert=_text)
        return value

    def marks(self) -> dict[str, Any]:
        """The reasons, compactly: fields NVML does not support, and the others' errors."""
        out: dict[str, Any] = {}
        refused = sorted(f for f, why in self.unknown.items() if why == NOT_SUPPORTED)
        others = {f: why for f, why in sorted(self.unknown.items()) if why != NOT_SUPPORTED}
        if refused:
            out["not_supported"] = refused
        if others:
            out["unknown"] = others
        return out


def inventory(nvml: Any | None = None) -> dict[str, Any]:
    """The GPUs as NVML sees them, one shape for the node's inventory and the GPU probe:
    ``{"available": True, "driver", "cuda_driver", "devices": [...]}``, or
    ``{"available": False, "reason"}``.

    Only the count, the name and the handle are required of a board; every other field is
    read through Reader, since NVML answers NotSupported for some of them on some boards
    (PCIe fields under virtualisation, serials and ECC on consumer cards, NVLink on PCIe
    cards): unknown is None, never 0, and the device's ``not_supported`` lists those fields
    (``unknown`` has any other reason). Static facts only: what changes from second to
    second (clocks, power draw, temperature) is ``snapshot``'s, so that the stored
    inventory does not change with every run. ``nvml`` is an initialised pynvml-like
    object (tests pass a recorded one); without it, pynvml is loaded and shut down here.
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
            devices.append({"index": index, "name": _text(nvml.nvmlDeviceGetName(handle))}
                           | device_facts(Reader(nvml, handle)))
        system = Reader(nvml)
        return {"available": True, "driver": system.text("driver", "nvmlSystemGetDriverVersion"),
                "cuda_driver": system.number("cuda_driver", "nvmlSystemGetCudaDriverVersion"),
                "devices": devices}
    except Exception as exc:  # noqa: BLE001 - an NVML that fails on the required fields: no GPU
        return {"available": False, "reason": f"{NO_GPU} ({exc})"}
    finally:
        if owned:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()


def device_facts(read: Reader) -> dict[str, Any]:
    memory_bytes = read.call("memory_bytes", "nvmlDeviceGetMemoryInfo",
                             convert=lambda m: int(m.total))
    facts: dict[str, Any] = {
        "uuid": read.text("uuid", "nvmlDeviceGetUUID"),
        "serial": read.text("serial", "nvmlDeviceGetSerial"),
        "memory_bytes": memory_bytes,
        "memory_total_mib": memory_bytes // MIB if memory_bytes is not None else None,
        "compute_capability": read.call("compute_capability",
                                        "nvmlDeviceGetCudaComputeCapability",
                                        convert=lambda c: f"{int(c[0])}.{int(c[1])}"),
        # Current and maximum of the link (the maximum is the slot's and the board's lower
        # one; a link idles at a lower generation, so "current" is only telling under load).
        "pcie_gen": read.number("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
        "pcie_width": read.number("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
        "pcie_gen_max": read.number("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
        "pcie_width_max": read.number("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth"),
        # The board's own maximum: above pcie_gen_max when the slot or a riser holds it back.
        "pcie_gen_gpu_max": read.number("pcie_gen_gpu_max",
                                        "nvmlDeviceGetGpuMaxPcieLinkGeneration"),
    } | nvlink_facts(read) | {
        "ecc_enabled": read.call("ecc_enabled", "nvmlDeviceGetEccMode",
                                 convert=lambda mode: bool(mode[0])),  # current, pending
        "ecc_uncorrected_volatile": read.number(
            "ecc_uncorrected_volatile", "nvmlDeviceGetTotalEccErrors", ECC_UNCORRECTED,
            ECC_VOLATILE),
        "ecc_uncorrected_aggregate": read.number(
            "ecc_uncorrected_aggregate", "nvmlDeviceGetTotalEccErrors", ECC_UNCORRECTED,
            ECC_AGGREGATE),
        "ecc_corrected_volatile": read.number(
            "ecc_corrected_volatile", "nvmlDeviceGetTotalEccErrors", ECC_CORRECTED, ECC_VOLATILE),
    } | memory_repair_facts(read) | {
        "sm_clock_max_mhz": read.number("sm_clock_max_mhz", "nvmlDeviceGetMaxClockInfo", CLOCK_SM),
        "mem_clock_max_mhz": read.number("mem_clock_max_mhz", "nvmlDeviceGetMaxClockInfo",
                                         CLOCK_MEM),
        "power_limit_w": read.number("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit",
                                     scale=1e-3),
        "power_default_limit_w": read.number(
            "power_default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit", scale=1e-3),
    }
    return facts | read.marks()


def nvlink_facts(read: Reader) -> dict[str, Any]:
    """Links NVML answers for, how many are up, and the version of the first one up."""
    states = []
    for link in range(NVLINK_MAX_LINKS):
        probe = Reader(read.nvml, read.handle)
        state = probe.call("nvlink", "nvmlDeviceGetNvLinkState", link)
        if state is None:
            if link == 0:  # a board without NVLink refuses link 0: say so; later links end it
                read.unknown.update(probe.unknown)
            break
        states.append(bool(state))
    up = [link for link, active in enumerate(states) if active]
    return {"nvlinks": len(up), "nvlink_links": len(states),
            "nvlink_down": [link for link, active in enumerate(states) if not active],
            "nvlink_version": (read.number("nvlink_version", "nvmlDeviceGetNvLinkVersion", up[0])
                               if up else None)}


def memory_repair_facts(read: Reader) -> dict[str, Any]:
    """Pages retired (up to Volta/Turing) or rows remapped (Ampere on) after ECC errors:
    each board supports one of the two, and NVML says NotSupported for the other."""
    sbe = read.call("retired_pages", "nvmlDeviceGetRetiredPages", RETIRED_MULTIPLE_SBE,
                    convert=len)
    dbe = (read.call("retired_pages", "nvmlDeviceGetRetiredPages", RETIRED_DBE, convert=len)
           if sbe is not None else None)
    return {
        "retired_pages": sbe + dbe if sbe is not None and dbe is not None else None,
        "retired_pages_pending": read.call("retired_pages_pending",
                                           "nvmlDeviceGetRetiredPagesPendingStatus", convert=bool),
        "remapped_rows": read.call("remapped_rows", "nvmlDeviceGetRemappedRows", convert=lambda r: {
            "correctable": int(r[0]), "uncorrectable": int(r[1]), "pending": bool(r[2]),
            "failed": bool(r[3])}),
    }


def snapshot(nvml: Any, handle: Any) -> dict[str, Any]:
    """What changes from second to second on one GPU: clocks and why they are below their
    maximum, power draw, temperature, utilisation, the PCIe link now. Taken right after a
    load, it tells throttling and a link that trained at a lower generation."""
    read = Reader(nvml, handle)
    reasons = read.call("clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons",
                        convert=clock_event_names)
    if reasons is None and read.unknown.get("clock_event_reasons") == NOT_IN_DRIVER:
        del read.unknown["clock_event_reasons"]  # an older driver: the call's older name
        reasons = read.call("clock_event_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
                            convert=clock_event_names)
    found = {
        "sm_clock_mhz": read.number("sm_clock_mhz", "nvmlDeviceGetClockInfo", CLOCK_SM),
        "mem_clock_mhz": read.number("mem_clock_mhz", "nvmlDeviceGetClockInfo", CLOCK_MEM),
        "clock_event_reasons": reasons,
        "power_w": read.number("power_w", "nvmlDeviceGetPowerUsage", scale=1e-3),
        "temperature_c": read.number("temperature_c", "nvmlDeviceGetTemperature", TEMPERATURE_GPU),
        "util_percent": read.call("util_percent", "nvmlDeviceGetUtilizationRates",
                                  convert=lambda u: int(u.gpu)),
        "pcie_gen": read.number("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
        "pcie_width": read.number("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
    }
    return found | read.marks()


def snapshot_of(nvml: Any, index: int) -> dict[str, Any]:
    """``snapshot`` of the GPU NVML numbers ``index``; only the reason when it has none."""
    read = Reader(nvml)
    handle = read.call("handle", "nvmlDeviceGetHandleByIndex", index)
    return snapshot(nvml, handle) if handle is not None else read.marks()


def clock_event_names(bits: Any) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if int(bits) & bit]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


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
        self.unknown: dict[str, str] = {}  # field -> why NVML refused it (see Reader)
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
        summary = self.summary()
        if summary is None:
            self.skipped = ("skipped: NVML gave no utilisation ("
                            f"{self.unknown.get('util_percent', 'no reading')})")
        return summary

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
            read = Reader(self._nvml, handle)
            # A tick NVML refuses is left out (never a 0 standing in for it) and the reason
            # kept; a board that does not report power still counts its utilisation.
            util = read.call("util_percent", "nvmlDeviceGetUtilizationRates",
                             convert=lambda u: float(u.gpu))
            if util is not None:
                self._util.append(util)
            power_mw = read.call("power_w", "nvmlDeviceGetPowerUsage", convert=float)
            if power_mw is not None:
                self._power_w.append(power_mw / 1000.0)
            self.unknown.update(read.unknown)

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
