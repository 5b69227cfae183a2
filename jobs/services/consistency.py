"""Physical consistency of a result, checked at intake before anything of it is stored.

A host can type any number; it cannot easily type a set of numbers that obey physics. Each
rule is a small named function of the result's facts that returns the violation (the rule's
name and the numbers) or None. A result that breaks any rule is refused whole (422), the run
fails ``inconsistent result: ...`` and /metrics counts the rule by name.

Tolerances are the measurement noise seen on honest runs, said at each rule: a rule that
fails an honest node is worse than no rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract import gpu_models, metrics, rules, storage_devices, training_shapes
from contract.suites import PARAMS, choice

THROUGHPUT_METRICS = ("network.tcp_throughput", "network.tcp_throughput_reverse",
                      "network.tcp_throughput_sent", "network.tcp_throughput_parallel",
                      "network.internode_throughput")
LOOPBACK_HOSTS = ("127.", "::1", "localhost")


def is_loopback(host: str) -> bool:
    return host.startswith(LOOPBACK_HOSTS)


# The bounds, each with its why and source: jobs/data/consistency.yaml.
BOUNDS = rules.load_bounds(Path(__file__).resolve().parents[1] / "data" / "consistency.yaml")
LINK_SLACK = BOUNDS["link_slack"].value
BUSBW_SLACK = BOUNDS["busbw_slack"].value
BUSBW_BURST_S = BOUNDS["busbw_burst_s"].value
BUSBW_SAMPLES = ("training.allreduce_busbw", "training.allreduce_busbw_largest")
BUSBW_BURST_CAP = BOUNDS["busbw_burst_cap"].value
MIB = 2**20
LITTLE_HIGH, LITTLE_LOW = BOUNDS["little_high"].value, BOUNDS["little_low"].value
STEP_SLACK = BOUNDS["step_slack"].value
COMM_SHARE_TOLERANCE = BOUNDS["comm_share_tolerance"].value
THROUGHPUT_TOLERANCE = BOUNDS["throughput_tolerance"].value
SENDER_SLACK = BOUNDS["sender_slack"].value
PEAK_SLACK = BOUNDS["peak_slack"].value
ATTAINABLE_SLACK = BOUNDS["attainable_slack"].value
UTIL_IDLE_PERCENT = BOUNDS["util_idle_percent"].value
# psync: one I/O in flight per fio job (the probe's fio jobs), not a bound.
FIO_IODEPTH = 1
# The training probe's timed loops, in ms per step of one rank's batch.
STEP_TIME_METRICS = ("training.step_time", "training.step_time_p95", "training.compute_time")
SPREAD_EPSILON = 1e-9


@dataclass
class Facts:
    """What a check may use: the posted samples and what the platform itself knows."""

    samples: list[dict[str, Any]]
    params: dict[str, float]  # the job's resolved parameters (platform-chosen)
    nic_mbps: list[int]  # NIC speeds the host reported once, at enrolment
    loopback_peers: set[str] = field(default_factory=set)  # peer names the platform resolves
    gpu_claim: str = "none"  # the GPU model of the inventory posted with this result
    runs_in_job: int = 1
    # The block devices the host listed at enrolment (name, rotational); empty: not known.
    disks: list[dict[str, Any]] = field(default_factory=list)

    def sample(self, metric: str) -> dict[str, Any] | None:
        return next((s for s in self.samples if s["metric"] == metric), None)

    def value(self, metric: str) -> float | None:
        found = self.sample(metric)
        return found["value"] if found is not None else None


@dataclass(frozen=True)
class Violation:
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


Check = Callable[[Facts], "Violation | None"]


def under(sample: dict[str, Any], limit: float) -> tuple[str, float] | None:
    """The first of a sample's value, p5 and min below ``limit``: a floor binds them all."""
    for name in ("value", "p5", "min"):
        value = sample.get(name)
        if isinstance(value, (int, float)) and value < limit:
            return name, value
    return None


def over(sample: dict[str, Any], limit: float) -> tuple[str, float] | None:
    """The first of a sample's value, p95 and max above ``limit``: a ceiling binds them all."""
    for name in ("value", "p95", "max"):
        value = sample.get(name)
        if isinstance(value, (int, float)) and value > limit:
            return name, value
    return None


