"""A posted result's way in, in order: validation (each sample's shape, what the job's
probes can report), the reference records awaited and the evidence they give, the
consistency rules, and what storing a result writes besides its run (the samples, the
node's inventory). lifecycle.finish calls it under the run's lock; nothing here changes a
run's state. Everything a host posts is untrusted and checked before anything is stored."""

from __future__ import annotations

import json
import math
import time
import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from config.errors import Invalid
from contract import metrics
from contract.suites import SUITES, resolve_params
from fleet.models import HostKey, Node, ReferenceEndpoint
from fleet.services import generation, identity
from jobs.models import ReferenceRecordUse, ReferenceTurn, Run, Sample
from jobs.services import consistency, coordination, evidence, reference_records
from jobs.signals import hardware_changed

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
    elif "interval" in metadata and (why := interval_error(metadata, sample.get("value"))):
        errors["metadata.interval"] = why
    return errors


def interval_error(metadata: dict[str, Any], value: Any) -> str:
    """What is wrong with a figure's stated 95% interval of its median (contract/precision.py):
    shown beside the figure, so it must at least be two numbers around it."""
    reached = metadata["interval"]
    if (not isinstance(reached, list) or len(reached) != 2
            or not all(isinstance(e, (int, float)) and not isinstance(e, bool)
                       and math.isfinite(e) for e in reached)):
        return "must be [low, high], two finite numbers"
    if isinstance(value, (int, float)) and not reached[0] <= value <= reached[1]:
        return f"[{reached[0]:g}, {reached[1]:g}] does not hold the figure's median {value:g}"
    return ""


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


class Refused(Exception):
    """A result that breaks a consistency rule: refused whole, and its run fails."""

    def __init__(self, found: list[consistency.Violation]) -> None:
        super().__init__("; ".join(map(str, found)))
        self.found = found


def await_reference_records(references: dict[str, ReferenceEndpoint],
                             samples: list[dict[str, Any]]) -> None:
    """Before a result is judged, the records its references' servers wrote until now must
    be in: the agent on each reference's host hands them in every fraction of a second.
    Waited for outside the transaction, so no row stays locked meanwhile."""
    peers = {str(s["metadata"].get("peer", "")) for s in samples
             if str(s.get("metric", "")).startswith("network.") and isinstance(s.get("metadata"), dict)}
    endpoints = [e for peer, e in references.items() if peer in peers]
    if endpoints:
        reference_records.await_records(endpoints, time.time())


def review(run: Run, node: Node, attempt_id: uuid.UUID, samples: list[dict[str, Any]],
           inventory: dict[str, Any], now: Any,
           references: dict[str, ReferenceEndpoint]) -> None:
    """Check a succeeded result (``references``: the node's, by peer name, when it has
    network samples) and spend the reference records it presents on it. Raises Invalid for
    what the job cannot have measured, Refused for the rest."""
    job = run.job
    declared = declared_errors(samples, job.suite)
    if declared:
        raise Invalid("; ".join(declared.values()), errors=declared)
    since = run.started_at.timestamp() if run.started_at else 0.0
    params = resolve_params(job.params, job.profile)
    known = node.known_addresses()
    turns = tuple(evidence.Turn(t.endpoint_id, t.started_at.timestamp(), t.ended_at.timestamp())
                  for t in ReferenceTurn.objects.filter(run=run, attempt=attempt_id)
                  ) if references else ()
    binding = evidence.Binding(addresses=frozenset(known), params=params, turns=turns,
                               exclusive=_exclusive(node, known) if turns else None)
    reviewed = evidence.review(samples, references, attempt_id, since, now.timestamp(), binding)
    found = [consistency.Violation("reference_mismatch", m.message()) for m in reviewed.mismatches]
    found += [consistency.Violation(check, message) for check, message in reviewed.refusals]
    found += _reused(run, reviewed.spent)
    facts = consistency.Facts(
        samples=samples, params=params,
        nic_mbps=list(node.enrolled_nic_mbps or []),
        disks=list(node.enrolled_disks or []),
        loopback_peers=_loopback_peers(run, references, samples),
        gpu_claim=gpu_model(node, inventory),
        runs_in_job=(Run.objects.filter(job_id=run.job_id).count()
                     if any(s["metric"].startswith("training.") for s in samples) else 1))
    found += consistency.violations(facts)
    claimed = Node.gpu_model_of(inventory) if inventory else None
    if node.gpu_model and claimed is not None and claimed != node.gpu_model:
        found.append(consistency.Violation("gpu_model_changed", (
            f"the result's inventory names {claimed!r}, but the node enrolled with "
            f"{node.gpu_model!r}: the GPU model is fixed at enrolment (enrol the host again "
            "if its boards changed)")))
    if found:
        raise Refused(found)
    _spend(run, reviewed.spent)
    if node.is_trial_agent:
        evidence.by_trial_agent(samples, node.pk)


