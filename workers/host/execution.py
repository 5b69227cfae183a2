"""Running one run on this host: claim it, run its probes under a kept lease, report."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from benchmarks import conditions, runner
from benchmarks.parsers import ParseError
from benchmarks.probes import PROBES, ProbeContext, ProbeError
from benchmarks.probes.base import Cancelled, MeshNode, Peer, ReferenceSlots, no_barrier
from benchmarks.runner import CommandNotFound, CommandTimeout, ProbeTimeLimit
from contract.precision import DEFAULT_PRECISION
from contract.run_spec import RunSpec
from contract.sample import Sample, at_precision
from workers.host import inventory
from workers.host.api_client import ApiError, NodeApi

log = logging.getLogger(__name__)

# What the node says when a probe fails for an expected reason: the message is enough.
EXPECTED_FAILURES = (ProbeError, CommandTimeout, CommandNotFound, ParseError, ProbeTimeLimit)


class LeaseKeeper:
    """Renews the run's lease in the background and carries the latest progress."""

    def __init__(self, api: NodeApi, run_id: int, attempt_id: str, lease_seconds: float) -> None:
        self.api = api
        self.run_id = run_id
        self.attempt_id = attempt_id
        self.interval = max(0.5, lease_seconds / 3)
        self.progress: dict[str, Any] = {}
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)
        # The claim just set the lease: a probe that finishes within half a second needs no
        # progress request at all.
        self._last_sent = time.monotonic()

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._send()

    def _send(self) -> None:
        try:
            self.api.progress(self.run_id, self.attempt_id, dict(self.progress))
            self._last_sent = time.monotonic()
        except ApiError as exc:
            if exc.status in (404, 409):
                # Cancelled, or the lease went to another attempt: stop at the next step.
                self.lost = True
            else:
                log.warning("lease renewal for run %s failed: %s", self.run_id, exc)

    def waiting(self, note: str) -> None:
        """Shown beside the step while the probe waits its turn (empty: no longer)."""
        if self.lost:
            raise Cancelled()
        runner.check_time_limit()
        if note == self.progress.get("waiting", ""):
            return
        self.progress = {k: v for k, v in self.progress.items() if k != "waiting"} | (
            {"waiting": note} if note else {})
        if time.monotonic() - self._last_sent > 0.5:
            self._send()

    def report(self, probe: str, step: int, steps: int) -> None:
        if self.lost:
            raise Cancelled()
        # Python code between commands is held to the probe's time limit here, at each step;
        # commands are held to it by the runner, which kills their process groups.
        runner.check_time_limit()
        self.progress = {"probe": probe, "step": step, "steps": steps}
        # Progress is shown live, but a fast probe must not flood the API.
        if time.monotonic() - self._last_sent > 0.5:
            self._send()
        if self.lost:
            raise Cancelled()


class Barrier:
    """Meeting points of a multi-node job, through the API: wait until every node arrived."""

    def __init__(self, api: NodeApi, run_id: int, attempt_id: str, timeout: float,
                 keeper: LeaseKeeper) -> None:
        self.api = api
        self.run_id = run_id
        self.attempt_id = attempt_id
        self.timeout = timeout
        self.keeper = keeper

    def __call__(self, name: str) -> None:
        deadline = time.monotonic() + self.timeout
        activity = None
        while True:
            try:
                state = self.api.barrier(self.run_id, self.attempt_id, name)
            except ApiError as exc:
                if exc.status in (404, 409):
                    raise Cancelled() from None
                raise
            if state["ready"]:
                return
            if state.get("broken"):
                raise ProbeError(f"stopped at {name}: {state['broken']}")
            if self.keeper.lost:
                raise Cancelled()
            if state.get("activity") != activity:
                # The others are still busy (waiting their turn at a reference, say): the
                # timeout is for a node that stopped moving, not for a slow one.
                activity = state.get("activity")
                deadline = time.monotonic() + self.timeout
            if time.monotonic() > deadline:
                raise ProbeError(f"gave up after {self.timeout:g} s waiting at {name} for "
                                 f"node(s) {', '.join(state['waiting_for'])}, which never arrived")
            time.sleep(0.2)


class PlatformSlots(ReferenceSlots):
    """Reference turns from the platform (jobs.services.reference_slots), waiting shown in
    the run's progress; the probe's time limit bounds the wait."""

    POLL_S = 0.5

    def __init__(self, api: NodeApi, run_id: int, attempt_id: str, keeper: LeaseKeeper) -> None:
        self.api = api
        self.run_id = run_id
        self.attempt_id = attempt_id
        self.keeper = keeper
        self.credentials: dict[str, dict[str, str]] = {}

    def credential(self, peer: str) -> dict[str, str] | None:
        return self.credentials.get(peer)

    def take(self, peer: str, seconds: float) -> float:
        started = time.monotonic()
        while True:
            try:
                state = self.api.reference_slot(self.run_id, self.attempt_id, peer, seconds)
            except ApiError as exc:
                if exc.status in (404, 409):
                    raise Cancelled() from None
                if exc.status == 429:  # held it too long while others waited
                    raise ProbeError(f"{peer}: {exc}") from None
                raise
            if state["granted"]:
                if state.get("iperf3"):
                    self.credentials[peer] = state["iperf3"]
                else:
                    self.credentials.pop(peer, None)
                self.keeper.waiting("")
                return time.monotonic() - started
            self.keeper.waiting(f"waiting for {peer}: another node is testing against it")
            time.sleep(self.POLL_S)

    def give_back(self, peer: str) -> None:
        self.credentials.pop(peer, None)
        try:
            self.api.reference_slot(self.run_id, self.attempt_id, peer, release=True)
        except ApiError as exc:  # the slot runs out by itself
            log.warning("giving back %s for run %s failed: %s", peer, self.run_id, exc)


