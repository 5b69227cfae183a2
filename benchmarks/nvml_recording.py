"""NVML's answers for a host, recorded as JSON and replayed: the seam the NVML code is
tested at (tests/data/nvml/), the way the parsers are tested on recorded tool output.

A recording lists, per device and for the system, every call benchmarks.nvml made and what
NVML answered: a value, a structure (``{"struct": {...}}``) or an error (``{"error": text,
"code": NVML return code}``, e.g. 3 for NotSupported). A call with arguments beyond the
handle is keyed ``name(arg,...)``::

    {"board": "...", "provenance": "...",
     "system": {"nvmlDeviceGetCount": 1, "nvmlSystemGetDriverVersion": "550.54.15"},
     "devices": [{"nvmlDeviceGetName": "NVIDIA H100 80GB HBM3",
                  "nvmlDeviceGetMemoryInfo": {"struct": {"total": 85520809984}},
                  "nvmlDeviceGetClockInfo(1)": 1980,
                  "nvmlDeviceGetSerial": {"error": "Not Supported", "code": 3}}]}

Replay answers a call the recording lacks as a driver without that function would
(NVMLError_FunctionNotFound). On a GPU host, ``python -m benchmarks.nvml_recording`` prints
the recording of what the inventory and a snapshot read there.
"""

from __future__ import annotations

import argparse
import json
import sys
from types import SimpleNamespace
from typing import Any

from benchmarks import nvml as nvml_reader

NVML_ERROR_INVALID_ARGUMENT = 2
# Calls that take no device handle although their name starts with nvmlDevice.
SYSTEM_CALLS = ("nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex")


class ReplayedNvmlError(Exception):
    """pynvml's NVMLError where pynvml is not installed: the same ``value`` and text."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.value = code


def nvml_error(code: int, message: str) -> Exception:
    """The exception pynvml raises for ``code`` (NVMLError_NotSupported for 3, ...)."""
    try:
        import pynvml
    except ImportError:
        return ReplayedNvmlError(code, message)
    error: Exception = pynvml.NVMLError(code)
    return error


def key(name: str, args: tuple[Any, ...]) -> str:
    return f"{name}({','.join(str(a) for a in args)})" if args else name


def encode(value: Any) -> Any:
    """A pynvml answer as JSON: ctypes structures by their fields, bytes as text."""
    if hasattr(value, "_fields_"):
        return {"struct": {field[0]: encode(getattr(value, field[0])) for field in value._fields_}}
    if isinstance(value, SimpleNamespace):  # a structure Replay answered
        return {"struct": {name: encode(v) for name, v in vars(value).items()}}
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(answer: Any) -> Any:
    if isinstance(answer, dict) and "struct" in answer:
        return SimpleNamespace(**{k: decode(v) for k, v in answer["struct"].items()})
    if isinstance(answer, dict) and "error" in answer:
        raise nvml_error(int(answer.get("code", -1)), str(answer["error"]))
    return answer


class Replay:
    """A pynvml-like object that answers from a recording (tests, and reports on a host
    whose NVML was recorded elsewhere)."""

    def __init__(self, recording: dict[str, Any]) -> None:
        self.recording = recording
        self.system: dict[str, Any] = recording.get("system", {})
        self.devices: list[dict[str, Any]] = recording.get("devices", [])

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        return None

    def nvmlShutdown(self) -> None:  # noqa: N802
        return None

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return int(self.system.get("nvmlDeviceGetCount", len(self.devices)))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        if not 0 <= index < len(self.devices):
            raise nvml_error(NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument")
        return index

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("nvml"):
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            if name.startswith("nvmlDevice") and args:
                book, found = self.devices[args[0]], key(name, args[1:])
            else:
                book, found = self.system, key(name, args)
            if found not in book:
                raise nvml_error(nvml_reader.NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found")
            return decode(book[found])

        return call


class Recorder:
    """Wraps an initialised pynvml: answers what it answers and writes each call down.

    The handles it gives out are the device indices (a recording has no pointers); the
    calls made with them reach NVML with the real handle.
    """

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        self._handles: dict[int, Any] = {}
        self.system: dict[str, Any] = {}
        self.devices: dict[int, dict[str, Any]] = {}

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802 - pynvml's names
        self._handles[index] = self._nvml.nvmlDeviceGetHandleByIndex(index)
        self.devices.setdefault(index, {})
        return index

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._nvml, name)  # a call this pynvml lacks stays unrecorded
        if not name.startswith("nvml") or not callable(real):
            return real

        def call(*args: Any) -> Any:
            if name.startswith("nvmlDevice") and name not in SYSTEM_CALLS and args:
                book, found = self.devices[args[0]], key(name, args[1:])
                args = (self._handles[args[0]], *args[1:])
            else:
                book, found = self.system, key(name, args)
            try:
                value = real(*args)
            except Exception as exc:
                book[found] = {"error": str(exc), "code": getattr(exc, "value", None)}
                raise
            if name not in ("nvmlInit", "nvmlShutdown"):
                book[found] = encode(value)
            return value

        return call

    def recording(self, board: str, provenance: str) -> dict[str, Any]:
        return {"board": board, "provenance": provenance, "system": self.system,
                "devices": [self.devices[i] for i in sorted(self.devices)]}


def record(nvml: Any) -> dict[str, Any]:
    """What benchmarks.nvml reads on this host (inventory and one snapshot per GPU)."""
    recorder = Recorder(nvml)
    found = nvml_reader.inventory(recorder)
    for index in range(len(found.get("devices", []))):
        nvml_reader.snapshot(recorder, recorder.nvmlDeviceGetHandleByIndex(index))
    names = sorted({d["name"] for d in found.get("devices", [])})
    return recorder.recording(", ".join(names) or "no device",
                              "recorded by python -m benchmarks.nvml_recording")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record this host's NVML answers as JSON.")
    parser.add_argument("--output", "-o", help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    nvml, reason = nvml_reader.load_nvml()
    if nvml is None:
        print(reason, file=sys.stderr)
        return 1
    try:
        text = json.dumps(record(nvml), indent=1, sort_keys=True) + "\n"
    finally:
        nvml.nvmlShutdown()
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
