"""Platform evidence for a host's figures: the reference endpoint's own record of the test.

A host's throughput and TCP RTT towards a platform reference endpoint are claims. The
reference keeps its own record of every test it serves, bound to the exact test and never
to an address the host declares; its agent hands the records in over the API with the
reference's key (reference_records), before the result is judged:

- iperf3: the test's cookie, in both the client's JSON (the host lists its tests' cookies
  in the sample's metadata) and the server's JSON log. The server's own count is the
  figure. A cookie is spent on the run that presents it (ReferenceRecordUse), so one
  host cannot present another's test, and it must fall inside the run's time.
- TCP RTT: the run's token, derived from its attempt (the host gets it in the run spec and
  sends it first); the echo server then sends nonces one at a time and records the round
  trips it timed itself under that token: the host only answers.

Either record counts only when it shows the node's own address (enrolled or observed at
enrolment) and the run's parameters; every test the iperf3 server logged from that address
during the run's turns must be presented (no best-of-N).

A record that matches makes the figure ``platform-verified``, valued at the reference's
figure, with the source named; a host figure more than REFERENCE_TOLERANCE away (for TCP
RTT: shorter than the reference's fastest round trip) is refused. No record (or a
reference without an agent, or one that did not hand it in) leaves it ``host-reported``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract import metrics
from contract.sample import summarise
from fleet.models import ReferenceEndpoint
from jobs.models import Sample
from jobs.services import reference_records
from jobs.services.echo_tokens import echo_token

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


@dataclass(frozen=True)
class Turn:
    """A span in which the run held a reference server's turn (jobs.ReferenceTurn)."""

    server: int  # the server's endpoint id (ReferenceEndpoint.server_id)
    start: float  # unix seconds
    end: float


@dataclass(frozen=True)
class Binding:
    """What a reference record must show to be this run's test: where it came from (the
    node's enrolled and observed addresses; the reference itself for a node's own relayed
    path), the run's parameters, and the turns the run held."""

    addresses: frozenset[str]
    params: dict[str, Any]
    turns: tuple[Turn, ...] = ()
    # The addresses only this node has: a test from one of them inside the run's turns is
    # this run's. Loopback nodes of a one-machine fleet share 127.0.0.1, and the next
    # holder's one-second test can begin inside the second this turn ended.
    exclusive: frozenset[str] | None = None

    def allows(self, endpoint: ReferenceEndpoint, client: str) -> bool:
        # A node's dedicated endpoint is a relay the platform runs on the reference's own
        # host (the lab's latency paths): its connections come from the reference's address.
        own_relay = endpoint.node_id is not None and client == endpoint.host
        return client in self.addresses or own_relay


@dataclass
class Review:
    """What the reference records say of a result's samples (changed in place)."""

    spent: list[tuple[int, str]] = field(default_factory=list)  # (endpoint id, cookie)
    mismatches: list[Mismatch] = field(default_factory=list)
    # (check, message): records that are not this node's, not the run's test, or held back
    refusals: list[tuple[str, str]] = field(default_factory=list)


def references_by_peer(node: Any) -> dict[str, ReferenceEndpoint]:
    return {str(e.as_peer()["name"]): e for e in ReferenceEndpoint.for_node(node)}


def review(samples: list[dict[str, Any]], endpoints: dict[str, ReferenceEndpoint],
           attempt_id: Any, since: float, until: float, binding: Binding) -> Review:
    """Mark each verifiable sample's evidence, from its reference's own records (the node's
    reference endpoints by peer name: references_by_peer). Unmatched samples keep the
    model's default, host-reported; a record that contradicts the host, comes from another
    address or another test, or a test the host held back, refuses the result."""
    result = Review()
    if not binding.addresses:
        return result  # nothing to bind a record to: every figure stays host-reported
    for sample in samples:
        endpoint = endpoints.get(str(sample["metadata"].get("peer", "")))
        if endpoint is None or not metrics.METRICS[sample["metric"]].verifiable:
            continue
        host_value = sample["value"]
        if sample["metric"] == RTT_METRIC:
            found = _echo_figure(endpoint, echo_token(attempt_id), since, until, binding, result)
        else:
            found = _iperf3_figure(endpoint, sample, since, until, binding, result)
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
    _withheld(samples, endpoints, binding, result)
    return result


def by_trial_agent(samples: list[dict[str, Any]], agent_id: int) -> None:
    """A buyer's trial agent measured these: what the reference did not verify is
    buyer-measured (the buyer holds the agent's key; its provider never saw it)."""
    for sample in samples:
        if sample.get("evidence", Sample.HOST_REPORTED) == Sample.HOST_REPORTED:
            sample["evidence"] = Sample.BUYER_MEASURED
            sample["evidence_source"] = f"buyer's trial agent (node {agent_id})"


def _disagrees(metric: str, host_value: float, reference: Any) -> bool:
    """Whether the host's figure contradicts the reference's record of the same test."""
    if metric == RTT_METRIC:
        fastest = reference.min if reference.min is not None else reference.value
        return host_value < fastest - max(REFERENCE_TOLERANCE * fastest, RTT_FLOOR_MS)
    return bool(abs(host_value - reference.value) > REFERENCE_TOLERANCE * reference.value)


