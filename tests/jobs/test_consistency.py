"""The intake's physical consistency rules: one sentence-named test per rule, each with an
honest result that passes and a typed-in one that the rule catches."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from contract.sample import summarise
from jobs.services import consistency
from jobs.services.consistency import Facts


def s(metric: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"metric": metric, "value": value, "unit": "", "p5": None, "p95": None, "min": None,
            "max": None, "metadata": {}} | extra


def broken(*samples: dict[str, Any], params: dict[str, float] | None = None,
           nic_mbps: list[int] | None = None, loopback: set[str] | None = None,
           gpu: str = "none", runs: int = 1,
           disks: list[dict[str, Any]] | None = None) -> list[str]:
    facts = Facts(samples=list(samples), params=params or {"fio_numjobs": 32, "training_ranks": 2,
                                                          "training_batch": 32},
                  nic_mbps=[10_000] if nic_mbps is None else nic_mbps,
                  loopback_peers=loopback or set(), gpu_claim=gpu, runs_in_job=runs,
                  disks=disks or [])
    return [v.check for v in consistency.violations(facts)]


def test_a_value_outside_its_own_spread_is_caught() -> None:
    assert broken(s("storage.checkpoint_write", 1.0, p5=0.9, p95=1.1, min=0.8, max=1.2)) == []
    assert broken(s("storage.checkpoint_write", 5.0, p5=0.9, p95=1.1)) == ["spread_in_order"]
    assert broken(s("storage.checkpoint_write", 1.0, min=2.0, max=1.0)) == ["spread_in_order"]


def test_a_mean_may_lie_beyond_p95_but_not_beyond_max() -> None:
    # One delayed reply in 100 pings pulls the mean above p95: an honest ping average.
    assert broken(s("network.icmp_rtt_avg", 100.9, p5=1.0, p95=1.0, min=1.0, max=10_000.0)) == []
    assert broken(s("network.icmp_rtt_avg", 20.0, min=1.0, max=10.0)) == ["spread_in_order"]


def test_iops_and_latency_must_agree_with_the_jobs_in_flight() -> None:
    honest = [s("storage.randread_iops", 6_383.0), s("storage.randread_lat_mean", 4_995.0)]
    assert broken(*honest) == []
    tmpfs = [s("storage.randread_iops_tmpfs", 2_141_031.0), s("storage.randread_lat_mean_tmpfs", 12.1)]
    assert broken(*tmpfs) == []  # 26 of 32 in flight: CPU-bound jobs, measured here
    assert broken(s("storage.randread_iops", 2_500_000.0),
                  s("storage.randread_lat_mean", 5_000.0)) == ["littles_law"]
    assert broken(s("storage.randread_iops", 2_500_000.0)) == ["littles_law"]  # no latency


def test_two_honest_repetitions_pass_though_their_medians_multiply_to_more_in_flight() -> None:
    # A hypervisor-cached disk: one repetition read from the cache (1,000,000 IOPS at 32 us,
    # 32 in flight), the other from the disk (302,494 at 97.4 us, 29.5 in flight). The medians
    # of two are their means, 651,247 IOPS at 64.7 us, 42 in flight: once refused as typed.
    cached = [s("storage.randread_iops", 651_247.0, min=302_494.0, max=1_000_000.0),
              s("storage.randread_lat_mean", 64.7, min=32.0, max=97.4)]
    assert broken(*cached) == []
    # The same medians with no spread are one repetition's figures: 42 in flight is typed.
    assert broken(s("storage.randread_iops", 651_247.0),
                  s("storage.randread_lat_mean", 64.7)) == ["littles_law"]
    # A spread cannot hide a typed rate: the most IOPS at the least latency is 64 in flight.
    assert broken(s("storage.randread_iops", 1_500_000.0, min=1_000_000.0, max=2_000_000.0),
                  s("storage.randread_lat_mean", 40.0, min=32.0, max=48.0)) == ["littles_law"]
    # Nor too few in flight at the other corner: 302,494 IOPS at 40 us is 12 of 32.
    assert broken(s("storage.randread_iops", 651_247.0, min=302_494.0, max=1_000_000.0),
                  s("storage.randread_lat_mean", 36.0, min=32.0, max=40.0)) == ["littles_law"]


def test_a_spread_cannot_hide_a_typed_median() -> None:
    # Three repetitions (the quick profile's): each corner is a plausible repetition (32 and
    # 30 in flight), but the ranked medians, 1,900,000 IOPS at 40 us, are 76 in flight: no
    # honest set of three repetitions has that middle. Once passed, as only the corners were.
    typed = [s("storage.randread_iops", 1_900_000.0, n=3, min=300_000.0, max=2_000_000.0),
             s("storage.randread_lat_mean", 40.0, n=3, min=16.0, max=100.0)]
    assert broken(*typed) == ["littles_law"]
    # Honest threes, paired any way, pass: (2,000,000 @ 16), (900,000 @ 35), (300,000 @ 100).
    assert broken(s("storage.randread_iops", 900_000.0, n=3, min=300_000.0, max=2_000_000.0),
                  s("storage.randread_lat_mean", 35.0, n=3, min=16.0, max=100.0)) == []
    # With an even count the medians are means of two middles: bounded less tightly, still
    # bounded (2 x 70 - 100 = 40 us at most at 1,900,000 IOPS: 76 in flight).
    assert broken(s("storage.randread_iops", 1_900_000.0, n=2, min=300_000.0, max=2_000_000.0),
                  s("storage.randread_lat_mean", 70.0, n=2, min=16.0, max=100.0)) == ["littles_law"]
    # The honest cached disk of two repetitions above still passes, n given or not.
    assert broken(s("storage.randread_iops", 651_247.0, n=2, min=302_494.0, max=1_000_000.0),
                  s("storage.randread_lat_mean", 64.7, n=2, min=32.0, max=97.4)) == []


@given(st.lists(st.tuples(st.floats(1_000.0, 3_000_000.0),
                          # inside the bounds: at the bound itself, rounding decides
                          st.floats(consistency.LITTLE_LOW * 1.001,
                                    consistency.LITTLE_HIGH * 0.999)),
                min_size=1, max_size=7))
def test_no_honest_set_of_repetitions_is_refused_by_littles_law(
        reps: list[tuple[float, float]]) -> None:
    # Each repetition keeps 32 x [low, high] in flight (its latency follows from its rate);
    # summarised as the probe summarises them, they pass the corners and the medians alike.
    iops = [rate for rate, _ in reps]
    lat = [32 * share / rate * 1e6 for rate, share in reps]
    posted = [summarise("storage.randread_iops", iops).as_dict(),
              summarise("storage.randread_lat_mean", lat).as_dict()]
    assert consistency.littles_law(Facts(posted, {"fio_numjobs": 32}, nic_mbps=[])) is None


def test_a_receiver_cannot_count_more_than_was_sent() -> None:
    peer = {"metadata": {"peer": "reference:hangzhou:ref1"}}
    assert broken(s("network.tcp_throughput", 9.4, **peer),
                  s("network.tcp_throughput_sent", 9.45, **peer)) == []
    assert broken(s("network.tcp_throughput", 9.4, **peer),
                  s("network.tcp_throughput_sent", 1.0, **peer)) == ["sender_at_least_receiver"]


def test_throughput_is_bounded_by_the_nic_seen_at_enrolment() -> None:
    assert broken(s("network.tcp_throughput", 9.5), nic_mbps=[10_000]) == []
    assert broken(s("network.tcp_throughput", 95.0), nic_mbps=[10_000]) == ["within_nic_rate"]
    assert broken(s("network.tcp_throughput", 0.9), nic_mbps=[]) == ["within_nic_rate"]
    loop = {"metadata": {"peer": "reference:hangzhou:ref1"}}
    assert broken(s("network.tcp_throughput", 40.0, **loop), nic_mbps=[],
                  loopback={"reference:hangzhou:ref1"}) == []


def test_busbw_cannot_beat_the_slowest_link() -> None:
    links = [s("network.internode_throughput", 9.4), s("network.internode_throughput", 3.8)]
    assert broken(*links, s("training.allreduce_busbw", 0.45)) == []
    assert broken(*links, s("training.allreduce_busbw", 1.1)) == ["busbw_within_link"]


def test_a_link_carries_at_least_its_fastest_repetition() -> None:
    """The CI of stop 49: the demo's 200 Mbit/s link (tbf carries 0.191 Gbit/s of TCP) read
    0.171 as the median of its 2 s tests, slow start counted, and the 32 MiB all-reduce's
    honest 0.0227 GB/s (0.182 Gbit/s) was refused against it."""
    curve = {"busbw_factor": 1.75}
    ring = [s("training.allreduce_busbw", 0.0205, metadata=curve | {"size_mib": 1}),
            s("training.allreduce_busbw_largest", 0.0227023, metadata=curve | {"size_mib": 32})]
    measured = s("network.internode_throughput", 0.17119, min=0.165, max=0.1862)
    assert broken(measured, *ring) == []
    # Every repetition slower than the all-reduce: the ring beat the link, refused.
    slow = s("network.internode_throughput", 0.163, min=0.16, max=0.165)
    assert broken(slow, *ring) == ["busbw_within_link"]
    # Without a spread (a host that sends none), the figure itself bounds it, as before.
    assert broken(s("network.internode_throughput", 0.17119), *ring) == ["busbw_within_link"]


def test_a_small_messages_busbw_may_ride_a_links_burst_a_large_ones_may_not() -> None:
    """stop 40's demo: 4 nodes, the slowest on a 200 Mbit/s tbf link with a 10 ms bucket;
    its 1 MiB all-reduce ran 6% over the link's sustained TCP figure (0.1919 Gbit/s), honest."""
    link = [s("network.internode_throughput", 0.191933)]
    curve = {"busbw_factor": 1.75}
    at_1mib = s("training.allreduce_busbw", 0.0253855, metadata=curve | {"size_mib": 1})
    assert broken(*link, at_1mib) == []
    # The largest message (32 MiB) has no such room: 6% over is a typed figure.
    largest = s("training.allreduce_busbw_largest", 0.0253855, metadata=curve | {"size_mib": 32})
    assert broken(*link, at_1mib, largest) == ["busbw_within_link"]
    # Without the size the bound is the link's; a claimed tiny message opens it only so far.
    assert broken(*link, s("training.allreduce_busbw", 0.0253855)) == ["busbw_within_link"]
    tiny = s("training.allreduce_busbw", 0.0239 * 1.35, metadata=curve | {"size_mib": 0.001})
    assert broken(*link, tiny) == ["busbw_within_link"]


