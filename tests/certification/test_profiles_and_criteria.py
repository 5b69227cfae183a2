"""Published profiles are checked before they are used; criteria are judged without a
database, on figures alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from certification.models import CertificationProfile
from certification.services import criteria, profiles
from certification.services.criteria import Figure, Figures

RTT = {"metric": "network.tcp_rtt", "comparison": "<", "threshold": 5, "verified_by": "reference",
       "why": "RTT under 5 ms"}
IOPS = {"metric": "storage.randread_iops", "comparison": ">=", "threshold": 1000,
        "verified_by": "host", "why": "IOPS floor"}


@pytest.mark.django_db
def test_the_published_profiles_pass_their_own_checks() -> None:
    loaded = profiles.load_profiles()
    assert loaded and all(p.criteria for p in loaded)


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), [
    ({"metric": "network.tcp_thruput"}, "unknown metric"),
    ({"comparison": "=>"}, "comparison must be one of"),
    ({"requires": "gpus"}, "requires must be gpu or multi_node"),
    ({"verified_by": "provider"}, "verified_by must be reference or host"),
    ({"threshold": "fast"}, "a threshold is a number"),
    ({"threshold": {"factor": 0.9}}, "a threshold is a number"),
])
def test_a_profile_that_cannot_be_applied_is_refused_and_nothing_is_written(
        tmp_path: Path, change: dict[str, object], message: str) -> None:
    path = tmp_path / "profiles.yaml"
    good = {"name": "good", "version": 1, "suite": "full", "criteria": [RTT]}
    bad = {"name": "bad", "version": 1, "suite": "full", "criteria": [IOPS | change]}
    path.write_text(yaml.safe_dump({"profiles": [good, bad]}))
    with pytest.raises(profiles.ProfileError, match=message):
        profiles.load_profiles(path)
    assert not CertificationProfile.objects.filter(name__in=["good", "bad"]).exists()


def test_reference_criteria_take_only_verified_figures_and_the_worst_peer() -> None:
    figures = Figures([
        Figure("network.tcp_rtt", 1.0, True, "reference hangzhou:ref"),
        Figure("network.tcp_rtt", 3.0, True, "reference hangzhou:ref2"),
        Figure("network.tcp_rtt", 0.1, False, "host report"),
        Figure("storage.randread_iops", 9000, False, "host report"),
        Figure("storage.randread_iops", 2500, False, "buyers' trial agents", measured=True)])
    rtt = criteria.evaluate_criterion(RTT, figures, multi_node=False, has_gpu=False)
    assert (rtt.status, rtt.value, rtt.source) == ("pass", 3.0, "reference hangzhou:ref2")
    assert rtt.margin == pytest.approx(0.4)
    # The buyer's figure, not the host's better one.
    iops = criteria.evaluate_criterion(IOPS, figures, multi_node=False, has_gpu=False)
    assert (iops.status, iops.margin, iops.source) == ("pass", 1.5, "buyers' trial agents")
    assert criteria.tier([rtt, iops]) == "silver"  # the smallest margin, 0.4


def test_a_criterion_only_the_host_speaks_to_is_claimed_never_certified() -> None:
    """The ladder: a host's figure that meets a criterion is its claim (no medal, listed);
    one that fails it fails (a host does not lie to its own cost)."""
    rtt = criteria.evaluate_criterion(RTT, Figures([
        Figure("network.tcp_rtt", 1.0, True, "reference hangzhou:ref")]), False, False)
    claim = criteria.evaluate_criterion(IOPS, Figures([
        Figure("storage.randread_iops", 2_000_000, False, "host report")]), False, False)
    assert (claim.status, claim.value, claim.margin) == ("claimed", 2_000_000, None)
    assert criteria.tier([rtt, claim]) == "partial"
    assert criteria.title("single-node", [rtt, claim]) == (
        "certified without what only its host reports (storage.randread_iops): single-node")
    low = criteria.evaluate_criterion(IOPS, Figures([
        Figure("storage.randread_iops", 500, False, "host report")]), False, False)
    assert low.status == "fail"
    assert criteria.evaluate_criterion(IOPS, Figures([]), False, False).status == "fail"


def test_a_host_figure_alone_leaves_a_reference_criterion_unverified() -> None:
    figures = Figures([Figure("network.tcp_rtt", 0.1, False, "host report")])
    rtt = criteria.evaluate_criterion(RTT, figures, multi_node=False, has_gpu=False)
    assert rtt.status == "unverified" and rtt.value == 0.1


def test_what_could_not_be_measured_gives_no_medal() -> None:
    gpu = {"metric": "training.gpu_util_mean", "comparison": ">=", "threshold": 80,
           "requires": "gpu", "why": "GPU busy"}
    skipped = criteria.evaluate_criterion(gpu, Figures([]), multi_node=False, has_gpu=False)
    assert skipped.status == "not applicable"
    assert criteria.tier([skipped]) == "partial"
    assert criteria.title("single-node", [skipped]) == "certified without GPU: single-node"
