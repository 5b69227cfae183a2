"""Platform evidence for a host's figures: the reference endpoint's own record of the test.

A host's throughput and TCP RTT towards a platform reference endpoint are claims. The
reference keeps its own record of every test it serves, bound to the exact test and never
to an address the host declares:

- iperf3: the test's cookie, in both the client's JSON (the host lists its tests' cookies
  in the sample's metadata) and the server's JSON log. The server's own count is the
  figure. A cookie is spent on the run that presents it (ReferenceRecordUse), so one
  host cannot present another's test, and it must fall inside the run's time.
- TCP RTT: the run's token, derived from its attempt (the host gets it in the run spec and
  sends it first); the echo server records the round trips it timed under that token.

A record that matches makes the figure ``platform-verified``, valued at the reference's
figure, with the source named; a host figure more than REFERENCE_TOLERANCE away (for TCP
RTT: shorter than the reference's fastest round trip) is refused. No record (or an
unreadable log) leaves the figure ``host-reported``.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from benchmarks.sample import summarise
from contract import metrics
from fleet.models import ReferenceEndpoint
from jobs.models import Sample
from jobs.services import reference_records

# A record more than this far from the host's figure means one of them is lying about the
# test; the reference is the one the platform runs. TCP RTT is one-sided: each end's timer
# also counts the other end's wake-ups, so on a loaded host the two medians can differ by
# several times on a sub-millisecond path, while no host's median can be shorter than the
# fastest round trip the reference timed (less RTT_FLOOR_MS of timer disagreement). A host
# that reports a longer RTT only harms itself, and the stored figure is the reference's.
REFERENCE_TOLERANCE = 0.10
RTT_FLOOR_MS = 0.25
# Tests may start a little before the platform stamped the claim (clock granularity).
CLOCK_SLACK_S = 5.0
MAX_COOKIES = 64
REVERSE_METRIC = "network.tcp_throughput_reverse"
PARALLEL_METRIC = "network.tcp_throughput_parallel"
RTT_METRIC = "network.tcp_rtt"


def echo_token(attempt_id: Any) -> str:
    """The run's token for reference echo servers: bound to the attempt, unguessable."""
    return hmac.new(settings.SECRET_KEY.encode(), f"echo-token:{attempt_id}".encode(),
                    hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Mismatch:
    metric: str
    peer: str
    host_value: float
    reference_value: float
    source: str

    def message(self) -> str:
        unit = metrics.METRICS[self.metric].unit
        return (f"{self.metric} to {self.peer}: the host reported {self.host_value:.4g} {unit}, "
                f"the reference measured {self.reference_value:.4g} {unit} ({self.source})")


@dataclass
class Review:
    """What the reference records say of a result's samples (changed in place)."""

    spent: list[tuple[int, str]] = field(default_factory=list)  # (endpoint id, cookie)
    mismatches: list[Mismatch] = field(default_factory=list)


def references_by_peer(node: Any) -> dict[str, ReferenceEndpoint]:
    return {str(e.as_peer()["name"]): e for e in ReferenceEndpoint.for_node(node)}


def review(samples: list[dict[str, Any]], endpoints: dict[str, ReferenceEndpoint],
           attempt_id: Any, since: float, until: float) -> Review:
    """Mark each verifiable sample's evidence, from its reference's own records (the node's
    reference endpoints by peer name: references_by_peer). Unmatched samples keep the
    model's default, host-reported."""
    result = Review()
    for sample in samples:
        endpoint = endpoints.get(str(sample["metadata"].get("peer", "")))
        if endpoint is None or not metrics.METRICS[sample["metric"]].verifiable:
            continue
        host_value = sample["value"]
        if sample["metric"] == RTT_METRIC:
            found = _echo_figure(endpoint, echo_token(attempt_id), since, until)
        else:
            found = _iperf3_figure(endpoint, sample, since, until)
        if found is None:
            continue
        figures, source, keys = found
        reference = summarise(sample["metric"], figures)
        if _disagrees(sample["metric"], host_value, reference):
            result.mismatches.append(Mismatch(sample["metric"], str(endpoint.as_peer()["name"]),
                                              sample["value"], reference.value, source))
            continue
        # The stored figure and its spread are the reference's own; the host's stays beside.
        sample.update({k: getattr(reference, k) for k in ("value", "n", "p5", "p95", "min",
                                                          "max", "cv")})
        sample["metadata"] = sample["metadata"] | {"host_value": host_value}
        sample["evidence"] = Sample.PLATFORM_VERIFIED
        sample["evidence_source"] = source[:255]
        result.spent += [(endpoint.pk, k) for k in keys]
    return result


def _disagrees(metric: str, host_value: float, reference: Any) -> bool:
    """Whether the host's figure contradicts the reference's record of the same test."""
    if metric == RTT_METRIC:
        fastest = reference.min if reference.min is not None else reference.value
        return host_value < fastest - max(REFERENCE_TOLERANCE * fastest, RTT_FLOOR_MS)
    return bool(abs(host_value - reference.value) > REFERENCE_TOLERANCE * reference.value)


def _iperf3_figure(endpoint: ReferenceEndpoint, sample: dict[str, Any], since: float,
                   until: float) -> tuple[list[float], str, list[str]] | None:
    cookies = sample["metadata"].get("cookies")
    if (not endpoint.report_log or not isinstance(cookies, list) or not cookies
            or len(cookies) > MAX_COOKIES or len(set(map(str, cookies))) != len(cookies)):
        return None
    reverse = sample["metric"] == REVERSE_METRIC
    parallel = sample["metric"] == PARALLEL_METRIC
    figures = []
    for cookie in map(str, cookies):
        records = reference_records.IPERF3.lookup(endpoint.report_log, cookie)
        match = [r for r in records or []
                 if since - CLOCK_SLACK_S <= r.started <= until + CLOCK_SLACK_S
                 and r.reverse == reverse and (r.streams > 1) == parallel and r.own_bps > 0]
        if len(match) != 1:
            return None  # the reference has no (single) record of this test
        figures.append(match[0].own_bps / 1e9)
    source = (f"reference {endpoint.region.code}:{endpoint.name}: its iperf3 server's log, "
              f"{len(figures)} test(s) matched by cookie")
    return figures, source, [str(c) for c in cookies]


def _echo_figure(endpoint: ReferenceEndpoint, token: str, since: float,
                 until: float) -> tuple[list[float], str, list[str]] | None:
    if not endpoint.echo_log:
        return None
    records = [r for r in reference_records.ECHO.lookup(endpoint.echo_log, token) or []
               if since - CLOCK_SLACK_S <= r.started <= until + CLOCK_SLACK_S
               and r.median_ms is not None and r.round_trips > 0]
    if not records:
        return None
    rtts = [t for r in records for t in r.rtts_ms] or [
        r.median_ms for r in records if r.median_ms is not None]
    source = (f"reference {endpoint.region.code}:{endpoint.name}: its echo server timed "
              f"{sum(r.round_trips for r in records)} round trips under this run's token")
    return rtts, source, []