def _reused(run: Run, spent: list[tuple[int, str]]) -> list[consistency.Violation]:
    """The reference records this result presents that another run already spent."""
    if not spent:
        return []
    used = ReferenceRecordUse.objects.filter(
        endpoint_id__in={e for e, _ in spent},
        key__in=[k for _, k in spent]).exclude(run=run).values_list("key", "run_id")
    return [consistency.Violation("reference_record_reused", (
        f"the reference's record of iperf3 test {key} was already presented by run {other}"))
        for key, other in used]


def _spend(run: Run, spent: list[tuple[int, str]]) -> None:
    """Spend the records on this run. _reused cannot see a result judged at the same moment
    (neither is stored yet), so the unique constraint decides: the second writer's insert
    waits for the first's commit, fails, and its result is refused."""
    mine = set(ReferenceRecordUse.objects.filter(run=run).values_list("endpoint_id", "key"))
    uses = [ReferenceRecordUse(endpoint_id=e, key=k, run=run) for e, k in dict.fromkeys(spent)
            if (e, k) not in mine]
    if not uses:
        return
    try:
        with transaction.atomic():  # a savepoint: the refusal below still commits
            ReferenceRecordUse.objects.bulk_create(uses)
    except IntegrityError as exc:
        raise Refused([consistency.Violation("reference_record_reused", (
            "another run presented the reference's record of the same iperf3 test at the "
            "same moment, and was stored first"))]) from exc


def _exclusive(node: Node, known: set[str]) -> frozenset[str]:
    """The node's addresses no other active node shares. Only loopback can be shared (a
    fleet on one machine, ALLOW_LOOPBACK_ADDRESSES): a network address another node also
    claims stays the node's, so a provider cannot blind the check by enrolling a twin."""
    loopback = [a for a in known if consistency.is_loopback(a)]
    shared = set()
    if loopback:
        others = (Node.objects.filter(status=Node.Status.ACTIVE).exclude(pk=node.pk)
                  .filter(Q(address__in=loopback) | Q(observed_address__in=loopback))
                  .values_list("address", "observed_address"))
        shared = {a for pair in others for a in pair if a in loopback}
    return frozenset(known - shared)


def gpu_model(node: Node, inventory: dict[str, Any]) -> str:
    """The model a result is judged against: the one enrolled, never one a result names (a
    claimed H200 let typed 900 TFLOP/s pass). Nodes enrolled before the model was recorded
    take their first result's."""
    if node.gpu_model:
        return node.gpu_model
    return Node.gpu_model_of(inventory) if inventory else "none"


def _loopback_peers(run: Run, references: dict[str, ReferenceEndpoint],
                    samples: list[dict[str, Any]]) -> set[str]:
    """Peers the platform itself knows to be on the host's loopback (not a network path)."""
    if not any(s["metric"] in consistency.THROUGHPUT_METRICS for s in samples):
        return set()
    hosts = {name: e.host for name, e in references.items()}
    if any(s["metric"] == "network.internode_throughput" for s in samples):
        hosts |= {f"node:{n['name']}": n["host"] or "" for n in coordination.mesh(run.job)}
    return {name for name, host in hosts.items() if consistency.is_loopback(host)}


def note_new_boards(node: Node, inventory: dict[str, Any]) -> None:
    """GPU boards the node did not enrol with are a new inventory: kept among its keys (the
    host is still recognised by them), and its certification is re-opened."""
    boards = {k for k in identity.keys(inventory) if k.startswith("gpu-uuid:")}
    if not boards or node.is_trial_agent:  # an agent is an instance of its node, not a host
        return
    known = set(HostKey.objects.filter(node=node, key__startswith="gpu-uuid:")
                .values_list("key", flat=True))
    if boards <= known:
        return
    HostKey.objects.bulk_create([HostKey(node=node, key=k) for k in sorted(boards - known)],
                                ignore_conflicts=True)
    reason = (f"its GPU boards changed ({len(boards - known)} not enrolled: "
              f"{', '.join(sorted(b.removeprefix('gpu-uuid:') for b in boards - known))[:120]})")
    transaction.on_commit(lambda: hardware_changed.send(Node, node=node, reason=reason))


def store_samples(run: Run, samples: list[dict[str, Any]]) -> list[Sample]:
    """A reviewed result's samples, as they were validated (clean_sample's fields)."""
    return Sample.objects.bulk_create([Sample(run=run, **s) for s in samples])


def record_inventory(node: Node, inventory: dict[str, Any]) -> None:
    """The host's inventory, posted with every result: new GPU boards noted, and kept on
    the node when it changed (it rarely does: no write each run)."""
    note_new_boards(node, inventory)
    if inventory and inventory != node.inventory:
        # The GPU model stays the enrolled one (review refuses another).
        Node.objects.filter(pk=node.pk).update(inventory=inventory,
                                                gpu_model=gpu_model(node, inventory))
        generation.changed()  # the board shows and filters on the GPU model
