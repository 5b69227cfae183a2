"""StorageProbe run for real (fio, torch, the file system), with tiny params."""

import re
import tempfile
import time
from pathlib import Path

import pytest

from benchmarks.probes import storage
from benchmarks.probes.base import ProbeContext, ProbeError
from benchmarks.probes.storage import StorageProbe
from contract.metrics import METRICS as ALL_METRICS
from contract.suites import PARAMS as SHARED_PARAMS
from contract.suites import PROFILES, resolve_params
from jobs.services.consistency import LITTLE_HIGH, LITTLE_LOW

TINY = {"fio_runtime": 1.0, "fio_size_mib": 8.0, "fio_numjobs": 4.0, "checkpoint_mib": 16.0,
        "smallfile_count": 200.0, "smallfile_kib": 4.0, "repetitions": 2.0}
REPETITIONS = 2

EXPECTED_UNITS = {
    "storage.randread_iops": "IOPS",
    "storage.randread_clat_p50": "us",
    "storage.randread_clat_p99": "us",
    "storage.randread_clat_p999": "us",
    "storage.randread_lat_mean": "us",
    "storage.seqread_bw": "GB/s",
    "storage.seqwrite_bw": "GB/s",
    "storage.checkpoint_write": "GB/s",
    "storage.checkpoint_read": "GB/s",
    "storage.smallfile_read": "files/s",
    "storage.packedfile_read": "files/s",
    "storage.randread_iops_tmpfs": "IOPS",
    "storage.randread_clat_p50_tmpfs": "us",
    "storage.randread_clat_p99_tmpfs": "us",
    "storage.randread_clat_p999_tmpfs": "us",
    "storage.randread_lat_mean_tmpfs": "us",
    "storage.smallfile_read_tmpfs": "files/s",
}


def all_params(**overrides: float) -> dict[str, float]:
    params = {name: float(p.default) for name, p in SHARED_PARAMS.items()}
    return params | TINY | overrides


def shm_entries() -> set[str]:
    # Only the probe's own entries: PostgreSQL and torch add and remove their own
    # shared-memory files in /dev/shm while the test runs.
    if not storage.TMPFS_DIR.is_dir():
        return set()
    return {p.name for p in storage.TMPFS_DIR.glob("benchctl-storage-*")}


def test_what_it_reports_and_reads_is_in_the_contract() -> None:
    # Every metric it reports is in the metric table with the unit the test expects of it,
    # and every parameter it reads is declared, with every published profile's value
    # (and the default) inside the bounds a request is held to.
    assert {m.name: m.unit for m in METRICS} == EXPECTED_UNITS
    assert set(StorageProbe.produces) == set(EXPECTED_UNITS)
    source = Path(storage.__file__).read_text()
    read = set(re.findall(r'self\.param\("([a-z_0-9]+)"\)', source))
    assert read and read <= set(SHARED_PARAMS), read - set(SHARED_PARAMS)
    for name in read:
        bounds = SHARED_PARAMS[name]
        for profile, values in PROFILES.items():
            value = values.get(name, bounds.default)
            assert bounds.low <= value <= bounds.high, (profile, name, value)
    assert resolve_params({}, "quick")["fio_runtime"] < resolve_params({}, "default")["fio_runtime"]