def spread_in_order(f: Facts) -> Violation | None:
    """p5 <= p95 and min <= max; a median lies between p5 and p95, any value in min..max."""
    for s in f.samples:
        p5, p95, low, high, v = s.get("p5"), s.get("p95"), s.get("min"), s.get("max"), s["value"]
        eps = SPREAD_EPSILON * max(1.0, abs(v))
        bad = ((p5 is not None and p95 is not None and p5 > p95 + eps)
               or (low is not None and high is not None and low > high + eps)
               or (low is not None and v < low - eps) or (high is not None and v > high + eps)
               or (not metrics.METRICS[s["metric"]].mean
                   and ((p5 is not None and v < p5 - eps) or (p95 is not None and v > p95 + eps))))
        if bad:
            return Violation("spread_in_order", f"{s['metric']} = {v:g} with p5 {p5}, p95 {p95}, "
                             f"min {low}, max {high}: a value must lie within its own spread")
    return None


def littles_law(f: Facts) -> Violation | None:
    """fio IOPS x mean latency = I/Os in flight = numjobs x iodepth, in every repetition.

    The samples carry each figure's median, min and max over the repetitions, not which
    repetition gave which, and the product of two medians is not a repetition's: with two
    repetitions each median is a mean, and a mean of IOPS times a mean of latencies overstates
    what was in flight whenever the two differed (a cached and an uncached read of one disk:
    1,000,000 IOPS at 32 us and 302,494 at 97.4 us, 32 and 29.5 in flight, read as 651,247 at
    64.7 us, 42 in flight, and an honest result was refused). What holds whatever the pairing:
    the most IOPS at the least latency, and the least IOPS at the most latency, are each within
    the bounds (the most IOPS came at a latency no less than the least, and so on); for one
    repetition, or two, that is the exact rule."""
    expected = f.params.get("fio_numjobs", 32) * FIO_IODEPTH
    for suffix in ("", "_tmpfs"):
        iops = f.sample(f"storage.randread_iops{suffix}")
        if iops is None:
            continue
        lat = f.sample(f"storage.randread_lat_mean{suffix}")
        if lat is None:
            return Violation("littles_law", f"storage.randread_iops{suffix} = {iops['value']:g} "
                             f"without storage.randread_lat_mean{suffix}: it cannot be checked")
        corners = ((extreme(iops, "max"), extreme(lat, "min")),
                   (extreme(iops, "min"), extreme(lat, "max")))
        for rate, lat_us in corners:
            in_flight = rate * lat_us / 1e6
            if not LITTLE_LOW * expected <= in_flight <= LITTLE_HIGH * expected:
                return Violation("littles_law", (
                    f"{rate:g} IOPS at a mean latency of {lat_us:g} us is {in_flight:.3g} I/Os "
                    f"in flight; {expected:g} fio jobs at iodepth {FIO_IODEPTH} keep "
                    f"{expected:g} (at most {expected / lat_us * 1e6:.4g} IOPS at that "
                    "latency)"))
        medians = ranked_median_bounds(iops, lat)
        low, high = LITTLE_LOW * expected, LITTLE_HIGH * expected
        if medians[1] > high or medians[0] < low:
            return Violation("littles_law", (
                f"storage.randread_iops{suffix} = {iops['value']:g} (the ranked median) with a "
                f"median latency of {lat['value']:g} us over {iops.get('n')} repetitions is "
                f"{medians[0]:.3g} to {medians[1]:.3g} I/Os in flight at least, for "
                f"{expected:g} fio jobs at iodepth {FIO_IODEPTH}: a spread cannot hide a "
                "typed median"))
    return None


def ranked_median_bounds(iops: dict[str, Any], lat: dict[str, Any]) -> tuple[float, float]:
    """What the medians themselves say of the I/Os in flight, for every honest set of
    repetitions (each within the bounds) whatever their pairing: a (low, high) pair whose
    high must not exceed the upper bound, and whose low must not fall under the lower one.

    At least half of the repetitions have IOPS at or above the median m, so at their
    latencies at most high / m: the lower middle latency is at most that. With an odd count
    the median latency is that middle value: m x median latency is bounded both ways. With
    an even count the median is the mean of two middles, the upper one at most the max:
    m x (2 x median latency - max) <= high and m x (2 x median latency - min) >= low. The
    corners bound the extremes; this bounds the figure that ranks."""
    m, lat_m = float(iops["value"]), float(lat["value"])
    n = iops.get("n")
    if isinstance(n, int) and n % 2 == 1 and n == lat.get("n"):
        in_flight = m * lat_m / 1e6
        return in_flight, in_flight
    return (m * (2 * lat_m - extreme(lat, "min")) / 1e6,
            m * (2 * lat_m - extreme(lat, "max")) / 1e6)


