"""Validation of results posted by a host: untrusted data, checked before anything is stored."""

from __future__ import annotations

import json
import math
from typing import Any

from benchmarks import metrics

MAX_SAMPLES = 2000
MAX_METADATA_BYTES = 16_384
SPREAD_FIELDS = ("p5", "p95", "min", "max")


def sample_errors(sample: dict[str, Any]) -> dict[str, str]:
    """Field -> message for everything wrong with one posted sample (empty when fine)."""
    errors: dict[str, str] = {}
    name = sample.get("metric")
    metric = metrics.METRICS.get(name) if isinstance(name, str) else None
    if metric is None:
        return {"metric": f"unknown metric {name!r}"}
    if sample.get("unit") != metric.unit:
        errors["unit"] = f"{metric.name} is reported in {metric.unit!r}, not {sample.get('unit')!r}"
    for field in ("value", *SPREAD_FIELDS, "cv"):
        value = sample.get(field)
        if value is None and field != "value":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            errors[field] = "must be a finite number"
        elif field != "cv" and not metric.low <= value <= metric.high:
            errors[field] = (f"{value:g} {metric.unit} is outside the plausible range "
                             f"{metric.low:g}..{metric.high:g} for {metric.name}")
        elif field == "cv" and value < 0:
            errors[field] = "must not be negative"
    n = sample.get("n", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        errors["n"] = "must be a positive integer"
    metadata = sample.get("metadata", {})
    if not isinstance(metadata, dict):
        errors["metadata"] = "must be an object"
    elif len(json.dumps(metadata)) > MAX_METADATA_BYTES:
        errors["metadata"] = f"larger than {MAX_METADATA_BYTES} bytes"
    return errors


def clean_sample(sample: dict[str, Any]) -> dict[str, Any]:
    """The fields we store, with defaults, from an already validated sample."""
    return {
        "metric": sample["metric"], "value": float(sample["value"]), "unit": sample["unit"],
        "n": sample.get("n", 1), "metadata": sample.get("metadata", {}),
        **{f: sample.get(f) for f in (*SPREAD_FIELDS, "cv")},
    }


THROUGHPUT_METRICS = ("network.tcp_throughput", "network.tcp_throughput_reverse",
                      "network.tcp_throughput_sent", "network.tcp_throughput_parallel",
                      "network.internode_throughput")
LOOPBACK_HOSTS = ("127.", "::1", "localhost")
# TCP goodput can't beat the link; allow for rounding in the driver's nominal speed.
LINK_SLACK = 1.02


def link_errors(samples: list[dict[str, Any]], inventory: dict[str, Any]) -> dict[str, str]:
    """Throughput the host's own fastest NIC could not have carried (loopback aside)."""
    speeds = [n.get("speed_mbps") for n in inventory.get("nics", []) if isinstance(n, dict)]
    known = [s for s in speeds if isinstance(s, (int, float)) and s > 0]
    if not known:
        return {}
    limit_gbps = max(known) / 1000 * LINK_SLACK
    errors = {}
    for i, sample in enumerate(samples):
        host = str(sample.get("metadata", {}).get("peer_host", ""))
        if sample["metric"] in THROUGHPUT_METRICS and not host.startswith(LOOPBACK_HOSTS):
            for field in ("value", "max", "p95"):
                value = sample.get(field)
                if isinstance(value, (int, float)) and value > limit_gbps:
                    errors[f"{i}.{field}"] = (
                        f"{value:g} Gbit/s is more than this host's fastest NIC carries "
                        f"({max(known)} Mbit/s by its own inventory)")
    return errors
