"""The web pages in a real headless Chromium: no console errors, filters and sorting change
the rows, Chinese labels in Chinese, charts drawn, a job's progress live. Screenshots of
every page are saved under var/test-output/screenshots/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from jobs.services import lifecycle, submission
from lab.procs import REPO
from tests.fixtures import measured

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = REPO / "var" / "test-output" / "screenshots"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("chromium") is None,
                                 reason="Debian's chromium is not installed (make tools installs it)")]


@pytest.fixture
def board(buyer: Any, enrol_node: Any, shenzhen: Any) -> dict[str, Any]:
    hz1, hz2, sz1 = enrol_node("hz-1"), enrol_node("hz-2"), enrol_node("sz-1", region=shenzhen)
    for node, gbps, rtt in ((hz1, 9.4, 1.2), (hz2, 0.9, 3.5), (sz1, 0.19, 12.5)):
        measured(buyer, node, gbps, extra={"network.tcp_rtt": rtt})
    measured(buyer, hz1, 9.1, extra={"network.tcp_rtt": 1.1})
    return {"hz-1": hz1, "hz-2": hz2, "sz-1": sz1}


@pytest.fixture
def page(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
    # still synchronous and safe, which Django cannot tell by itself.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        context = browser.new_context(locale="en-US")
        tab = context.new_page()
        tab.errors = []  # console errors and uncaught exceptions
        tab.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: tab.errors.append(str(e)))
        yield tab
        browser.close()


def rows(tab: Any) -> list[str]:
    return [str(n) for n in tab.eval_on_selector_all("#leaderboard tbody tr[data-node]",
                                                     "els => els.map(e => e.dataset.node)")]


def test_the_leaderboard_filters_sorts_and_draws_its_chart(board: Any, page: Any,
                                                          live_server: Any) -> None:
    # Typed figures are host-reported: by default listed apart, unranked, not on the board.
    page.goto(f"{live_server.url}/")
    assert rows(page) == []
    assert page.locator("#host-reported tbody tr").count() == 3
    page.goto(f"{live_server.url}/?evidence=any")
    assert rows(page) == ["hz-1", "hz-2", "sz-1"]
    assert page.locator("#region-chart svg rect").count() >= 3  # provinces and cities
    page.screenshot(path=str(SHOTS / "leaderboard.png"), full_page=True)

    page.select_option("select[name=region]", "guangdong")
    page.click("#apply")
    assert rows(page) == ["sz-1"]

    page.goto(f"{live_server.url}/?evidence=any")
    page.check("#more-columns")  # the other figures' columns: folded by default (#34)
    page.click("th a[data-metric='network.tcp_rtt']")  # lower is better: re-ranked
    assert rows(page) == ["hz-1", "hz-2", "sz-1"]
    page.goto(f"{live_server.url}/?metric=network.tcp_rtt&region=zhejiang&evidence=any")
    assert rows(page) == ["hz-1", "hz-2"]
    assert page.errors == []


def test_the_chinese_page_has_chinese_labels(board: Any, page: Any, live_server: Any) -> None:
    zh = page.context.browser.new_context(locale="zh-CN").new_page()  # Accept-Language: zh-CN
    zh.goto(f"{live_server.url}/?evidence=any")
    assert zh.inner_text("header .brand") == "GPU 节点排行榜"
    assert "浙江与广东（深圳）对比" in zh.content() and "本地机房" in zh.inner_text("#leaderboard")
    zh.screenshot(path=str(SHOTS / "leaderboard-zh.png"), full_page=True)
    page.goto(f"{live_server.url}/")
    assert page.inner_text("header .brand") == "GPU node leaderboard"
    with page.expect_navigation():
        page.select_option("#language select", "zh-hans")  # the switch on the page
    assert page.inner_text("header .brand") == "GPU 节点排行榜"
    assert page.errors == []


def test_node_and_provider_pages_show_history_and_diagnosis(board: Any, page: Any,
                                                            live_server: Any) -> None:
    sz1 = board["sz-1"].node
    page.goto(f"{live_server.url}/nodes/{board['hz-1'].node.pk}/")
    assert page.inner_text("#node-name") == "hz-1"
    assert page.locator(".history svg").count() == 2  # throughput and TCP RTT
    assert page.locator(".history svg circle").count() == 4  # measured twice each
    page.screenshot(path=str(SHOTS / "node.png"), full_page=True)
    page.goto(f"{live_server.url}/nodes/{sz1.pk}/")
    assert "12.5 ms to its region" in page.inner_text("#diagnosis")
    page.goto(f"{live_server.url}/providers/{sz1.provider_id}/")
    assert page.locator("#provider-nodes tbody tr").count() == 3
    page.screenshot(path=str(SHOTS / "provider.png"), full_page=True)
    assert page.errors == []


def test_the_job_page_follows_a_running_job_live(board: Any, page: Any, live_server: Any,
                                                 buyer: Any) -> None:
    node = board["hz-2"]
    job, _ = submission.submit(buyer.user, [node.node.pk], "noop")
    client = Client()
    client.force_login(buyer.user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    # Served with its state, before the script's first answer (it said "…" until then, and
    # the reloaded page below was once read in that moment: ci14).
    served = client.get(f"/en/jobs/{job.pk}/").content.decode()
    assert '<b id="job-status" data-status="queued">queued</b>' in served
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    page.wait_for_function("document.getElementById('job-status').textContent === 'queued'")
    claim = lifecycle.claim(node.node, job.runs.get().pk)
    lifecycle.renew(node.node, claim.run.pk, claim.attempt.id, {"probe": "noop", "step": 1, "steps": 3})
    page.wait_for_function("document.querySelector('#runs tbody').textContent.includes('noop 1/3')",
                           timeout=10_000)
    assert page.inner_text("#job-status") == "running"
    page.screenshot(path=str(SHOTS / "job.png"), full_page=True)
    # Finished: the page reloads once and shows the figures by node, linked to its page.
    lifecycle.finish(node.node, claim.run.pk, claim.attempt.id, True, [
        {"metric": "noop.duration", "value": 0.25, "unit": "s", "n": 1, "p5": None, "p95": None,
         "min": None, "max": None, "cv": None, "metadata": {}}], "", {})
    page.wait_for_selector("#results .samples", timeout=10_000)
    assert page.inner_text("#job-status") == "succeeded"
    assert page.get_attribute("#results h3 a", "href") == f"/en/nodes/{node.node.pk}/"
    assert "no-op probe duration" in page.inner_text("#results") and "0.25" in page.inner_text("#results")
    assert page.errors == []