def extreme(sample: dict[str, Any], end: str) -> float:
    """A sample's min or max over its repetitions; its value where it gave none."""
    bound = sample.get(end)
    return float(bound) if isinstance(bound, (int, float)) else float(sample["value"])


def iops_within_devices(f: Facts) -> Violation | None:
    """No more 4 KiB random reads than the host's enrolled block devices serve at most: each
    at its class's best published figure (contract/data/storage_devices.yaml). A disk
    figure (not the tmpfs one, which measures memory)."""
    iops, bound = f.value("storage.randread_iops"), storage_devices.max_iops(f.disks)
    if iops is None or bound is None or iops <= bound:
        return None
    kinds = sorted({storage_devices.device_class(d).name for d in f.disks})
    return Violation("iops_within_devices", (
        f"storage.randread_iops {iops:g} is more than the {len(f.disks)} block device(s) the "
        f"host listed at enrolment ({', '.join(kinds)}) serve at most: {bound:g}"))


def sender_at_least_receiver(f: Facts) -> Violation | None:
    """iperf3: what arrived cannot exceed what was sent (per peer)."""
    sent = {str(s["metadata"].get("peer")): s["value"] for s in f.samples
            if s["metric"] == "network.tcp_throughput_sent"}
    for s in f.samples:
        peer = str(s["metadata"].get("peer"))
        if s["metric"] == "network.tcp_throughput" and peer in sent:
            if sent[peer] < SENDER_SLACK * s["value"]:
                return Violation("sender_at_least_receiver", (
                    f"to {peer}: the receiver counted {s['value']:g} Gbit/s but the sender "
                    f"only {sent[peer]:g} Gbit/s"))
    return None


def within_nic_rate(f: Facts) -> Violation | None:
    """No throughput beyond the fastest NIC the host had at enrolment (loopback aside)."""
    over_network = [s for s in f.samples if s["metric"] in THROUGHPUT_METRICS
                    and str(s["metadata"].get("peer")) not in f.loopback_peers]
    if not over_network:
        return None
    if not f.nic_mbps:
        return Violation("within_nic_rate", (
            f"{over_network[0]['metric']} over the network, but the node listed no NIC "
            "speeds at enrolment: its throughput cannot be bounded (enrol it again from "
            "the host, with its NICs' drivers loaded)"))
    limit = max(f.nic_mbps) / 1000 * LINK_SLACK
    for s in over_network:
        if found := over(s, limit):
            return Violation("within_nic_rate", (
                f"{s['metric']} {found[0]} {found[1]:g} Gbit/s is more than the node's fastest "
                f"NIC carries ({max(f.nic_mbps)} Mbit/s, as it reported at enrolment)"))
    return None


def busbw_within_link(f: Facts) -> Violation | None:
    """All-reduce bus bandwidth cannot beat the slowest link this node measured in the job,
    but for the burst a link carries at a message's start (burst_allowance); on one node,
    the enrolled model's own interconnect (single_node_busbw_limit).

    A link carries at least its fastest repetition: that, not the median, bounds the ring.
    A 2 s test of a 200 Mbit/s link with its relays' delay, slow start counted, read 0.171
    Gbit/s as its median where tbf carries 0.191, and the demo's honest 32 MiB all-reduce at
    0.182 was refused (CI of stop 49)."""
    busbw = f.value("training.allreduce_busbw")
    links = [s["max"] if s.get("max") is not None else s["value"] for s in f.samples
             if s["metric"] == "network.internode_throughput"]
    if busbw is None:
        return None
    if not links:
        limit, what = single_node_busbw_limit(f)
        if limit is not None and busbw > limit * BUSBW_SLACK:
            return Violation("busbw_within_link", (
                f"all-reduce busbw {busbw:g} GB/s on one node is more than {what} allows "
                f"({limit:.4g} GB/s)"))
        return None
    link = min(links) / 8
    for sample in (s for s in f.samples if s["metric"] in BUSBW_SAMPLES):
        allowed = burst_allowance(sample, link)
        if sample["value"] > link * BUSBW_SLACK * allowed:
            at = f" at {sample['metadata']['size_mib']:g} MiB" if allowed > 1 else ""
            return Violation("busbw_within_link", (
                f"all-reduce busbw {sample['value']:g} GB/s{at} is more than the slowest link's "
                f"{min(links):g} Gbit/s ({link:.4g} GB/s) allows"))
    return None


