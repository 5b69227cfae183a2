"""#30: the evidence reader survives any byte. iperf3 copies a client's cookie raw into its
server log, so anyone who can start a test can write any byte there; one malformed report
used to stop the reading of a reference for good. Recorded iperf3 3.12 server reports,
hypothesis for the bytes."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract.iperf3_server import server_report, storable
from fleet.models import ReferenceEndpoint, Region
from jobs.models import ReferenceRecord
from jobs.services import reference_records
from jobs.services.echo_tokens import echo_token
from workers.host.reference_agent import LogTail

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"
FORWARD_COOKIE = "45cd7mxvirr4mzqbuyw4u6m3ss5j6ur5zu2p"


def report_with_cookie(cookie: bytes) -> bytes:
    """The recorded server report with ``cookie`` written raw, as iperf3 writes it."""
    text = (DATA / "server_log_forward.json").read_bytes()
    return text.replace(FORWARD_COOKIE.encode(), cookie)


def read_all(tail: LogTail, limit: int = 50) -> list[object]:
    seen: list[object] = []
    while True:
        batch = tail.read(limit)
        start = tail.offset
        tail.handed_in()
        seen += batch
        if not batch and tail.offset == start:
            return seen


def test_a_report_with_invalid_bytes_in_its_cookie_is_read_and_the_next_one_too(
        tmp_path: Path) -> None:
    log = tmp_path / "iperf3.json"
    log.write_bytes(report_with_cookie(b"\xff\xfe" + b"a" * 35) + report_with_cookie(b"b" * 37))
    tail = LogTail(log)
    cookies = [server_report(r).cookie for r in read_all(tail)]  # type: ignore[union-attr]
    assert cookies == ["\ufffd\ufffd" + "a" * 35, "b" * 37]
    assert tail.offset == log.stat().st_size and tail.skipped == 0


def test_a_poisoned_log_followed_by_a_valid_record_still_finds_it(tmp_path: Path) -> None:
    # A torn report (a server killed mid-write), then garbage, then a valid report: on main
    # the reader stopped at the first and never read another record of that reference.
    log = tmp_path / "iperf3.json"
    torn = report_with_cookie(b"c" * 37)[:700]
    log.write_bytes(torn + b"\n\x00\xff garbage {{{ \n" + report_with_cookie(b"d" * 37))
    tail = LogTail(log)
    assert [r["start"]["cookie"] for r in read_all(tail)] == ["d" * 37]  # type: ignore[index]
    assert tail.skipped > 700 and tail.complete and tail.offset == log.stat().st_size


def test_a_record_still_being_written_waits_and_is_not_skipped(tmp_path: Path) -> None:
    log = tmp_path / "iperf3.json"
    whole = report_with_cookie(b"e" * 37)
    log.write_bytes(whole[:500])
    tail = LogTail(log)
    assert read_all(tail) == [] and not tail.complete and tail.offset == 0
    log.write_bytes(whole)
    assert [r["start"]["cookie"] for r in read_all(tail)] == ["e" * 37]  # type: ignore[index]
    assert tail.skipped == 0


def test_a_value_larger_than_one_read_is_passed_over_and_memory_stays_one_read(
        tmp_path: Path) -> None:
    log = tmp_path / "echo.jsonl"
    huge = json.dumps({"token": "big", "pad": "x" * 5000})
    log.write_text(huge + "\n" + json.dumps({"token": "after"}) + "\n")
    tail = LogTail(log, read_bytes=1024)
    assert [r["token"] for r in read_all(tail)] == ["after"]  # type: ignore[index]
    assert tail.offset == log.stat().st_size


# Tokens and cookies as iperf3 copies them: any byte but the ones JSON would need escaped.
RAW = st.binary(min_size=1, max_size=40).map(
    lambda b: bytes(c for c in b if c >= 0x20 and c not in b'"\\') or b"x")
# Between records: anything that is not a record (no "{", ended by a newline).
# (No "[" either: a torn "[" before a record and "]" after it would make one valid array.)
GARBAGE = st.binary(max_size=60).map(lambda b: b.replace(b"{", b"").replace(b"[", b"") + b"\n")


@given(tokens=st.lists(RAW, min_size=1, max_size=8),
       garbage=st.lists(st.one_of(st.none(), GARBAGE), min_size=8, max_size=8),
       cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=6),
       limit=st.integers(min_value=1, max_value=4))
def test_every_intact_record_is_read_once_in_order_whatever_the_bytes_and_the_writes(
        tmp_path_factory: pytest.TempPathFactory, tokens: list[bytes],
        garbage: list[bytes | None], cuts: list[int], limit: int) -> None:
    log = tmp_path_factory.mktemp("log") / "echo.jsonl"
    content = b""
    for i, token in enumerate(tokens):
        content += garbage[i] or b""
        content += b'{"token": "' + token + b'", "n": ' + str(i).encode() + b"}\n"
    tail = LogTail(log)
    seen: list[object] = []
    # The log grows in arbitrary pieces; the agent reads between them.
    for cut in sorted(c % (len(content) + 1) for c in cuts) + [len(content)]:
        log.write_bytes(content[:cut])
        while batch := tail.read(limit):
            seen += batch
            tail.handed_in()
        tail.handed_in()  # what was passed over, with no record after it yet: nothing
    records = [r for r in seen if isinstance(r, dict)]  # garbage may hold a bare 1 or "x"
    assert [(r["n"], r["token"]) for r in records] == [
        (i, t.decode("utf-8", "replace")) for i, t in enumerate(tokens)]
    assert tail.offset == len(content) and tail.complete


@given(st.binary(max_size=64))
def test_any_bytes_become_text_a_database_stores(raw: bytes) -> None:
    text = storable(raw.decode("utf-8", "surrogateescape"))
    assert text == raw.decode("utf-8", "replace").replace("\x00", "")
    text.encode("utf-8")  # no surrogate is left
    assert storable({"\udcff": ["\ud800", 1]}) == {"\ufffd": ["\ufffd\ufffd\ufffd", 1]}


@pytest.mark.django_db
def test_records_with_any_bytes_are_stored_made_up_tokens_are_not_and_old_ones_pruned() -> None:
    region = Region.objects.create(code="hangzhou", province="Zhejiang", city="Hangzhou")
    ref = ReferenceEndpoint.objects.create(region=region, name="ref1", host="10.0.0.1")
    now = time.time()
    mine, old = echo_token(uuid.uuid4()), echo_token(uuid.uuid4())

    def record(token: str, started: float, client: str = "10.0.0.5") -> dict[str, object]:
        return {"token": token, "client": client, "started": started, "round_trips": 1}

    # What a reference key alone could post: NULs and lone surrogates. PostgreSQL refuses
    # both in text; before, the insert failed and so did every later batch of the reference.
    # And outsiders' connections under made-up tokens: no run asks for them, none is kept.
    posted = [record(mine, now - 60, client="10.0.0.5\x00\udcff"), record(old, now - 3 * 86400),
              record("f" * 32, now - 30), record(mine[:16] + "0" * 16, now - 30)]
    stored = reference_records.ingest(ref, [], posted, now)
    assert (stored.stored, stored.skipped) == (2, 2)
    assert set(ReferenceRecord.objects.values_list("key", "client")) == {
        (mine, "10.0.0.5\ufffd"), (old, "10.0.0.5")}
    assert reference_records.prune(now) == 1  # older than REFERENCE_RECORDS_KEEP_HOURS (48)
    assert list(ReferenceRecord.objects.values_list("key", flat=True)) == [mine]
