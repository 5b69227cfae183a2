"""What a platform reference recorded itself, as its agent hands it in over the API.

- Its iperf3 server (`iperf3 -s -J --logfile FILE`) appends one JSON report per test. The
  report's `start.cookie` is the test's id, which the client's JSON carries too; its
  `end.sum_received` (a test towards the reference) or `end.sum_sent` (a reverse test,
  `-R`) is the server's own count: in the server's log the other side's figures are 0.
- Its echo server (`benchctl echo-server --log FILE`) appends one JSON line per connection
  that began with a run's token: the round trips it timed itself.

The reference's agent (`benchctl reference-agent`, workers/host/reference_agent.py) tails
both logs on the reference's own host and posts what they gained with the reference's key
(POST /api/v1/reference/records). Records are parsed here by the same pure parsers, stored
per server, and read by evidence; the web tier never opens a file of the reference's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce, Greatest

from config.errors import Invalid
from contract.iperf3_server import ServerReport, server_report, storable
from fleet.models import ReferenceEndpoint
from jobs.models import ReferenceRecord
from jobs.services.echo_tokens import is_echo_token

MAX_RECORDS_PER_POST = 500
POLL_S = 0.1


@dataclass(frozen=True)
class EchoRecord:
    token: str
    client: str
    started: float
    round_trips: int
    median_ms: float | None
    rtts_ms: tuple[float, ...] = ()
    paced_by: str = ""  # "reference": the server sent the nonces and timed the answers


def echo_record(obj: Any) -> EchoRecord | None:
    try:
        median = obj.get("median_ms")
        return EchoRecord(token=str(obj["token"]), client=str(obj.get("client", "")),
                          started=float(obj["started"]), round_trips=int(obj["round_trips"]),
                          median_ms=float(median) if median is not None else None,
                          rtts_ms=tuple(float(r) for r in obj.get("rtts_ms") or ()),
                          paced_by=str(obj.get("paced_by", "")))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


@dataclass(frozen=True)
class Ingested:
    stored: int
    skipped: int  # not a record of a test (an iperf3 error report, another shape)
    through: float

    def as_dict(self) -> dict[str, Any]:
        return {"stored": self.stored, "skipped": self.skipped, "through": self.through}


def ingest(endpoint: ReferenceEndpoint, iperf3: list[Any], echo: list[Any],
           through: float) -> Ingested:
    """Store what the reference's servers wrote since the agent's last post, once each
    (an agent that posts a batch again after a lost answer stores nothing twice), and that
    its servers' records are complete up to ``through`` (never later than now)."""
    if not isinstance(iperf3, list) or not isinstance(echo, list):
        raise Invalid("iperf3 and echo must be lists of the servers' records")
    if len(iperf3) + len(echo) > MAX_RECORDS_PER_POST:
        raise Invalid(f"at most {MAX_RECORDS_PER_POST} records per post; post the rest next")
    server = endpoint.server_id()
    rows, skipped = [], 0
    for kind, objects, parse in ((ReferenceRecord.IPERF3, iperf3, server_report),
                                 (ReferenceRecord.ECHO, echo, echo_record)):
        for obj in objects:
            # The agent sends storable text; a reference's key alone must not be able to
            # make an insert fail and stop every later record of that reference.
            record = parse(storable(obj))
            if record is None or (isinstance(record, EchoRecord)
                                  and not is_echo_token(record.token)):
                skipped += 1
                continue
            key = record.cookie if isinstance(record, ServerReport) else record.token
            rows.append(ReferenceRecord(endpoint_id=server, kind=kind, key=key[:128],
                                        client=record.client[:64], started=record.started,
                                        payload=asdict(record)))
    ReferenceRecord.objects.bulk_create(rows, ignore_conflicts=True)
    # A reference's clock ahead of the platform's must not mark records complete that
    # are not in yet.
    through = min(float(through), time.time())
    ReferenceEndpoint.objects.filter(pk=server).update(
        records_through=Greatest(Coalesce(F("records_through"), Value(through)), Value(through)))
    return Ingested(stored=len(rows), skipped=skipped, through=through)