def burst_allowance(sample: dict[str, Any], link_gbs: float) -> float:
    """How much faster than the link's sustained rate a message of the sample's size may
    cross it: V bytes through a link that carries a burst of B beyond its rate take at least
    (V - B) / rate. 1 without the size and the busbw factor; at most BUSBW_BURST_CAP, so that a
    host's claimed size cannot open the bound wide."""
    meta = sample.get("metadata") or {}
    size, factor = meta.get("size_mib"), meta.get("busbw_factor")
    if not (isinstance(size, (int, float)) and isinstance(factor, (int, float))
            and size > 0 and factor > 0 and link_gbs > 0):
        return 1.0
    volume = size * MIB * factor / 1e9  # GB through each link, as busbw counts
    burst = link_gbs * BUSBW_BURST_S
    return min(BUSBW_BURST_CAP, volume / (volume - burst)) if volume > burst else BUSBW_BURST_CAP


def single_node_busbw_limit(f: Facts) -> tuple[float | None, str]:
    """What ranks on one host can all-reduce at, at most: one direction of the enrolled GPU
    model's NVLink, else its PCIe link; memory bandwidth for the CPU stand-in (gloo)."""
    model, what = _peak(f)
    if model is None:
        return None, what
    if f.gpu_claim in ("none", ""):
        return model.memory_gbs, f"the memory bandwidth of {what}"
    best = max(model.nvlink_gbs / 2, model.pcie_gbs() or 0.0)
    return (best or model.memory_gbs), f"the NVLink or PCIe link of {what}"


def step_at_least_compute(f: Facts) -> Violation | None:
    """A DDP step is its computation plus whatever communication does not overlap."""
    step, compute = f.value("training.step_time"), f.value("training.compute_time")
    if step is not None and compute is not None and step < STEP_SLACK * compute:
        return Violation("step_at_least_compute", (
            f"a DDP step of {step:g} ms is shorter than its computation alone ({compute:g} ms)"))
    return None


def comm_share_matches_step(f: Facts) -> Violation | None:
    """comm share = (step - compute) / step, within the noise of separate loops."""
    step, compute = f.value("training.step_time"), f.value("training.compute_time")
    share = f.value("training.comm_share")
    if step is None or compute is None or share is None or step <= 0:
        return None
    expected = min(1.0, max(0.0, (step - compute) / step))
    if abs(share - expected) > COMM_SHARE_TOLERANCE:
        return Violation("comm_share_matches_step", (
            f"comm share {share:.3g}, but a {step:g} ms step with {compute:g} ms of "
            f"computation spends {expected:.3g} of it communicating"))
    return None


def samples_per_s_matches_step(f: Facts) -> Violation | None:
    """Training throughput = batch x world size / step time."""
    rate, step = f.value("training.samples_per_s"), f.value("training.step_time")
    steps = [s for s in f.samples if s["metric"] == "training.step_time"]
    if rate is not None and step is None:
        # Left out, the step could not contradict the rate: a rate alone is not a figure.
        return Violation("samples_per_s_matches_step", (
            f"{rate:g} samples/s without the step time it was measured from"))
    if rate is None or step is None or step <= 0:
        return None
    world = steps[0]["metadata"].get("world_size")
    most = f.params.get("training_ranks", 2) * f.runs_in_job
    if not isinstance(world, int) or isinstance(world, bool) or not 1 <= world <= most:
        return Violation("samples_per_s_matches_step", (
            f"world size {world!r}: this job runs 1 to {most:g} training processes"))
    expected = f.params.get("training_batch", 32) * world / (step / 1000)
    if abs(rate - expected) > THROUGHPUT_TOLERANCE * expected:
        return Violation("samples_per_s_matches_step", (
            f"{rate:g} samples/s, but {world} ranks of batch {f.params.get('training_batch', 32):g}"
            f" at {step:g} ms per step make {expected:.4g}"))
    return None


def _peak(f: Facts) -> tuple[gpu_models.GpuModel | None, str]:
    if f.gpu_claim in ("none", ""):
        return gpu_models.cpu(), "this host's CPU (it claims no NVIDIA GPU)"
    model = gpu_models.lookup(f.gpu_claim)
    return model, f"the {model.name} it claims ({model.source})" if model else f.gpu_claim


def unlisted(check: str, f: Facts, what: str) -> Violation:
    """A model the reference table does not list fails closed: nothing bounds its figures."""
    return Violation(check, (f"the node claims a {f.gpu_claim!r}, which the reference table "
                             f"(contract/data/gpu_models.yaml) does not list: its {what} cannot "
                             "be bounded"))