def run_probes(spec: RunSpec, report: Any,
               barrier: Callable[[str], None] = no_barrier,
               references: ReferenceSlots | None = None) -> list[Sample]:
    ctx = ProbeContext(params=spec["params"], peers=[Peer.from_dict(p) for p in spec["peers"]],
                       report=report, mesh=[MeshNode.from_dict(n) for n in spec.get("mesh", [])],
                       node_rank=int(spec.get("node_rank", 0)),
                       rendezvous=spec.get("rendezvous"), barrier=barrier,
                       references=references or ReferenceSlots())
    samples: list[Sample] = []
    for name in spec["probes"]:
        probe = PROBES[name](ctx)
        # The limit kills the probe's commands (iperf3, fio, torch ranks) as process groups.
        with runner.time_limit(float(spec["params"]["probe_time_limit"])):
            try:
                # Inside the try: a prepare() that fails half-way (a file written, a server
                # started) is cleaned up like a run that fails.
                probe.prepare()
                before = conditions.read()
                found = probe.run()
            finally:
                probe.cleanup()
        # What else the host's CPUs did meanwhile, kept with each figure of the probe.
        during = conditions.during(before)
        # Each figure judged against the precision the run's profile states.
        precision = float(spec["params"].get("precision", DEFAULT_PRECISION * 100)) / 100
        samples += [at_precision(with_conditions(s, during), precision) for s in found]
    return samples


def with_conditions(sample: Sample, during: dict[str, Any]) -> Sample:
    if not during:
        return sample
    return replace(sample, metadata={**sample.metadata, "conditions": during})


def claim(api: NodeApi, run_id: int, max_wait: float) -> RunSpec | None:
    """Claim the run, waiting out a dead attempt's lease; None when it is not ours to run.

    A message can come back (Redis restores unacked ones) while the lease of the attempt
    that died still runs, and that attempt's run keeps the node busy (one run at a time)
    until the sweeper queues it again; waiting for either here is cheaper than leaving the
    message to the sweeper.
    """
    deadline = time.monotonic() + max_wait
    while True:
        try:
            return api.claim(run_id)
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise
            retry_after = exc.body.get("retry_after")
            left = deadline - time.monotonic()
            if exc.body.get("code") not in ("leased", "node_busy") or retry_after is None \
                    or left <= 0:
                log.info("run %s not claimed: %s", run_id, exc.message)
                return None
            time.sleep(min(float(retry_after) + 0.2, left))


# What the result endpoint answers to figures it will not store (a value out of its range, a
# metric the run's probes do not measure): the run's fault, not the platform's.
INVALID_RESULT = frozenset({400, 413, 422})
# A run's error as the worker posts it, within what the platform keeps (4,000 characters).
MAX_ERROR = 3900


def execute_run(api: NodeApi, run_id: int, max_claim_wait: float = 60,
                inventory_of: Callable[[], dict[str, Any]] = inventory.collect) -> str:
    spec = claim(api, run_id, max_claim_wait)
    if spec is None:
        return "not claimed"
    attempt_id = spec["attempt_id"]
    log.info("run %s claimed (attempt %s): %s", run_id, attempt_id, spec["probes"])
    body: dict[str, Any]
    with LeaseKeeper(api, run_id, attempt_id, spec["lease_seconds"]) as keeper:
        try:
            barrier = Barrier(api, run_id, attempt_id, float(spec["params"]["barrier_timeout"]),
                              keeper)
            samples = run_probes(spec, keeper.report, barrier,
                                 PlatformSlots(api, run_id, attempt_id, keeper))
            body = {"status": "succeeded", "samples": [s.as_dict() for s in samples]}
        except Cancelled as exc:
            log.info("run %s stopped: %s", run_id, exc)
            return "cancelled"
        except EXPECTED_FAILURES as exc:
            body = {"status": "failed", "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - report any failure rather than lose the run
            log.exception("run %s failed", run_id)
            body = {"status": "failed",
                    "error": f"internal error: {exc!r}\n{traceback.format_exc(limit=5)}"[:MAX_ERROR]}
    body["inventory"] = inventory_of()
    try:
        api.result(run_id, attempt_id, body)
    except ApiError as exc:
        if exc.status == 409:
            log.warning("result of run %s refused: %s", run_id, exc.message)
            return "refused"
        if exc.status not in INVALID_RESULT or body["status"] != "succeeded":
            raise
        # The platform says why it will not store these figures; the attempt stays open, so
        # it ends now as failed with that reason, not after its lease as a lost worker.
        log.error("result of run %s invalid: %s", run_id, exc.message)
        body = {"status": "failed", "inventory": body["inventory"],
                "error": f"the platform refused this run's figures: {exc.message}"[:MAX_ERROR]}
        api.result(run_id, attempt_id, body)
    log.info("run %s %s", run_id, body["status"])
    return str(body["status"])
