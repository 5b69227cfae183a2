"""The buyer's own sites on the web pages: /sites/ with what `benchctl probe` measured from
each, the board and the compare page "from my site", and the estimate with the data at a
site. Figures are the owner's alone: another buyer gets a 404, an anonymous reader the
sign-in page, and nobody but the owner ever sees them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from jobs.models import Site
from jobs.services import site_probes
from tests.api.test_estimate_staging import FIGURES
from tests.api.test_estimates import A100
from tests.fixtures import Actor, measured, trial_agent

pytestmark = pytest.mark.django_db


def signed_in(actor: Actor) -> Client:
    client = Client()
    client.force_login(actor.user)
    return client


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.content.decode()[:2000]
    return response.content.decode()


def probed(buyer: Actor, site: Site, node: Any, rtt_ms: float, gbps: float,
           node_record: bool = False) -> None:
    """A probe of ``node`` from ``site`` as `benchctl probe` stores it; with the node's own
    record of both tests when ``node_record`` (then it reads confirmed)."""
    (issued,) = site_probes.issue(site, [node.pk])
    site_probes.claim(node, issued.token)
    if node_record:
        site_probes.record(node, issued.probe.pk, {"client": "127.0.0.1", "rtts_ms": [rtt_ms],
                                                   "served": [{"cookie": "c1"}, {"cookie": "c2"}]})
    site_probes.results(buyer.user, issued.probe.pk, {
        "rtts_ms": [rtt_ms], "upload_gbps": gbps, "download_gbps": gbps / 2,
        "cookies": ["c1", "c2"]})


def rows_of(html: str, table_class: str) -> list[str]:
    found = re.search(rf'<table class="{table_class}">(.*?)</table>', html, re.S)
    assert found, f"no table.{table_class}"
    return re.findall(r'<tr data-node="([^"]+)"', found.group(1))


@pytest.fixture
def office(buyer: Actor, enrol_node: Any) -> dict[str, Any]:
    """The buyer's Hangzhou office: hz-near probed (and confirmed by the node), sz-far
    probed without the node's record, hz-unprobed not probed from it."""
    enrolled = {"near": enrol_node("hz-near", address="127.0.0.1"),
                "far": enrol_node("sz-far", address="127.0.0.2"),
                "unprobed": enrol_node("hz-unprobed", address="127.0.0.3")}
    near, far, unprobed = (enrolled[k].node for k in ("near", "far", "unprobed"))
    site = site_probes.create_site(buyer.user, "Hangzhou office", "Hangzhou")
    probed(buyer, site, near, 2.5, 0.94, node_record=True)
    probed(buyer, site, far, 31.5, 0.21)
    return {"site": site, "near": near, "far": far, "unprobed": unprobed, "enrolled": enrolled}


# --- /sites/ ------------------------------------------------------------------------------

def test_the_site_page_shows_the_owner_s_figures_and_the_command_to_measure_more(
        buyer: Actor, office: dict[str, Any]) -> None:
    site = office["site"]
    html = page(signed_in(buyer), f"/en/sites/{site.pk}/")
    assert "Hangzhou office" in html and rows_of(html, "site-figures") == ["hz-near", "sz-far"]
    near = re.search(r'<tr data-node="hz-near">(.*?)</tr>', html, re.S).group(1)  # type: ignore[union-attr]
    assert ">2.5<" in near and ">0.94<" in near and ">0.47<" in near
    assert 'class="badge confirmed"' in near
    far = re.search(r'<tr data-node="sz-far">(.*?)</tr>', html, re.S).group(1)  # type: ignore[union-attr]
    assert ">31.5<" in far and "not confirmed" in far
    # The command probes what this site has not measured yet, by the site's id.
    assert f"benchctl probe --site {site.pk} --nodes {office['unprobed'].pk}<" in html


def test_the_site_list_is_linked_for_signed_in_buyers_and_reads_in_both_languages(
        buyer: Actor, office: dict[str, Any]) -> None:
    client = signed_in(buyer)
    board = page(client, "/zh-hans/")
    assert 'href="/zh-hans/sites/"' in board and "我的站点" in board
    zh = page(client, "/zh-hans/sites/")
    assert "我的站点" in zh and "杭州" in zh and "已确认" in zh and "未确认" in zh
    assert "往返时延" in zh and "上行" in zh and "下行" in zh
    en = page(client, "/en/sites/")
    assert "My sites" in en and "Upload" in en and "not confirmed" in en
    assert 'href="/en/sites/"' not in page(Client(), "/en/")  # not for anonymous readers


