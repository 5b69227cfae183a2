"""A reference's own records (recorded from iperf3 3.12's server and the echo server): read
from a growing log by its agent, each byte once, and stored by the platform once per test."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fleet.models import ReferenceEndpoint, Region
from jobs.models import ReferenceRecord
from jobs.services import reference_records
from jobs.services.echo_tokens import echo_token
from jobs.services.reference_records import echo_record, server_report
from workers.host.reference_agent import LogTail

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"
FORWARD, REVERSE = "45cd7mxvirr4mzqbuyw4u6m3ss5j6ur5zu2p", "44e3fmdc3k67jkdk7bfd4hl7zkytsf67x7qm"


def recorded(kind: str) -> str:
    return (DATA / f"server_log_{kind}.json").read_text()


def test_the_servers_own_count_is_received_forward_and_sent_in_reverse() -> None:
    forward = server_report(json.loads(recorded("forward")))
    reverse = server_report(json.loads(recorded("reverse")))
    assert forward is not None and reverse is not None
    assert (forward.cookie, forward.reverse, forward.streams) == (FORWARD, False, 1)
    assert forward.sent_bps == 0 and forward.own_bps == forward.received_bps > 1e9
    assert reverse.cookie == REVERSE and reverse.reverse
    assert reverse.received_bps == 0 and reverse.own_bps == reverse.sent_bps > 1e9


def test_the_agent_reads_a_growing_log_once_and_a_report_being_written_waits(
        tmp_path: Path) -> None:
    log = tmp_path / "iperf3.json"
    forward, reverse = recorded("forward"), recorded("reverse")
    log.write_text(forward + reverse[: len(reverse) // 2])  # the second report is half-written
    tail = LogTail(log)
    assert [r["start"]["cookie"] for r in tail.read(10)] == [FORWARD]
    assert not tail.complete  # what is half-written is not claimed complete
    tail.handed_in()
    log.write_text(forward + reverse)
    assert [r["start"]["cookie"] for r in tail.read(10)] == [REVERSE] and tail.complete
    assert tail.read(10) == tail.pending  # not handed in: the same records again
    tail.handed_in()
    assert tail.read(10) == [] and tail.complete
    assert LogTail(tmp_path / "missing.json").read(10) == []  # not written yet


def test_the_agent_hands_in_a_long_log_in_batches_without_losing_one(tmp_path: Path) -> None:
    log = tmp_path / "echo.jsonl"
    log.write_text("".join(json.dumps({"token": f"t{i}", "started": i, "round_trips": 1})
                           + "\n" for i in range(5)))
    tail, seen = LogTail(log), []
    while batch := tail.read(2):
        assert len(batch) <= 2
        seen += [r["token"] for r in batch]
        tail.handed_in()
    assert seen == [f"t{i}" for i in range(5)] and tail.complete


def test_an_echo_record_needs_its_token_and_keeps_the_round_trips() -> None:
    good = echo_record({"token": "t1", "client": "10.0.0.5", "started": 1.0, "round_trips": 3,
                        "rtts_ms": [1.0, 1.2, 1.1], "median_ms": 1.1})
    assert good is not None and (good.round_trips, good.rtts_ms, good.median_ms) == (
        3, (1.0, 1.2, 1.1), 1.1)
    assert echo_record({"round_trips": 1}) is None


@pytest.mark.django_db
def test_records_are_stored_once_per_test_and_found_by_cookie_token_and_time() -> None:
    region = Region.objects.create(code="hangzhou", province="Zhejiang", city="Hangzhou")
    ref = ReferenceEndpoint.objects.create(region=region, name="ref1", host="10.0.0.1")
    reports = []
    for i, started in enumerate((100, 200, 300)):
        report = json.loads(recorded("forward"))
        report["start"]["cookie"], report["start"]["timestamp"]["timesecs"] = f"c{i}", started
        reports.append(report)
    token = echo_token("attempt-1")  # one the platform issued: made-up ones are not kept
    echo = [{"token": token, "client": "10.0.0.5", "started": 150.0, "round_trips": 2,
             "rtts_ms": [1.0, 1.1], "median_ms": 1.05, "paced_by": "reference"}]
    error_report = {"start": {}, "error": "the client has unexpectedly closed the connection"}
    first = reference_records.ingest(ref, reports + [error_report], echo, time.time() + 3600)
    assert (first.stored, first.skipped) == (4, 1)
    assert first.through <= time.time()  # a reference's clock ahead claims nothing later
    again = reference_records.ingest(ref, reports, echo, 50.0)  # a batch sent again
    assert ReferenceRecord.objects.count() == 4
    ref.refresh_from_db()
    assert ref.records_through == first.through > again.through  # never moves back
    assert [r.cookie for r in reference_records.iperf3_since(ref, 200)] == ["c1", "c2"]
    assert [r.started for r in reference_records.iperf3_tests(ref, "c0")] == [100.0]
    assert reference_records.echo_runs(ref, token)[0].rtts_ms == (1.0, 1.1)
    # An endpoint on the same server (a node's relayed path) reads the server's records.
    relay = ReferenceEndpoint.objects.create(region=region, name="ref1-far", host="10.0.0.1")
    assert [r.cookie for r in reference_records.iperf3_tests(relay, "c2")] == ["c2"]


@pytest.mark.django_db
def test_the_operator_issues_the_agents_key_once_and_a_new_one_replaces_it(
        tmp_path: Path) -> None:
    from django.core.management import call_command

    from fleet.services import reference_keys

    Region.objects.create(code="hangzhou", province="Zhejiang", city="Hangzhou")
    key_file = tmp_path / "ref1.key"
    call_command("reference_endpoint", "hangzhou", "ref1", "10.0.0.5", "--echo-port", "7007",
                 "--key-file", str(key_file))
    assert key_file.stat().st_mode & 0o777 == 0o600
    first = key_file.read_text().strip()
    endpoint = ReferenceEndpoint.objects.get(name="ref1")
    assert reference_keys.endpoint_for(first) == endpoint
    assert endpoint.key_digest and first not in endpoint.key_digest  # a digest, not the key
    call_command("reference_endpoint", "hangzhou", "ref1", "10.0.0.5", "--echo-port", "7007",
                 "--key-file", str(key_file))
    assert reference_keys.endpoint_for(first) is None  # the old key stops
    assert reference_keys.endpoint_for(key_file.read_text().strip()) == endpoint
    for other in ("", "rk_", f"rk_{endpoint.pk}", f"rk_x.{first}", f"nk_{endpoint.pk}.abc"):
        assert reference_keys.endpoint_for(other) is None


def test_the_agent_without_its_key_says_where_the_key_comes_from(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "workers.cli", "reference-agent", "--url",
                           "http://127.0.0.1:1", "--key-file", str(tmp_path / "none.key"),
                           "--iperf3-log", str(tmp_path / "iperf3.json")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "manage.py reference_endpoint REGION NAME HOST --key-file FILE" in done.stderr


def test_the_agent_stopped_mid_post_finishes_the_post_and_exits_cleanly(tmp_path: Path) -> None:
    """SIGTERM ends the agent between posts. Killed inside one, the platform's side of the
    post went on against a test database being flushed, and the flush failed (CI, stop 43)."""
    import signal
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    in_post, answered = threading.Event(), threading.Event()

    class SlowPlatform(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            in_post.set()
            time.sleep(1.5)  # the agent is stopped while it waits for this answer
            body = json.dumps({"stored": 0, "skipped": 0, "through": 0.0}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)  # BrokenPipeError here if the agent was gone
            answered.set()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowPlatform)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = tmp_path / "ref.key"
    key.write_text("rk_1.secret")
    agent = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "reference-agent", "--url",
         f"http://127.0.0.1:{server.server_address[1]}", "--key-file", str(key),
         "--iperf3-log", str(tmp_path / "iperf3.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert in_post.wait(60), "the agent never posted"
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(10) == 0, agent.stderr.read() if agent.stderr else ""
        assert answered.is_set()  # the post it was in was answered before it left
    finally:
        agent.kill()
        server.shutdown()
