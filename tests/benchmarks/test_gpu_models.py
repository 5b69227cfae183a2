"""The per-model reference table (contract/data/gpu_models.yaml): each NVML name finds its own
row, the rows agree with themselves, and each has its source."""

from __future__ import annotations

import pytest

from contract import gpu_models

# NVML device names as the driver reports them, and the row each must find.
NVML_NAMES = [
    ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB PCIe"),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    ("NVIDIA A800-SXM4-80GB", "A800"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H800", "H800"),
    ("NVIDIA H20", "H20"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA L20", "L20"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA GeForce RTX 4080", "RTX 4080"),
]
REQUIRED = {"A100 40GB SXM", "A100 80GB SXM", "A100 40GB PCIe", "A100 80GB PCIe", "A800",
            "H100 SXM", "H100 PCIe", "H800", "H20", "H200", "L20", "L40S", "RTX 4090",
            "RTX 4080"}
VENDOR_DOCUMENTS = ("datasheet", "product brief", "whitepaper")


@pytest.mark.parametrize(("nvml_name", "row"), NVML_NAMES)
def test_each_nvml_name_finds_its_own_row(nvml_name: str, row: str) -> None:
    model = gpu_models.lookup(nvml_name)
    assert model is not None and model.name == row


def test_no_row_shadows_a_later_one() -> None:
    # Every match string, as the whole model part of a name, finds the row it belongs to:
    # an earlier, shorter string ("H20", "L40", "A100") never takes it.
    models, _ = gpu_models.table()
    for model in models:
        for pattern in model.match:
            found = gpu_models.lookup(f"NVIDIA {pattern}")
            assert found is not None and found.name == model.name, (pattern, found)


def test_a_model_the_table_does_not_list_is_none() -> None:
    assert gpu_models.lookup("Tesla V100-SXM2-32GB") is None
    assert gpu_models.lookup("NVIDIA H2") is None  # a prefix of H20 is not H20


def test_every_required_model_is_listed_with_its_vendor_source() -> None:
    models, cpu = gpu_models.table()
    assert REQUIRED <= {m.name for m in models}
    for model in [*models, cpu]:
        assert model.source, model.name
    for model in models:
        assert model.source.startswith("NVIDIA ") and any(
            doc in model.source for doc in VENDOR_DOCUMENTS), model.name
        if model.matmul_attainable is not None:
            assert 0.5 < model.matmul_attainable < 1 and model.attainable_source, model.name


def test_the_figures_of_each_row_agree_with_one_another() -> None:
    # Tensor cores do bf16 and fp16 at twice TF32 on every listed board; vector fp32 is no
    # faster than TF32; the host link is a PCIe x16 of Gen4 or Gen5. A typo breaks one.
    models, _ = gpu_models.table()
    for m in models:
        assert m.bf16 == pytest.approx(2 * m.tf32, rel=0.02), m.name
        assert m.fp16 == m.bf16 and m.fp32 <= m.tf32, m.name
        assert 500 < m.memory_gbs < 6000 and m.pcie_lanes == 16 and m.pcie_gen in (4, 5), m.name
        assert m.nvlink_gbs in (0, 400, 600, 900), m.name
        assert not m.nvlink_bridge or m.nvlink_gbs > 0, m.name


def test_pcie_rates_per_generation() -> None:
    assert gpu_models.pcie_gbs(4, 16) == pytest.approx(31.5, abs=0.1)
    assert gpu_models.pcie_gbs(5, 16) == pytest.approx(63.0, abs=0.1)
    assert gpu_models.pcie_gbs(3, 8) == pytest.approx(7.88, abs=0.01)
    h100_pcie = gpu_models.lookup("NVIDIA H100 PCIe")
    assert h100_pcie is not None and h100_pcie.pcie_gbs() == pytest.approx(63.0, abs=0.1)
    assert gpu_models.cpu().pcie_gbs() is None


def test_the_checks_thresholds_are_fractions() -> None:
    for name in ("matmul_vs_peak", "matmul_vs_attainable", "memory", "host_copy", "busbw"):
        assert 0 < gpu_models.check_threshold(name) < 1, name
    assert gpu_models.check_threshold("gpu_util") == 80
