"""`make bench-accuracy`: do the figures the platform stores match links we shaped ourselves?

Builds a lab (root: namespaces, tc tbf rates, latency relays), runs the network and the
training probes through the real platform, reads what it stored through the API, and
prints one line per case: the value we set, the value stored, their ratio, and whether it
is within target. Exits non-zero if any case misses.

Targets (issue "The lab"):
* TCP throughput within 5% of the shaped rate, never above it by more than 2%.
* TCP RTT within 0.5 ms or 5% (the larger) of the latency added to the path's own round trip
  (measured beside it, without the relay).
* All-reduce busbw at the largest message at least 90% of the shaped rate, 2 and 4 ranks.
* DDP step time explained by compute + message bytes / rate within 15%.
* The workload estimate (issue "What would my training job take and cost here?"): for held-out
  DDP configurations (link rates 200 Mbit/s to 2 Gbit/s, 2 to 4 ranks, three model sizes) the
  estimator's step time, from the figures the run measured apart from its DDP steps (the
  all-reduce curve across the ranks, the no-sync step as the nodes' compute), within 20% of
  the DDP step the probe timed. Nothing of the model was fitted to these cases.

`python -m perf.accuracy estimate` runs the estimate cases alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from board import estimate
from lab import netlab
from lab.platform_stack import REPO, PlatformStack, say
from lab.stack import LabStack

VAR = REPO / "var" / "accuracy"
RESULTS = Path(__file__).resolve().parent / "results"
PROVIDER = "Lab Provider"
DDP_RATE_MBIT = 500
SPEC: dict[str, Any] = {"name": "acc", "hosts": [
    {"name": "t100", "region": "hangzhou", "provider": PROVIDER, "rate_mbit": 100, "delay_ms": 5},
    {"name": "t500", "region": "hangzhou", "provider": PROVIDER, "rate_mbit": 500, "delay_ms": 20},
    {"name": "t2000", "region": "hangzhou", "provider": PROVIDER, "rate_mbit": 2000},
    *({"name": f"d{i}", "region": "hangzhou", "provider": PROVIDER, "rate_mbit": DDP_RATE_MBIT}
      for i in range(1, 5)),
    {"name": "ref", "kind": "reference", "region": "hangzhou"},
]}
NETWORK = {"iperf3_duration": 5, "iperf3_omit": 1, "repetitions": 3, "ping_count": 20}
TRAINING = {"training_ranks": 1, "model_mib": 8, "train_steps": 10, "training_batch": 8,
            "allreduce_max_mib": 64, "dataloader_samples": 128, "repetitions": 3}


@dataclass
class Case:
    name: str
    set_value: float
    stored: float
    unit: str
    ok: bool

    words: tuple[str, str] = ("set", "stored")
    detail: dict[str, Any] | None = None  # what a prediction stood on (results file only)

    def line(self) -> str:
        ratio = self.stored / self.set_value if self.set_value else float("nan")
        said, found = self.words
        return (f"{self.name}: {said} {self.set_value:.4g} {self.unit}, {found} {self.stored:.4g} "
                f"{self.unit}, ratio {ratio:.3f} {'ok' if self.ok else 'MISS'}")


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.headers = {"Authorization": f"Token {token}"}

    def run_job(self, nodes: list[int], suite: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        response = requests.post(f"{self.base}/api/v1/benchmarks", headers=self.headers,
                                 json={"nodes": nodes, "suite": suite, "params": params}, timeout=10)
        response.raise_for_status()
        url = response.json()["url"]
        while True:
            job = requests.get(url, headers=self.headers, timeout=10).json()
            if job["status"] not in ("queued", "running"):
                break
            time.sleep(1)
        for run in job["runs"]:
            if run["status"] != "succeeded":
                raise SystemExit(f"{suite} run on {run['node']['name']} {run['status']}: {run['error']}")
        runs: list[dict[str, Any]] = job["runs"]
        return runs


def value(run: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(s for s in run["samples"] if s["metric"] == metric)


def network_cases(api: Api, nodes: dict[str, int], lab: LabStack) -> list[Case]:
    cases = []
    for host in SPEC["hosts"]:
        if not str(host["name"]).startswith("t"):
            continue
        # One node at a time: the cases must not share the bridge or the two cores.
        (run,) = api.run_job([nodes[str(host["name"])]], "network", NETWORK)
        rate = float(host["rate_mbit"]) / 1000
        gbps = value(run, "network.tcp_throughput")["value"]
        cases.append(Case(f"throughput {host['name']}", rate, gbps, "Gbit/s",
                          0.95 * rate <= gbps <= 1.02 * rate))
        if host.get("delay_ms"):
            # The shaped path's RTT is the path's own round trip plus the added delay.
            delay = float(host["delay_ms"])
            expected = lab.base_rtt(str(host["name"]), "ref") + delay
            rtt = value(run, "network.tcp_rtt")["value"]
            cases.append(Case(f"tcp rtt {host['name']}", expected, rtt, "ms",
                              abs(rtt - expected) <= max(0.5, 0.05 * delay)))
    return cases


def training_cases(api: Api, nodes: dict[str, int]) -> list[Case]:
    rate_gbs = DDP_RATE_MBIT * 1e6 / 8 / 1e9
    cases = []
    for ranks in (2, 4):
        runs = api.run_job([nodes[f"d{i}"] for i in range(1, ranks + 1)], "training", TRAINING)
        busbw = value(runs[0], "training.allreduce_busbw_largest")["value"]
        cases.append(Case(f"busbw {ranks} ranks", rate_gbs, busbw, "GB/s", busbw >= 0.9 * rate_gbs))
        if ranks == 2:
            step = value(runs[0], "training.step_time")
            compute = value(runs[0], "training.compute_time")["value"]
            model_bytes = step["metadata"]["model_params"] * 4
            wire = 2 * (ranks - 1) / ranks * model_bytes / (rate_gbs * 1e9) * 1000  # ms
            predicted = compute + wire
            cases.append(Case("ddp step time 2 ranks (vs compute + bytes/rate)", predicted,
                              step["value"], "ms", abs(step["value"] / predicted - 1) <= 0.15))
    return cases


# (Mbit/s, ranks, model MiB): the rates, rank counts and model sizes the issue names, in
# combinations chosen before any was run.
ESTIMATE_CASES = [(200, 2, 8), (200, 4, 24), (500, 2, 24), (500, 3, 64), (1000, 2, 64),
                  (1000, 4, 8), (1000, 3, 24), (2000, 2, 24), (2000, 4, 64)]
ESTIMATE_TRAINING = {"training_ranks": 1, "train_steps": 8, "training_batch": 8,
                     "allreduce_max_mib": 32, "dataloader_samples": 64, "repetitions": 3}
ESTIMATE_WITHIN = 0.20


def predicted_step(run: dict[str, Any], ranks: int) -> estimate.Estimate:
    """The estimator's DDP step from what the run measured apart from its DDP steps: the
    all-reduce curve across the ranks and the no-sync step (the nodes' compute of this
    model). An MLP trains at 6 FLOPs per parameter per sample."""
    step = value(run, "training.step_time")
    params = float(step["metadata"]["model_params"])
    batch = int(step["metadata"]["batch_size"])
    compute_s = value(run, "training.compute_time")["value"] / 1000
    curve = value(run, "training.allreduce_busbw")["metadata"]["curve"]
    job = estimate.Workload("mlp", params=params, train_flops_per_sample=6 * params,
                            global_batch=batch * ranks, steps=1, nodes=ranks, precision="fp32")
    measured = estimate.Measured(
        tflops=job.global_batch * job.train_flops_per_sample / (ranks * compute_s) / 1e12,
        busbw_curve=[(row["size_mib"] * 2**20, row["busbw_gbs"]) for row in curve],
        on_cpu=step["metadata"].get("device") == "cpu")
    return estimate.estimate(job, measured, what_ifs=False)


def estimate_cases(api: Api, nodes: dict[str, int], lab: netlab.NetLab) -> list[Case]:
    cases = []
    for rate, ranks, model_mib in ESTIMATE_CASES:
        hosts = [f"d{i}" for i in range(1, ranks + 1)]
        for host in hosts:
            lab.shape(host, rate)
        runs = api.run_job([nodes[h] for h in hosts], "training",
                           ESTIMATE_TRAINING | {"model_mib": model_mib})
        found = predicted_step(runs[0], ranks)
        predicted = found.step_s * 1000
        measured = value(runs[0], "training.step_time")["value"]
        case = Case(f"estimate {rate} Mbit/s, {ranks} ranks, {model_mib} MiB model", predicted,
                    measured, "ms", abs(measured / predicted - 1) <= ESTIMATE_WITHIN,
                    ("predicted", "measured"),
                    {"parts_ms": {k: v * 1000 for k, v in found.parts.items()},
                     "sync_total_ms": found.sync_total_s * 1000})
        say(case.line())
        cases.append(case)
    for host in (f"d{i}" for i in range(1, 5)):
        lab.shape(host, DDP_RATE_MBIT)
    return cases


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    only_estimate = args[:1] == ["estimate"]
    if args[1:]:  # `estimate 1,2,5`: those cases only (1 is the first)
        picked = {int(i) - 1 for i in args[1].split(",")}
        ESTIMATE_CASES[:] = [c for i, c in enumerate(ESTIMATE_CASES) if i in picked]
    if os.geteuid() != 0:
        print("bench-accuracy needs root: the lab uses ip netns and tc", file=sys.stderr)
        return 2
    VAR.mkdir(parents=True, exist_ok=True)
    platform = PlatformStack(VAR, "benchaccuracy")
    spec = netlab.LabSpec.from_dict(SPEC)
    lab = LabStack(netlab.NetLab(spec), VAR / "lab", 0, 0)
    cases: list[Case] = []
    try:
        platform.start()
        seed = json.loads(platform.manage("seed_demo", f"--provider={PROVIDER}=local_dc"))
        lab.api_port = int(platform.api.rsplit(":", 1)[1])
        lab.redis_port = platform.redis_port
        lab.up()
        provider = seed["providers"][PROVIDER]
        lab.enrol_nodes(platform.api, lambda name, kind: (provider["id"], provider["token"]))
        lab.register_references(platform.register_endpoint)
        api = Api(platform.api, seed["buyer_token"])
        nodes = {name: n.node_id for name, n in lab.nodes.items()}
        if not only_estimate:
            say("network cases (one node at a time)")
            cases += network_cases(api, nodes, lab)
            say("training cases (DDP across lab nodes, one rank each)")
            cases += training_cases(api, nodes)
        say("estimate cases (the workload estimate against DDP runs on reshaped links)")
        cases += estimate_cases(api, nodes, lab.lab)
    finally:
        lab.down()
        platform.stop()
    for case in cases:
        print(case.line())
    passed = sum(c.ok for c in cases)
    print(f"accuracy: {passed}/{len(cases)} cases within target")
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "estimate-accuracy.json" if only_estimate else "accuracy.json"
    (RESULTS / name).write_text(json.dumps([c.__dict__ for c in cases], indent=2))
    return 0 if passed == len(cases) and cases else 1


if __name__ == "__main__":
    sys.exit(main())