def test_a_step_is_at_least_its_computation() -> None:
    assert broken(s("training.step_time", 160.0), s("training.compute_time", 37.0)) == []
    assert broken(s("training.step_time", 10.0), s("training.compute_time", 100.0)) == [
        "step_at_least_compute"]


def test_comm_share_follows_from_step_and_compute() -> None:
    assert broken(s("training.step_time", 160.0), s("training.compute_time", 40.0),
                  s("training.comm_share", 0.7)) == []
    assert broken(s("training.step_time", 160.0), s("training.compute_time", 40.0),
                  s("training.comm_share", 0.05)) == ["comm_share_matches_step"]


def test_training_throughput_is_batch_times_world_over_step() -> None:
    step = s("training.step_time", 100.0, metadata={"world_size": 2})
    assert broken(step, s("training.samples_per_s", 640.0)) == []  # 2 x 32 / 0.1 s
    assert broken(step, s("training.samples_per_s", 6_400.0)) == ["samples_per_s_matches_step"]
    many = s("training.step_time", 100.0, metadata={"world_size": 64})
    assert broken(many, s("training.samples_per_s", 20_480.0)) == ["samples_per_s_matches_step"]


def test_gpu_figures_stay_under_the_claimed_models_peak() -> None:
    a100 = "NVIDIA A100-SXM4-80GB"
    assert broken(s("gpu.matmul_tflops_bf16", 280.0), gpu=a100) == []
    assert broken(s("gpu.matmul_tflops_bf16", 900.0), gpu=a100) == ["within_gpu_peak"]
    assert broken(s("gpu.memcpy_bw", 5_000.0), gpu=a100) == ["within_gpu_peak"]
    assert broken(s("gpu.matmul_tflops_fp32", 0.4)) == []  # a CPU host
    assert broken(s("gpu.matmul_tflops_fp32", 0.4), gpu="NVIDIA Imaginary X9") == ["within_gpu_peak"]


