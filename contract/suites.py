"""Suites a request may ask for, and the parameters (with bounds) each accepts.

Defaults follow the field's usual practice; a request may override them within bounds,
which the platform validates before anything is queued.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    default: float
    low: float
    high: float
    integer: bool = True
    help: str = ""
    # A choice among names: the value is the chosen name's index (so every resolved
    # parameter stays a number); a request may give the name or the index.
    choices: tuple[str, ...] = ()


def choice(name: str, value: float) -> str:
    """The name a choice parameter's resolved value stands for."""
    return PARAMS[name].choices[int(value)]


TRAINING_MODELS = ("mlp", "transformer", "convnet")


PARAMS: dict[str, Param] = {
    "ping_count": Param(10, 3, 1000, help="ICMP echo requests per peer"),
    "ping_interval": Param(0.2, 0.01, 5.0, integer=False, help="seconds between echo requests"),
    "iperf3_duration": Param(10, 1, 120, help="seconds per iperf3 test (iperf3 -t)"),
    "iperf3_omit": Param(1, 0, 10, help="seconds of TCP slow start not counted (iperf3 -O)"),
    "iperf3_parallel": Param(4, 1, 128, help="streams of the parallel iperf3 test (iperf3 -P)"),
    "repetitions": Param(5, 1, 20, help="times each measurement repeats at least"),
    "max_repetitions": Param(0, 0, 40, help="times a measurement repeats at most while the "
                             "95 percent interval of its median is wider than the precision "
                             "(0: twice repetitions; never fewer than repetitions)"),
    "precision": Param(2, 0.5, 50, integer=False,
                       help="+/- percent of the median its 95 percent interval must reach; a "
                       "figure that does not in max_repetitions says noisy "
                       "(contract/precision.py)"),
    "training_ranks": Param(2, 1, 64, help="DDP processes per host (capped at its GPU count)"),
    "model_mib": Param(16, 1, 4096, help="MiB of fp32 parameters in the DDP model (the "
                       "transformer and convnet take the largest GPT-2 or ResNet-50 shape "
                       "that fits: 475 GPT-2 small, 1354 medium, 98 ResNet-50)"),
    "training_model": Param(0, 0, len(TRAINING_MODELS) - 1, choices=TRAINING_MODELS,
                            help="what DDP trains: mlp (0), transformer (1: GPT-2-shaped "
                            "decoder) or convnet (2: ResNet-50-shaped); the name or its number"),
    "train_steps": Param(20, 3, 10_000, help="timed DDP steps (after 3 warm-up steps)"),
    "training_batch": Param(32, 1, 65_536, help="samples per rank per DDP step"),
    "allreduce_max_mib": Param(256, 1, 4096, help="largest all-reduce message; sizes double from 1 MiB"),
    "dataloader_samples": Param(2048, 64, 1_000_000, help="samples read per DataLoader setting"),
    "nvml_period_ms": Param(100, 10, 10_000, help="GPU utilisation sampling period"),
    "training_timeout": Param(1800, 30, 86_400, help="seconds before the training ranks are killed"),
    "matmul_n": Param(4096, 256, 16_384, help="square matmul size (n x n @ n x n)"),
    "memcpy_mib": Param(1024, 1, 16_384, help="MiB copied per device memory copy"),
    "fio_runtime": Param(10, 1, 300, help="seconds per fio run (fio --runtime, time based)"),
    "fio_size_mib": Param(256, 4, 65536,
                          help="MiB of fio test files, split across jobs (at least 1 MiB each)"),
    "fio_numjobs": Param(32, 1, 256, help="parallel fio jobs (fio --numjobs)"),
    "checkpoint_mib": Param(1024, 1, 65536, help="MiB of tensors saved and loaded as a checkpoint"),
    "smallfile_count": Param(20000, 10, 1_000_000, help="files in the small-file dataset"),
    "smallfile_kib": Param(16, 1, 10240, help="KiB per file in the small-file dataset"),
    "noop_seconds": Param(0, 0, 600, integer=False, help="how long the no-op probe sleeps"),
    "noop_command_seconds": Param(0, 0, 3600, integer=False,
                                  help="the no-op probe runs `sleep N` (tests of time limits)"),
    "seed": Param(0, 0, 2**31 - 1, help="random seed of the probes' data (chosen by the platform "
                  "for certification runs)"),
    "probe_time_limit": Param(1800, 5, 7200, help="seconds a probe may run before it is killed"),
    "barrier_timeout": Param(300, 5, 3600,
                             help="multi-node: seconds to wait for the other nodes at each step"),
}

