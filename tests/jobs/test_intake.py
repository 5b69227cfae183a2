"""A posted sample's shape, checked before anything of the result is stored (jobs.services.intake)."""

from __future__ import annotations

from jobs.services import intake


def busbw(points: int) -> dict[str, object]:
    curve = [{"size_mib": 2 ** i, "busbw_gbs": 1.0, "algbw_gbs": 1.0} for i in range(points)]
    return {"metric": "training.allreduce_busbw", "value": 1.0, "unit": "GB/s", "n": 3,
            "metadata": {"curve": curve}}


def test_an_all_reduce_curve_longer_than_the_probe_measures_is_refused() -> None:
    # #30: every point of a curve is read by each estimate of the candidate; the probe's
    # largest curve is 13 sizes (1 MiB to 4096 MiB).
    assert intake.sample_errors(busbw(13)) == {}
    assert intake.sample_errors(busbw(intake.MAX_CURVE_POINTS + 1)) == {
        "metadata": "a curve of 33 points; the probe measures at most 32"}


def throughput(**metadata: object) -> dict[str, object]:
    return {"metric": "network.tcp_throughput", "value": 9.4, "unit": "Gbit/s", "n": 5,
            "metadata": metadata}


def test_a_stated_interval_must_hold_its_figure() -> None:
    # The interval of the median is shown beside the figure (a node's history): it must be
    # two numbers around the median, not whatever a host types.
    assert intake.sample_errors(throughput(interval=[9.2, 9.6], precision=0.02)) == {}
    assert intake.sample_errors(throughput(interval=[9.5, 9.9])) == {
        "metadata.interval": "[9.5, 9.9] does not hold the figure's median 9.4"}
    for junk in ("9.2-9.6", [9.2], [9.2, "9.6"], [9.2, float("inf")], [True, 9.6]):
        assert intake.sample_errors(throughput(interval=junk)) == {
            "metadata.interval": "must be [low, high], two finite numbers"}, junk
