"""The one NVML inventory reader, at its seam: boards as NVML answers for them.

An A100 SXM answers every call; a PCIe card under a hypervisor answers NotSupported for
PCIe, serial and NVLink (as vGPU and consumer boards do). Neither may break the inventory,
and what is not known is None, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from benchmarks import nvml
from fleet.models import Node


class NVMLError(Exception):
    pass


def not_supported(*_: Any) -> Any:
    raise NVMLError("Not Supported")


@dataclass
class Memory:
    total: int


class RecordedNvml:
    """pynvml's calls as the inventory makes them, answering from a recorded board."""

    def __init__(self, boards: list[dict[str, Any]], driver: str = "535.129.03") -> None:
        self.boards = boards
        self.driver = driver
        self.shut_down = False

    def __getattr__(self, name: str) -> Any:
        # An older pynvml without a call reads like a board that does not support it.
        raise AttributeError(name)

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802 - pynvml's names
        return len(self.boards)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def _answer(self, handle: int, key: str) -> Any:
        value = self.boards[handle].get(key, NVMLError)
        if value is NVMLError:
            raise NVMLError("Not Supported")
        return value

    def nvmlDeviceGetName(self, handle: int) -> Any:  # noqa: N802
        return self._answer(handle, "name")

    def nvmlDeviceGetUUID(self, handle: int) -> Any:  # noqa: N802
        return self._answer(handle, "uuid")

    def nvmlDeviceGetSerial(self, handle: int) -> Any:  # noqa: N802
        return self._answer(handle, "serial")

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Memory:  # noqa: N802
        return Memory(self._answer(handle, "memory"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: int) -> int:  # noqa: N802
        return int(self._answer(handle, "pcie_gen"))

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: int) -> int:  # noqa: N802
        return int(self._answer(handle, "pcie_width"))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: int) -> int:  # noqa: N802
        return int(self._answer(handle, "pcie_gen_max"))

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: int) -> int:  # noqa: N802
        return int(self._answer(handle, "pcie_width_max"))

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:  # noqa: N802
        links = self._answer(handle, "nvlinks")
        if link >= links:
            raise NVMLError("Invalid Argument")
        return 1

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:  # noqa: N802
        return 12020

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shut_down = True


A100_SXM = {"name": b"NVIDIA A100-SXM4-80GB", "uuid": "GPU-5a1c", "serial": "1324021040321",
            "memory": 85899345920, "pcie_gen": 4, "pcie_width": 16, "pcie_gen_max": 4,
            "pcie_width_max": 16, "nvlinks": 12}
# A passed-through PCIe board: name and memory only.
VIRTUAL_L40S = {"name": "NVIDIA L40S", "memory": 48305799168}


def test_every_field_of_a_board_that_answers_them_all() -> None:
    found = nvml.inventory(RecordedNvml([A100_SXM, A100_SXM]))
    assert found["available"] is True and found["driver"] == "535.129.03"
    assert found["cuda_driver"] == 12020
    first = found["devices"][0]
    assert first == {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-5a1c",
                     "serial": "1324021040321", "memory_bytes": 85899345920,
                     "memory_total_mib": 81920, "pcie_gen": 4, "pcie_width": 16,
                     "pcie_gen_max": 4, "pcie_width_max": 16, "nvlinks": 12}
    assert [d["index"] for d in found["devices"]] == [0, 1]
    # The node's GPU model comes from the same shape.
    assert Node.gpu_model_of({"gpu": found}) == "NVIDIA A100-SXM4-80GB"


def test_fields_a_board_does_not_support_are_unknown_not_zero() -> None:
    found = nvml.inventory(RecordedNvml([VIRTUAL_L40S]))
    board = found["devices"][0]
    assert found["available"] is True
    assert board["name"] == "NVIDIA L40S" and board["memory_total_mib"] == 46068
    for field in ("uuid", "serial", "pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max"):
        assert board[field] is None, field
    assert board["nvlinks"] == 0


def test_a_board_that_fails_on_its_name_reads_as_no_gpu_with_the_reason() -> None:
    found = nvml.inventory(RecordedNvml([{"memory": 1 << 30}]))
    assert found == {"available": False, "reason": "skipped: no NVIDIA GPU (Not Supported)"}


def test_a_given_nvml_is_left_to_its_owner_to_shut_down() -> None:
    recorded = RecordedNvml([A100_SXM])
    nvml.inventory(recorded)
    assert not recorded.shut_down


def test_this_host_says_why_it_has_no_gpu() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU: the inventory is tested on it by make gpu-check")
    found = nvml.inventory()
    assert found["available"] is False and found["reason"].startswith("skipped: no NVIDIA GPU")
