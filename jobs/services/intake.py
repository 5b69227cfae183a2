"""Validation of results posted by a host: untrusted data, checked before anything is stored."""

from __future__ import annotations

import json
import math
from typing import Any

from contract import metrics
from contract.suites import SUITES

MAX_SAMPLES = 2000
MAX_METADATA_BYTES = 16_384
# The all-reduce curve the estimate reads: the probe measures powers of two from 1 MiB up to
# allreduce_max_mib (at most 4096: 13 sizes). More is not a measurement of this platform's.
MAX_CURVE_POINTS = 32
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
    elif isinstance(curve := metadata.get("curve"), list) and len(curve) > MAX_CURVE_POINTS:
        errors["metadata"] = (f"a curve of {len(curve)} points; the probe measures at most "
                              f"{MAX_CURVE_POINTS}")
    return errors


def clean_sample(sample: dict[str, Any]) -> dict[str, Any]:
    """The fields we store, with defaults, from an already validated sample."""
    return {
        "metric": sample["metric"], "value": float(sample["value"]), "unit": sample["unit"],
        "n": sample.get("n", 1), "metadata": sample.get("metadata", {}),
        **{f: sample.get(f) for f in (*SPREAD_FIELDS, "cv")},
    }


def declared_errors(samples: list[dict[str, Any]], suite: str) -> dict[str, str]:
    """Metrics the job's probes do not produce, and a metric given twice for one peer."""
    probes = SUITES.get(suite, ())
    # A probe measures its own family of metrics (contract.metrics), the one it is named for.
    produced = {m for name in probes for m in metrics.family(name)}
    errors: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for i, sample in enumerate(samples):
        metric, peer = sample["metric"], str(sample["metadata"].get("peer", ""))
        if metric not in produced:
            errors[f"{i}.metric"] = (f"{metric} is not measured by this job's probes "
                                     f"({', '.join(probes)}): a {suite} run cannot report it")
        elif (metric, peer) in seen:
            errors[f"{i}.metric"] = (f"{metric} is given twice for "
                                     f"{'peer ' + peer if peer else 'this node'}")
        seen.add((metric, peer))
    return errors