# It checks that no probe's entry is left in /dev/shm: alone, not beside another probe.
@pytest.mark.serial
def test_a_real_run_reports_every_metric_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("BENCH_DATA_DIR", str(data))
    shm_before = shm_entries()
    reports: list[tuple[str, int, int]] = []
    probe = StorageProbe(ProbeContext(params=all_params(),
                                      report=lambda *args: reports.append(args)))

    start = time.monotonic()
    probe.prepare()
    try:
        samples = probe.run()
    finally:
        probe.cleanup()
    elapsed = time.monotonic() - start

    by_metric = {s.metric: s for s in samples}
    assert len(by_metric) == len(samples)
    assert set(by_metric) == set(EXPECTED_UNITS)
    ranges = {m.name: m for m in METRICS}
    for sample in samples:
        metric = ranges[sample.metric]
        assert sample.unit == metric.unit
        assert sample.n == REPETITIONS
        assert sample.min is not None and sample.max is not None
        assert sample.p5 is not None and sample.p95 is not None and sample.cv is not None
        assert 0 < sample.min <= sample.p5 <= sample.value <= sample.p95 <= sample.max
        assert metric.low <= sample.min and sample.max <= metric.high, sample
    # Plausibility: loose bounds any disk or tmpfs meets, and that catch unit slips.
    assert by_metric["storage.randread_iops"].value > 100
    assert by_metric["storage.randread_clat_p50"].value <= by_metric["storage.randread_clat_p999"].value
    assert by_metric["storage.randread_clat_p999_tmpfs"].value < 1e6  # microseconds, not ns
    for name in ("storage.seqread_bw", "storage.seqwrite_bw", "storage.checkpoint_write",
                 "storage.checkpoint_read"):
        assert 0.001 < by_metric[name].value < 1_000, name  # GB/s, not bytes/s
    assert by_metric["storage.smallfile_read"].value > 10
    # What the platform's Little's-law rule checks holds for a real run: IOPS x mean latency
    # is the fio jobs' I/Os in flight (4 jobs, iodepth 1).
    for suffix in ("", "_tmpfs"):
        in_flight = (by_metric[f"storage.randread_iops{suffix}"].value
                     * by_metric[f"storage.randread_lat_mean{suffix}"].value / 1e6)
        assert LITTLE_LOW * 4 <= in_flight <= LITTLE_HIGH * 4, (suffix, in_flight)

    meta = by_metric["storage.randread_iops"].metadata
    assert meta["directory"] == str(data)
    assert meta["directory_source"] == "BENCH_DATA_DIR"
    assert meta["tool"] == "fio" and meta["version"].startswith("fio-")
    assert meta["numjobs"] == 4 and meta["direct"] in (0, 1)
    assert by_metric["storage.randread_iops_tmpfs"].metadata["filesystem"] == "tmpfs"
    assert "page_cache" in by_metric["storage.checkpoint_read"].metadata
    assert by_metric["storage.checkpoint_read"].metadata["checkpoint_bytes"] >= 16 * 2**20

    steps = reports[-1][2]
    assert reports == [("storage", step, steps) for step in range(1, steps + 1)]

    assert list(data.iterdir()) == []
    assert shm_entries() <= shm_before
    print(f"storage probe with tiny params: {elapsed:.1f} s")


def test_cleanup_removes_the_default_data_directory_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCH_DATA_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shm_before = shm_entries()
    probe = StorageProbe(ProbeContext(params=all_params()))

    probe.prepare()
    assert (tmp_path / "benchctl-data").is_dir()
    probe.cleanup()

    assert list(tmp_path.iterdir()) == []
    assert shm_entries() <= shm_before


def test_prepare_says_how_to_install_a_missing_fio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage.shutil, "which", lambda tool: None)
    probe = StorageProbe(ProbeContext(params=all_params()))

    with pytest.raises(ProbeError, match="apt-get install fio"):
        probe.prepare()


def test_prepare_rejects_a_data_directory_that_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mistyped mount point must not quietly measure whatever disk holds /tmp.
    monkeypatch.setenv("BENCH_DATA_DIR", str(tmp_path / "missing"))
    probe = StorageProbe(ProbeContext(params=all_params()))

    with pytest.raises(ProbeError, match="not a directory"):
        probe.prepare()
    probe.cleanup()

    assert not (tmp_path / "missing").exists()


def test_prepare_refuses_when_the_data_directory_is_too_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_DATA_DIR", str(tmp_path))
    probe = StorageProbe(ProbeContext(params=all_params(checkpoint_mib=65536 * 1024)))

    with pytest.raises(ProbeError, match="MiB free"):
        probe.prepare()
    probe.cleanup()

    assert list(tmp_path.iterdir()) == []


METRICS = [m for m in ALL_METRICS.values() if m.name.startswith("storage.")]