def test_a_busy_gpu_draws_more_than_idle_power() -> None:
    h100 = "NVIDIA H100 80GB HBM3"
    assert broken(s("training.gpu_util_mean", 95.0), s("training.gpu_power_mean", 550.0), gpu=h100) == []
    assert broken(s("training.gpu_util_mean", 95.0), s("training.gpu_power_mean", 30.0),
                  gpu=h100) == ["utilisation_needs_power"]
    assert broken(s("training.gpu_util_mean", 95.0)) == ["utilisation_needs_power"]  # no GPU


def test_a_training_rate_needs_the_step_it_was_measured_from() -> None:
    # On main a rate left without its step time could not be contradicted: 64,000 samples/s.
    assert broken(s("training.samples_per_s", 64_000.0)) == ["samples_per_s_matches_step"]


def test_busbw_on_one_node_is_bounded_by_the_enrolled_models_own_links() -> None:
    h100 = "NVIDIA H100 80GB HBM3"  # NVLink 900 GB/s both ways: 450 one way
    assert broken(s("training.allreduce_busbw", 380.0), gpu=h100) == []
    assert broken(s("training.allreduce_busbw", 2_000.0), gpu=h100) == ["busbw_within_link"]
    assert broken(s("training.allreduce_busbw", 1.6)) == []  # gloo on a CPU host
    assert broken(s("training.allreduce_busbw", 50_000.0)) == ["busbw_within_link"]