PRUNE_BATCH = 10_000


def prune(now: float) -> int:
    """Delete the records older than REFERENCE_RECORDS_KEEP_HOURS, at most PRUNE_BATCH per
    server and kind a call (the sweeper calls it every pass), by the (endpoint, kind,
    started) index. Returns how many went."""
    before = now - settings.REFERENCE_RECORDS_KEEP_HOURS * 3600
    deleted = 0
    servers = ReferenceEndpoint.objects.values_list("pk", flat=True)  # a few rows
    for endpoint_id in servers:
        for kind in (ReferenceRecord.IPERF3, ReferenceRecord.ECHO):
            deleted += _prune(endpoint_id, kind, before)
    return deleted


def _prune(endpoint_id: int, kind: str, before: float) -> int:
    old = (ReferenceRecord.objects.filter(endpoint_id=endpoint_id, kind=kind, started__lt=before)
           .order_by("started").values_list("pk", flat=True)[:PRUNE_BATCH])
    return ReferenceRecord.objects.filter(pk__in=list(old)).delete()[0]


def iperf3_tests(endpoint: ReferenceEndpoint, cookie: str) -> list[ServerReport]:
    """The server's reports of the test with this cookie."""
    return [ServerReport(**p) for p in _payloads(endpoint, ReferenceRecord.IPERF3, Q(key=cookie))]


def iperf3_since(endpoint: ReferenceEndpoint, started: float) -> list[ServerReport]:
    """The server's reports of the tests that began at ``started`` or later."""
    return [ServerReport(**p) for p in _payloads(endpoint, ReferenceRecord.IPERF3,
                                                 Q(started__gte=started))]


def echo_runs(endpoint: ReferenceEndpoint, token: str) -> list[EchoRecord]:
    """The echo server's records of the connections that began with this token."""
    return [EchoRecord(**(p | {"rtts_ms": tuple(p.get("rtts_ms") or ())}))
            for p in _payloads(endpoint, ReferenceRecord.ECHO, Q(key=token))]


def _payloads(endpoint: ReferenceEndpoint, kind: str, where: Q) -> Iterable[dict[str, Any]]:
    return (ReferenceRecord.objects.filter(where, endpoint_id=endpoint.server_id(), kind=kind)
            .order_by("started", "pk").values_list("payload", flat=True))


def silent(endpoints: Iterable[ReferenceEndpoint], at: float) -> list[ReferenceEndpoint]:
    """The references among these whose agent had handed nothing in for longer than
    REFERENCE_AGENT_SILENT_S at ``at``: down, as far as the platform can tell (an endpoint
    without an agent tells nothing, and is not among them)."""
    servers = {e.server_id(): e for e in endpoints}
    quiet = ReferenceEndpoint.objects.filter(pk__in=servers).exclude(key_digest="").filter(
        Q(records_through__isnull=True)
        | Q(records_through__lt=at - settings.REFERENCE_AGENT_SILENT_S))
    return [servers[pk] for pk in quiet.values_list("pk", flat=True)]


def await_records(endpoints: Iterable[ReferenceEndpoint], until: float) -> bool:
    """Wait (at most REFERENCE_RECORDS_WAIT_S) until the agents of these references have
    handed in their servers' records up to ``until``. An endpoint with no agent, or one
    silent for longer than REFERENCE_AGENT_SILENT_S, is not waited for: what it did not
    hand in stays host-reported. Returns whether every record is in."""
    servers = {e.server_id() for e in endpoints}
    deadline = time.monotonic() + settings.REFERENCE_RECORDS_WAIT_S
    while True:
        behind = [t for t in ReferenceEndpoint.objects.filter(pk__in=servers)
                  .exclude(key_digest="").values_list("records_through", flat=True)
                  if t is None or t < until]
        if not behind:
            return True
        alive = [t for t in behind
                 if t is not None and t >= until - settings.REFERENCE_AGENT_SILENT_S]
        if not alive or time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