# A profile changes the defaults; a request's own overrides still win. Results are only
# compared within one profile, since they were measured differently.
PROFILES: dict[str, dict[str, float]] = {
    "default": {},
    # The full suite in under 3 minutes per node on a 2-core machine.
    # A quick look states a looser precision: +/- 5% is three steady repetitions' reach.
    "quick": {"iperf3_duration": 2, "iperf3_omit": 0, "repetitions": 3, "precision": 5,
              "ping_count": 10,
              "fio_runtime": 2, "fio_size_mib": 64, "checkpoint_mib": 128,
              "smallfile_count": 2000, "model_mib": 8, "train_steps": 10,
              "allreduce_max_mib": 32, "dataloader_samples": 512, "matmul_n": 1024,
              "memcpy_mib": 128, "training_timeout": 300},
    # The platform's scheduled re-tests (the "retest" suite): about a minute on a node, a few
    # times a day, so that a figure's stability across the day can be judged.
    "retest": {"iperf3_duration": 2, "iperf3_omit": 0, "repetitions": 2, "precision": 5,
               "ping_count": 10,
               "fio_runtime": 2, "fio_size_mib": 64, "checkpoint_mib": 16,
               "smallfile_count": 200},
}

SUITES: dict[str, tuple[str, ...]] = {
    "network": ("network",),
    "storage": ("storage",),
    "training": ("training",),
    "gpu": ("gpu",),
    "full": ("network", "storage", "training", "gpu"),
    # Reference throughput and RTT, short fio: what the platform re-tests at random hours.
    "retest": ("network", "storage"),
    # A probe that measures nothing: for benchmarking the platform and for tests.
    "noop": ("noop",),
}


# Suites whose figures can rank; the no-op measures nothing and never does.
MEASURING_SUITES = frozenset(SUITES) - {"noop"}
# Parameters the platform sets on its own runs without changing what is measured (how).
PLATFORM_CHOSEN = frozenset({"seed"})
# What a run that does not rank is labelled with, for its owner.
UNRANKED_LABEL = "unranked: custom parameters"


def is_canonical(suite: str, overrides: dict[str, Any], profile: str) -> bool:
    """A published profile run as published: the only runs whose figures rank.

    Any override (a 4 MiB fio file set, a 1 s iperf3 test) measures something else,
    usually something flattering, so those runs are kept for their owner, unranked.
    """
    return (suite in MEASURING_SUITES and profile in PROFILES
            and set(overrides) <= PLATFORM_CHOSEN)


class InvalidParams(ValueError):
    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


# One iperf3 test's turn at a reference: its length, its omitted start, and the time its
# connection and busy retries take. The probe asks for this much; the platform grants no
# more, and a run that holds a turn longer while others wait must let go.
TURN_SLACK_S = 20.0


def turn_seconds(params: dict[str, float]) -> float:
    return float(params["iperf3_duration"]) + float(params["iperf3_omit"]) + TURN_SLACK_S


def resolve_params(overrides: dict[str, Any], profile: str = "default") -> dict[str, float]:
    """The profile's defaults with the request's overrides applied; raises InvalidParams."""
    errors: dict[str, str] = {}
    if profile not in PROFILES:
        raise InvalidParams({"profile": f"unknown profile; choose one of {sorted(PROFILES)}"})
    resolved: dict[str, float] = {name: p.default for name, p in PARAMS.items()}
    resolved.update(PROFILES[profile])
    for name, value in overrides.items():
        spec = PARAMS.get(name)
        if spec is None:
            errors[name] = f"unknown parameter; known: {', '.join(sorted(PARAMS))}"
            continue
        if spec.choices:
            if value in spec.choices:
                value = spec.choices.index(value)
            elif isinstance(value, bool) or value not in range(len(spec.choices)):
                known = ", ".join(f"{c} ({i})" for i, c in enumerate(spec.choices))
                errors[name] = f"unknown choice {value!r}; choose one of {known}"
                continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors[name] = "must be a number"
            continue
        if spec.integer and value != int(value):
            errors[name] = "must be a whole number"
            continue
        if not spec.low <= value <= spec.high:
            errors[name] = f"must be between {spec.low:g} and {spec.high:g}"
            continue
        resolved[name] = value
    if errors:
        raise InvalidParams(errors)
    return resolved