def test_a_matmul_above_the_models_best_measured_figure_is_caught() -> None:
    # H200 (H100 SXM's compute): 989.5 TFLOP/s bf16 peak, 0.803 of it the best measured.
    h200 = "NVIDIA H200"
    assert broken(s("gpu.matmul_tflops_bf16", 790.0), gpu=h200) == []
    assert broken(s("gpu.matmul_tflops_bf16", 900.0), gpu=h200) == ["within_gpu_peak"]


def test_iops_cannot_beat_what_the_enrolled_block_devices_serve() -> None:
    # The typed figure: 2,000,000 IOPS at 16 us with 32 jobs (Little's law holds).
    typed = [s("storage.randread_iops", 2_000_000.0), s("storage.randread_lat_mean", 16.0)]
    cloud_disk = [{"name": "vda", "rotational": True}]  # the lab's hosts: one virtio disk
    assert broken(*typed, disks=cloud_disk) == ["iops_within_devices"]
    # An honest figure on that disk, and the same figure where four NVMe drives could serve it.
    assert broken(s("storage.randread_iops", 22_190.0), s("storage.randread_lat_mean", 1_442.0),
                  disks=cloud_disk) == []
    assert broken(*typed, disks=[{"name": f"nvme{i}n1", "rotational": False}
                                 for i in range(4)]) == []
    # The kernel's rotational flag is not read: a virtual disk reports 1 (this machine's vda
    # does), and a cloud volume behind it serves far more than a spinning disk.
    assert broken(s("storage.randread_iops", 300_000.0), s("storage.randread_lat_mean", 106.7),
                  disks=[{"name": "sda", "rotational": True}]) == []
    assert broken(*typed) == []  # a host that listed no disk is not bounded here


def test_a_step_cannot_compute_faster_than_the_enrolled_device_attains() -> None:
    # GPT-2 small (model_mib 475), batch 32: 2.61e13 FLOPs a step by the platform's count;
    # an H200 attains at most 494.5 TFLOP/s TF32 x 0.803 x 1.10 = 437: at least 59.8 ms.
    gpt2 = {"training_model": 1, "model_mib": 475, "training_batch": 32, "training_ranks": 2}
    h200 = "NVIDIA H200"
    assert broken(s("training.step_time", 80.0), s("training.compute_time", 75.0),
                  params=gpt2, gpu=h200) == []
    assert broken(s("training.step_time", 1.0), s("training.compute_time", 1.0),
                  params=gpt2, gpu=h200) == ["step_within_attainable"]
    # A floor binds the spread too: a median above it with a p5 typed below is caught.
    assert broken(s("training.compute_time", 75.0, p5=5.0, min=5.0), params=gpt2,
                  gpu=h200) == ["step_within_attainable"]
    # The same typed step is refused from a host whose enrolled model is its CPU.
    assert broken(s("training.step_time", 500.0), params=gpt2) == ["step_within_attainable"]
    # The default MLP (16 MiB, 7.3e8 FLOPs at batch 32) on a CPU: 0.037 ms is all physics says.
    assert broken(s("training.step_time", 0.05)) == []
    assert broken(s("training.step_time", 0.01)) == ["step_within_attainable"]
    # A model the table does not list cannot be bounded, and is not waved through.
    assert broken(s("training.step_time", 80.0), gpu="NVIDIA Imaginary X9") == [
        "step_within_attainable"]


def test_the_floor_uses_the_jobs_workload_not_the_hosts_account_of_it() -> None:
    # The host's metadata says mlp, 1 MiB: the job asked for GPT-2 small, and that is counted.
    gpt2 = {"training_model": 1, "model_mib": 475, "training_batch": 32, "training_ranks": 2}
    lie = {"model": "mlp", "model_shape": {"width": 64, "layers": 1}, "model_params": 4160}
    assert broken(s("training.step_time", 1.0, metadata=lie), params=gpt2,
                  gpu="NVIDIA H200") == ["step_within_attainable"]
