"""Hardening the edges (part of #16): one node's odd figures never take a page down, exports
carry no formulas, and the API answers what the docs promise."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from django.test import Client

from jobs.services import lifecycle, submission
from lab.procs import REPO
from tests.fixtures import measured


def test_zero_small_file_figures_do_not_take_the_pages_down(buyer: Any, enrol_node: Any) -> None:
    # On main: / and /api/v1/leaderboard answered 500 (ZeroDivisionError in the diagnosis).
    node = enrol_node("hz-zero")
    measured(buyer, node, 9.4, extra={"storage.smallfile_read": 0.0,
                                      "storage.packedfile_read": 0.0})
    response = buyer.client().get("/api/v1/leaderboard?evidence=any")
    assert response.status_code == 200
    assert [r["node"]["name"] for r in response.json()["results"]] == ["hz-zero"]
    assert Client().get("/?evidence=any").status_code == 200
    assert Client().get(f"/nodes/{node.node.pk}/").status_code == 200


def test_a_rule_that_cannot_judge_a_row_says_so_and_the_row_still_shows(
        buyer: Any, enrol_node: Any, monkeypatch: Any) -> None:
    from board import diagnosis

    def broken(values: Any) -> None:
        raise ZeroDivisionError("a rule nobody tested")

    monkeypatch.setattr(diagnosis, "RULES", [broken, *diagnosis.RULES])
    measured(buyer, enrol_node("hz-1"), 9.4)
    row = buyer.client().get("/api/v1/leaderboard?evidence=any").json()["results"][0]
    assert row["diagnosis"][0]["code"] == "unavailable"
    assert "broken rule could not judge" in row["diagnosis"][0]["verdict"]


def test_csv_cells_never_start_a_formula(buyer: Any, enrol_node: Any) -> None:
    # The GPU name is the host's word, given at enrolment (a result cannot change it).
    inventory = {"gpu": {"available": True, "devices": [{"name": "@SUM(1+1)*cmd|' /C calc'!A0"}]}}
    node = enrol_node("hz-1", inventory={"nics": [{"name": "eth0", "speed_mbps": 10_000}]} | inventory)
    job, _ = submission.submit(buyer.user, [node.node.pk], "network")
    claim = lifecycle.claim(node.node, job.runs.get().pk)
    figure = {"metric": "network.tcp_throughput", "value": 9.4, "unit": "Gbit/s", "n": 3,
              "p5": 9.3, "p95": 9.5, "min": None, "max": None, "cv": 0.01,
              "metadata": {"peer": "=HYPERLINK(\"http://evil.example\",\"click\")"}}
    lifecycle.finish(node.node, claim.run.pk, claim.attempt.id, True, [figure], "", inventory)
    board = buyer.client().get("/api/v1/leaderboard?evidence=any&format=csv").content.decode("utf-8-sig")
    history = buyer.client().get(f"/api/v1/nodes/{node.node.pk}/history?format=csv").content.decode(
        "utf-8-sig")
    for text in (board, history):
        cells = [c.strip('"') for line in text.splitlines() for c in line.split(",")]
        assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")], text
    assert "'@SUM" in board and "'=HYPERLINK" in history


def test_cancelling_a_finished_job_is_a_409(buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "noop")
    claim = lifecycle.claim(node.node, job.runs.get().pk)
    lifecycle.finish(node.node, claim.run.pk, claim.attempt.id, False, [], "probe failed", {})
    response = buyer.client().post(f"/api/v1/benchmarks/{job.pk}/cancel")
    assert response.status_code == 409 and "already finished" in response.json()["detail"]
    assert job.runs.get().status == "failed"  # unchanged


def test_a_bad_request_has_the_documented_error_shape(buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    response = buyer.client().post("/api/v1/benchmarks", {
        "nodes": [node.node.pk], "suite": "network", "params": {"iperf3_duration": 100000}},
        format="json")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"detail", "errors"}
    assert "iperf3_duration" in str(body["errors"]["params"]) and "between" in body["detail"]


def test_lists_come_in_cursor_pages_with_a_maximum_size(buyer: Any, enrol_node: Any) -> None:
    nodes = [enrol_node(f"hz-{i}") for i in range(3)]
    for node in nodes:
        submission.submit(buyer.user, [node.node.pk], "noop")
    client = buyer.client()
    first = client.get("/api/v1/nodes?page_size=2").json()
    second = client.get(first["next"]).json()
    assert [n["name"] for n in first["results"] + second["results"]] == ["hz-0", "hz-1", "hz-2"]
    jobs = client.get("/api/v1/benchmarks?page_size=100000").json()  # capped, not unbounded
    assert len(jobs["results"]) == 3 and jobs["next"] is None
    from api.pagination import NewestFirst
    assert NewestFirst.max_page_size == 200


def test_metrics_answer_only_the_scrapers_token(settings: Any, db: Any) -> None:
    settings.METRICS_TOKEN = "scrape-me"
    assert Client().get("/metrics").status_code == 403
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    ok = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me")
    assert ok.status_code == 200 and b"bench_" in ok.content
    settings.METRICS_TOKEN, settings.PRODUCTION = "", True
    assert Client().get("/metrics").status_code == 403  # production without a token: closed


def production_settings(**env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "BENCH_ENV": "production", "SECRET_KEY": "s" * 50,
            "DATABASE_URL": "postgres://x@127.0.0.1:1/x", "REDIS_URL": "redis://:p@127.0.0.1:1/0",
            "NODE_BROKER_ACL": "true", "ALLOWED_HOSTS": "bench.example.cn",
            "CERT_SIGNING_KEY_FILE": "/nonexistent", "DJANGO_SETTINGS_MODULE": "config.settings"}
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER)")
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False, env=base | env)


def test_production_refuses_debug_and_a_wildcard_host_and_secures_cookies() -> None:
    done = production_settings()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["True", "31536000"]
    debug = production_settings(DEBUG="true")
    assert debug.returncode != 0 and "DEBUG must be off" in debug.stderr
    wildcard = production_settings(ALLOWED_HOSTS="*")
    assert wildcard.returncode != 0 and "no '*'" in wildcard.stderr


def test_enrolment_is_throttled_per_address(db: Any, settings: Any) -> None:
    from django.core.cache import cache

    cache.clear()
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "enrolment": "3/hour"}}
    from rest_framework.settings import api_settings
    from rest_framework.throttling import ScopedRateThrottle

    api_settings.reload()
    default_rates = ScopedRateThrottle.THROTTLE_RATES
    ScopedRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        answers = [Client().post("/api/v1/enrol", {"token": f"guess-{i}"},
                                 content_type="application/json") for i in range(4)]
        assert [a.status_code for a in answers[:3]] == [404, 404, 404]
        assert answers[3].status_code == 429 and int(answers[3]["Retry-After"]) > 0
    finally:
        ScopedRateThrottle.THROTTLE_RATES = default_rates
        cache.clear()


def test_one_buyer_cannot_fill_a_nodes_queue(buyer: Any, other_buyer: Any, enrol_node: Any,
                                             settings: Any) -> None:
    settings.USER_MAX_QUEUED_RUNS_PER_NODE = 2
    node = enrol_node("hz-1")
    for _ in range(2):
        submission.submit(buyer.user, [node.node.pk], "noop")
    response = buyer.client().post("/api/v1/benchmarks", {"nodes": [node.node.pk], "suite": "noop"},
                                   format="json")
    assert response.status_code == 429 and "Retry-After" in response
    assert "queued runs on nodes" in response.json()["detail"]
    assert other_buyer.client().post("/api/v1/benchmarks", {"nodes": [node.node.pk],
                                                            "suite": "noop"},
                                     format="json").status_code == 202


def test_an_enrolment_address_must_be_a_host_ip_and_the_token_survives(
        provider: Any, provider_owner: Any, hangzhou: Any, settings: Any) -> None:
    from fleet.services import enrolment

    settings.ALLOW_LOOPBACK_ADDRESSES = False
    _, plain = enrolment.create_token(provider, hangzhou, "hz-1", provider_owner.user)
    for bad, why in (("--help", "not an IP address"), ("evil.example.com", "not an IP address"),
                     ("169.254.169.254", "link-local"), ("127.0.0.1", "loopback"),
                     ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast")):  # noqa: S104
        response = Client().post("/api/v1/enrol", {"token": plain, "address": bad},
                                 content_type="application/json")
        assert response.status_code == 400 and why in response.json()["detail"], bad
    good = Client().post("/api/v1/enrol", {"token": plain, "address": "10.20.0.5"},
                         content_type="application/json")
    assert good.status_code == 201  # the refused attempts did not spend the token


def test_a_nodes_history_comes_in_bounded_pages(buyer: Any, enrol_node: Any) -> None:
    node = enrol_node("hz-1")
    for gbps in (1.0, 2.0, 3.0):
        measured(buyer, node, gbps)
    client = buyer.client()
    url = f"/api/v1/nodes/{node.node.pk}/history?metric=network.tcp_throughput&page_size=2"
    first = client.get(url).json()
    second = client.get(first["next"]).json()
    assert [p["value"] for p in first["results"] + second["results"]] == [1.0, 2.0, 3.0]
    assert second["next"] is None
    assert client.get(url + "&cursor=garbage").status_code == 400
    assert client.get(url.replace("page_size=2", "page_size=-1")).status_code == 400


def test_a_host_cannot_make_up_barriers(buyer: Any, enrol_node: Any) -> None:
    # Each barrier arrival is a row; a host posting made-up names added rows without end.
    from jobs.models import BarrierArrival

    a, b = enrol_node("hz-1"), enrol_node("hz-2")
    job, _ = submission.submit(buyer.user, [a.node.pk, b.node.pk], "network")
    run = job.runs.get(node=a.node)
    claim = lifecycle.claim(a.node, run.pk)

    def wait_at(name: str) -> Any:
        return a.client().post(f"/api/v1/node/runs/{run.pk}/barrier",
                               {"attempt_id": str(claim.attempt.id), "name": name}, format="json")

    assert wait_at("network-start").status_code == 200
    assert wait_at("network-round-1").status_code == 200  # two nodes: rounds 0 and 1
    for made_up in ("network-round-2", "network-round-99999", "x"):
        response = wait_at(made_up)
        assert response.status_code == 400 and "no barrier" in response.json()["detail"]
    assert BarrierArrival.objects.filter(run=run).count() == 2
    # The state says whether the others still move: a node busy elsewhere (its turn at a
    # reference) is waited for; one whose progress stopped is given up on after the timeout.
    still = wait_at("network-start").json()["activity"]
    assert wait_at("network-start").json()["activity"] == still
    other = job.runs.get(node=b.node)
    lifecycle.claim(b.node, other.pk)
    moved = wait_at("network-start").json()["activity"]
    assert moved != still