def within_gpu_peak(f: Facts) -> Violation | None:
    """Matmul and memory bandwidth under the published peak of the claimed GPU model."""
    present = [s for s in f.samples if s["metric"].startswith("gpu.")]
    if not present:
        return None
    model, what = _peak(f)
    if model is None:
        return unlisted("within_gpu_peak", f, "figures")
    for s in present:
        if s["metric"] == "gpu.memcpy_bw":
            peak = model.memory_gbs
        elif s["metric"] == "gpu.matmul_tflops_bf16":
            # Where the best measured matmul of the model is published (its attainable
            # fraction), no board beats it by more than software drift (ATTAINABLE_SLACK).
            peak = model.bf16 * (model.matmul_attainable * ATTAINABLE_SLACK / PEAK_SLACK
                                 if model.matmul_attainable else 1.0)
        else:
            peak = model.tf32 if s["metadata"].get("allow_tf32") else model.fp32
        if found := over(s, peak * PEAK_SLACK):
            return Violation("within_gpu_peak", (
                f"{s['metric']} {found[1]:g} {s['unit']} is above the published peak of "
                f"{what}: {peak:g}"))
    return None


def training_rate(model: gpu_models.GpuModel) -> float:
    """The fastest a device trains the probe's workloads, TFLOP/s. The probe trains in fp32, and
    a host's torch may run its matmuls and convolutions in TF32 (NVIDIA's containers do by
    default), so the faster of the two peaks; at the model's best published measured matmul
    fraction (MAMF, taken for TF32 too: the same tensor cores) where the table has one."""
    peak = max(model.fp32, model.tf32)
    if model.matmul_attainable:
        return peak * min(1.0, model.matmul_attainable * ATTAINABLE_SLACK)
    return peak


def step_within_attainable(f: Facts) -> Violation | None:
    """A training step takes at least its FLOPs over the rate the enrolled device attains.

    The FLOPs are the platform's own count for the workload it asked for (the job's
    training_model, model_mib and training_batch; contract/training_shapes.py), never the
    host's: a typed 1 ms step of GPT-2 small is refused on any GPU."""
    times = [s for s in f.samples if s["metric"] in STEP_TIME_METRICS]
    if not times:
        return None
    model, what = _peak(f)
    if model is None:
        return unlisted("step_within_attainable", f, "step times")
    name = choice("training_model", f.params.get("training_model", PARAMS["training_model"].default))
    model_mib = int(f.params.get("model_mib", PARAMS["model_mib"].default))
    batch = int(f.params.get("training_batch", PARAMS["training_batch"].default))
    flops = training_shapes.workload_shape(name, model_mib).train_flops(batch)
    rate = training_rate(model)
    floor_ms = flops / (rate * 1e12) * 1000
    for s in times:
        if found := under(s, floor_ms):
            return Violation("step_within_attainable", (
                f"{s['metric']} {found[0]} {found[1]:g} ms for one step of {batch} samples of "
                f"the {name} workload ({model_mib} MiB, {flops:.3g} FLOPs) is faster than "
                f"{what} attains ({rate:.4g} TFLOP/s): at least {floor_ms:.3g} ms"))
    return None


def utilisation_needs_power(f: Facts) -> Violation | None:
    """A GPU busy above idle draws power above idle (NVML reports both)."""
    util = f.value("training.gpu_util_mean")
    if util is None:
        return None
    if f.gpu_claim in ("none", ""):
        return Violation("utilisation_needs_power",
                         f"GPU utilisation {util:g}% from a host that claims no NVIDIA GPU")
    if util <= UTIL_IDLE_PERCENT:
        return None
    power = f.value("training.gpu_power_mean")
    model = gpu_models.lookup(f.gpu_claim)
    idle = model.idle_w if model else 0.0
    if power is None or power <= idle:
        return Violation("utilisation_needs_power", (
            f"GPU utilisation {util:g}% with a mean power of "
            f"{'none reported' if power is None else f'{power:g} W'}, not above the "
            f"{f.gpu_claim}'s idle draw ({idle:g} W)"))
    return None


CHECKS: list[Check] = [
    spread_in_order, littles_law, iops_within_devices, sender_at_least_receiver, within_nic_rate,
    busbw_within_link,
    step_at_least_compute, comm_share_matches_step, samples_per_s_matches_step,
    step_within_attainable, within_gpu_peak, utilisation_needs_power,
]


def violations(facts: Facts, checks: Iterable[Check] = CHECKS) -> list[Violation]:
    return [v for check in checks if (v := check(facts)) is not None]