def test_another_buyer_gets_a_404_and_never_the_figures(
        buyer: Actor, other_buyer: Actor, office: dict[str, Any]) -> None:
    client = signed_in(other_buyer)
    assert "31.5" not in page(client, f"/en/sites/{office['site'].pk}/", 404)
    mine = page(client, "/en/sites/")
    assert "data-site=" not in mine and "No sites yet" in mine


def test_an_anonymous_reader_is_sent_to_sign_in(office: dict[str, Any]) -> None:
    for url in ("/en/sites/", f"/en/sites/{office['site'].pk}/"):
        response = Client().get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- the board, from my site --------------------------------------------------------------

@pytest.fixture
def ranked(buyer: Actor, office: dict[str, Any]) -> dict[str, Any]:
    """The three nodes on the board (host-reported: read with evidence=any), ranked on
    throughput sz-far, hz-unprobed, hz-near."""
    for name, gbps in (("near", 1.0), ("far", 5.0), ("unprobed", 3.0)):
        measured(buyer, office["enrolled"][name], gbps)
    return office


def board_rows(html: str) -> list[str]:
    found = re.search(r'<table id="leaderboard"[^>]*>(.*?)</table>', html, re.S)
    assert found, "no board"
    return re.findall(r'<tr data-node="([^"]+)"', found.group(1))


def board_row(html: str, node: str) -> str:
    found = re.search(rf'<tr data-node="{node}">(.*?)</tr>', html, re.S)
    assert found, f"no row {node}"
    return found.group(1)


def test_the_board_from_my_site_shows_its_figures_beside_each_node_and_sorts_by_them(
        buyer: Actor, ranked: dict[str, Any]) -> None:
    client, site = signed_in(buyer), ranked["site"]
    plain = page(client, "/en/?evidence=any")
    assert board_rows(plain) == ["sz-far", "hz-unprobed", "hz-near"]
    assert "site-rtt" not in plain and f'<option value="{site.pk}"' in plain
    html = page(client, f"/en/?evidence=any&site={site.pk}")
    assert board_rows(html) == ["sz-far", "hz-unprobed", "hz-near"]  # the board's order
    near = board_row(html, "hz-near")
    assert re.search(r'class="num site-rtt"[^>]*>2.5<', near)
    assert re.search(r'class="num site-upload"[^>]*>0.94<', near)
    assert re.search(r'class="num site-download"[^>]*>0.47<', near)
    unprobed = board_row(html, "hz-unprobed")
    assert "not probed from this site" in unprobed and "site-rtt" not in unprobed
    assert 'class="num rank">2<' in unprobed
    # Nearest first, the unprobed last; fastest upload first: the ranks stay the board's.
    by_rtt = page(client, f"/en/?evidence=any&site={site.pk}&sort=site_rtt")
    assert board_rows(by_rtt) == ["hz-near", "sz-far", "hz-unprobed"]
    assert 'class="num rank">3<' in board_row(by_rtt, "hz-near")
    link = re.search(r'<a href="([^"]+)" id="sort-site-upload"', by_rtt)
    assert link and f"site={site.pk}" in link.group(1) and "sort=site_upload" in link.group(1)
    by_upload = page(client, f"/en/?evidence=any&site={site.pk}&sort=site_upload")
    assert board_rows(by_upload) == ["hz-near", "sz-far", "hz-unprobed"]
    by_download = page(client, f"/en/?evidence=any&site={site.pk}&sort=site_download")
    assert board_rows(by_download) == ["hz-near", "sz-far", "hz-unprobed"]


def test_the_board_from_my_site_reads_in_chinese(buyer: Actor, ranked: dict[str, Any]) -> None:
    html = page(signed_in(buyer), f"/zh-hans/?evidence=any&site={ranked['site'].pk}")
    assert "本站点未探测" in board_row(html, "hz-unprobed")
    assert "从我的站点的往返时延" in html and "从我的站点上行" in html and "下行到我的站点" in html


def test_the_board_never_shows_another_buyer_s_site(
        buyer: Actor, other_buyer: Actor, ranked: dict[str, Any]) -> None:
    url = f"/en/?evidence=any&site={ranked['site'].pk}&sort=site_rtt"
    assert "2.5<" not in page(signed_in(other_buyer), url, 404)
    assert page(Client(), url, 404)
    theirs = page(signed_in(other_buyer), "/en/?evidence=any")
    assert 'id="site-choice"' not in theirs and "Hangzhou office" not in theirs