def _iperf3_figure(endpoint: ReferenceEndpoint, sample: dict[str, Any], since: float,
                   until: float, binding: Binding,
                   result: Review) -> tuple[list[float], str, list[str]] | None:
    cookies = sample["metadata"].get("cookies")
    if (not isinstance(cookies, list) or not cookies
            or len(cookies) > MAX_COOKIES or len(set(map(str, cookies))) != len(cookies)):
        return None
    reverse = sample["metric"] == REVERSE_METRIC
    parallel = sample["metric"] == PARALLEL_METRIC
    figures = []
    for cookie in map(str, cookies):
        match = [r for r in reference_records.iperf3_tests(endpoint, cookie)
                 if since - CLOCK_SLACK_S <= r.started <= until + CLOCK_SLACK_S
                 and r.reverse == reverse and (r.streams > 1) == parallel and r.own_bps > 0]
        if len(match) != 1:
            return None  # the reference has no (single) record of this test
        record = match[0]
        if not binding.allows(endpoint, record.client):
            result.refusals.append(("reference_address_mismatch", (
                f"{sample['metric']}: the reference's iperf3 server saw test {cookie[:32]} "
                f"come from {record.client[:64]}, not from this node's address")))
            return None
        wrong = _parameters_error(record, binding.params, parallel)
        if wrong:
            result.refusals.append(("reference_parameters_mismatch",
                                    f"{sample['metric']}: test {cookie[:32]} {wrong}"))
            return None
        figures.append(record.own_bps / 1e9)
    source = (f"reference {endpoint.region.code}:{endpoint.name}: its iperf3 server's log, as "
              f"its agent handed it in, {len(figures)} test(s) matched by cookie")
    return figures, source, [str(c) for c in cookies]


def _parameters_error(record: Any, params: dict[str, Any], parallel: bool) -> str | None:
    """How the server's record of a test differs from the run's parameters; None if not.
    A test run longer (or with a longer omitted start, or more streams) than the run
    asks for is another measurement, not this run's."""
    expected = {"duration": int(params.get("iperf3_duration", record.duration)),
                "omit": int(params.get("iperf3_omit", record.omit)),
                "streams": int(params.get("iperf3_parallel", record.streams)) if parallel else 1}
    seen = {"duration": record.duration, "omit": record.omit, "streams": record.streams}
    diff = [f"{k} {seen[k]} (the run's: {v})" for k, v in expected.items() if seen[k] != v]
    return f"ran with {', '.join(diff)}" if diff else None


def _withheld(samples: list[dict[str, Any]], endpoints: dict[str, ReferenceEndpoint],
              binding: Binding, result: Review) -> None:
    """Every test the server logged from the node's address inside the run's turns is the
    run's, and must be among those it presents: a host that runs several and shows the
    best is refused (reference_tests_withheld)."""
    if not binding.turns:
        return
    presented = {str(c) for s in samples for c in (s["metadata"].get("cookies") or [])
                 if isinstance(s["metadata"].get("cookies"), list)}
    mine = binding.addresses if binding.exclusive is None else binding.exclusive
    servers = {e.server_id(): e for e in endpoints.values()}
    for server, endpoint in servers.items():
        turns = [t for t in binding.turns if t.server == server]
        if not turns:
            continue
        for record in reference_records.iperf3_since(endpoint, min(t.start for t in turns) - 1):
            # timesecs is whole seconds: a test began at most 1 s before its stamp, and a
            # test of the next holder cannot fit inside this run's turn (tests last 1 s+).
            inside = any(t.start - 1 <= record.started
                         and record.started + record.duration + record.omit <= t.end + 1
                         for t in turns)
            if inside and record.client in mine and record.cookie not in presented:
                result.refusals.append(("reference_tests_withheld", (
                    f"the reference's iperf3 server logged test {record.cookie[:32]} from this "
                    "node during its turn, and the result does not present it")))


def _echo_figure(endpoint: ReferenceEndpoint, token: str, since: float, until: float,
                 binding: Binding, result: Review) -> tuple[list[float], str, list[str]] | None:
    if not endpoint.echo_port:
        return None
    # Only round trips the reference paced and timed itself count: a server that timed
    # "from its echo to the next byte" let the host pace them (0.3 ms sends on a 15 ms path).
    records = [r for r in reference_records.echo_runs(endpoint, token)
               if since - CLOCK_SLACK_S <= r.started <= until + CLOCK_SLACK_S
               and r.paced_by == "reference" and r.median_ms is not None and r.round_trips > 0]
    if not records:
        return None
    strangers = sorted({r.client for r in records if not binding.allows(endpoint, r.client)})
    if strangers:
        result.refusals.append(("reference_address_mismatch", (
            f"{RTT_METRIC}: the reference's echo server timed this run's token from "
            f"{', '.join(a[:64] for a in strangers[:3])}, not from this node's address")))
        return None
    rtts = [t for r in records for t in r.rtts_ms] or [
        r.median_ms for r in records if r.median_ms is not None]
    source = (f"reference {endpoint.region.code}:{endpoint.name}: its echo server sent and "
              f"timed {sum(r.round_trips for r in records)} round trips under this run's token")
    return rtts, source, []