# --- the compare page, from my site --------------------------------------------------------

def compare_row(html: str, key: str) -> list[str]:
    found = re.search(rf'<tr data-site-figure="{key}">(.*?)</tr>', html, re.S)
    assert found, f"no row {key}"
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                   found.group(1), re.S)]


def test_the_compare_page_shows_my_site_s_figures_of_each_node(
        buyer: Actor, other_buyer: Actor, ranked: dict[str, Any]) -> None:
    nodes = ",".join(str(ranked[k].pk) for k in ("near", "far", "unprobed"))
    url = f"/compare/?nodes={nodes}&site={ranked['site'].pk}"
    html = page(signed_in(buyer), "/en" + url)
    assert compare_row(html, "rtt_ms") == ["2.5", "31.5", "not probed from this site"]
    assert compare_row(html, "upload_gbps") == ["0.94", "0.21", "not probed from this site"]
    assert compare_row(html, "download_gbps")[:2] == ["0.47", "0.105"]
    assert re.search(r'<tr data-site-figure="rtt_ms">.*?<td class="num best">2.5<', html, re.S)
    assert "本站点未探测" in page(signed_in(buyer), "/zh-hans" + url)
    # Without ?site the page has no such row; another buyer's site is a 404.
    assert "data-site-figure" not in page(signed_in(buyer), f"/en/compare/?nodes={nodes}")
    assert "31.5" not in page(signed_in(other_buyer), "/en" + url, 404)


# --- the estimate, with the data at my site ---------------------------------------------------

def staging_lines(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t) for t in re.findall(r'<div class="staging">(.*?)</div>',
                                                          html, re.S)]


def test_the_estimate_stages_the_data_from_my_site_as_the_api_words_it(
        buyer: Actor, other_buyer: Actor, enrol_node: Any) -> None:
    solo = enrol_node("solo", inventory=A100, address="127.0.0.1")
    measured(buyer, trial_agent(buyer, solo, inventory=A100), 5.0, extra=FIGURES)
    site = site_probes.create_site(buyer.user, "Hangzhou office", "Hangzhou")
    lab = site_probes.create_site(buyer.user, "Lab", "Ningbo")
    probed(buyer, site, solo.node, 20.0, 1.0)
    client = signed_in(buyer)
    job = "/estimate/?preset=resnet50&steps=1000&dataset_gb=450"
    form = page(client, f"/en{job}")
    assert 'name="dataset_gb"' in form and f'<option value="{site.pk}"' in form
    assert 'name="data_use"' in form

    html = page(client, f"/en{job}&data_site={site.pk}")
    assert staging_lines(html) == [
        "copying 450 GB from your Hangzhou office takes 1 h before the job starts"]
    assert "450 GB at your site" in html and "copied to the node once" in html
    zh = page(client, f"/zh-hans{job}&data_site={site.pk}")
    assert staging_lines(zh) == ["从您的Hangzhou office复制 450 GB 数据，作业开始前需要 1 小时"]
    assert "数据集" in zh and "数据所在位置" in zh
    streamed = page(client, f"/en{job}&data_site={site.pk}&data_use=stream")
    assert staging_lines(streamed)[0].startswith("streaming from your Hangzhou office adds")
    # No probe from the Lab reached the node: unknown, never nothing.
    unknown = page(client, f"/en{job}&data_site={lab.pk}")
    assert staging_lines(unknown) == ["data staging from your Lab is unknown: no probe from it "
                                      "reached this candidate (benchctl probe --site)"]
    # The data on the node: no staging line.
    assert staging_lines(page(client, f"/en{job}")) == []

    # Bad input is a 400 in the page's language; another buyer's site a 404.
    assert "Data set size must be a number" in page(client, f"/en{job}x&data_site={site.pk}", 400)
    assert "copy-once" in page(client, f"/en{job}&data_use=later", 400)
    assert "Give the data set" in page(
        client, f"/en/estimate/?preset=resnet50&steps=1000&data_site={site.pk}", 400)
    assert "Hangzhou office" not in page(signed_in(other_buyer), f"/en{job}&data_site={site.pk}",
                                         404)
    assert page(Client(), f"/en{job}&data_site={site.pk}", 404)
