"""The workload estimate on the web pages (/estimate/ and the compare page's estimate rows),
read through Django's test client: the board's form asks for it, the page ranks as
estimate_board.rank does, says it in the page's language, and answers bad input with a 400.

The clusters come from tests/api/test_estimates.py's `cluster` fixture: two A100 nodes
measured together by a buyer's trial agents, their figures posted as hosts post them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from board import estimate, estimate_board
from fleet.models import Node, Region
from tests.api import test_estimates
from tests.fixtures import HONEST_INVENTORY, Actor, measured, trial_agent
from web import charts

cluster = test_estimates.cluster  # the API test's fixture, used here too

JOB = "preset=gpt2-medium&steps=20000&nodes=2"


def get(url: str, status: int = 200) -> str:
    response = Client().get(url)
    assert response.status_code == status, response.content.decode()[:2000]
    return response.content.decode()


def table(html: str, table_id: str) -> str:
    found = re.search(rf'<table[^>]* id="{table_id}"[^>]*>(.*?)</table>', html, re.S)
    assert found, f"no table #{table_id}"
    return found.group(1)


def candidates(html: str, table_id: str = "estimates") -> list[str]:
    return re.findall(r'<tr data-candidate="([a-z]+-\d+)"', table(html, table_id))


def problem(html: str, element_id: str = "problem") -> str:
    """The message's text (ids and names in it are marked translate="no")."""
    found = re.search(rf'<p class="problem" id="{element_id}">(.*?)</p>', html, re.S)
    assert found, f"no #{element_id}"
    return re.sub(r"<[^>]+>", "", found.group(1))


@pytest.fixture
def two(cluster: Any, hangzhou: Region, shenzhen: Region) -> dict[str, Any]:
    """A fast Hangzhou cluster and a cheaper-a-month Shenzhen one on a slow link (dearer for
    this job: it waits on gradient sync)."""
    return {"fast": cluster("hz", hangzhou, 10.0, price=25_000),
            "slow": cluster("sz", shenzhen, 1.0, price=20_000)}


def test_the_board_has_a_job_form_that_asks_the_estimate_page(two: Any) -> None:
    for lang in ("en", "zh-hans"):
        html = get(f"/{lang}/")
        form = re.search(r'<form method="get" action="([^"]+)"[^>]*id="job-form">(.*?)</form>',
                         html, re.S)
        assert form and form.group(1) == f"/{lang}/estimate/"
        fields = set(re.findall(r'name="([a-z_]+)"', form.group(2)))
        assert fields == {"preset", "nodes", "gpus_per_node", "steps", "region", "rank_by",
                          "cpu_only"}
        presets = re.findall(r'<option value="([^"]+)" translate="no"', form.group(2))
        assert presets == list(estimate.presets())
        # The board's own region choices: provinces and region codes.
        assert 'value="guangdong"' in form.group(2) and 'value="hangzhou"' in form.group(2)
    assert "按我的训练作业排序" in get("/zh-hans/")


def test_the_page_ranks_candidates_as_estimate_board_does(two: Any) -> None:
    fast, slow = two["fast"], two["slow"]
    workload = estimate.from_preset("gpt2-medium", steps=20_000, nodes=2)
    for rank_by in ("cost", "time"):
        expected = estimate_board.rank(workload, estimate_board.Selection(), rank_by)
        html = get(f"/en/estimate/?{JOB}&rank_by={rank_by}")
        assert candidates(html) == [f"cluster-{c.id}" for c in expected]
        for c in expected:  # each row's hours and cost, as the service has them
            assert c.estimate is not None and c.estimate.cost_cny is not None
            row = re.search(rf'data-candidate="cluster-{c.id}">(.*?)</tr>', html, re.S)
            assert row
            cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
            assert cells[-2:] == [charts.number(c.estimate.hours), charts.number(c.estimate.cost_cny)]
    cheapest = get(f"/en/estimate/?{JOB}")
    assert candidates(cheapest) == [f"cluster-{fast.pk}", f"cluster-{slow.pk}"]
    # The slow link is named as the bottleneck, with the what-if that helps most.
    slow_row = re.search(rf'data-candidate="cluster-{slow.pk}">(.*?)</tr>', cheapest, re.S)
    assert slow_row and "gradient sync: " in slow_row.group(1)
    assert "would cut the job from" in slow_row.group(1)
    assert "4x gradient accumulation: " in slow_row.group(1)
    # A what-if is listed only where it pays (#34: 4x accumulation on a node it does not help
    # repeated the base figures), with what it saves.
    for row in (slow_row.group(1), re.search(
            rf'data-candidate="cluster-{fast.pk}">(.*?)</tr>', cheapest, re.S).group(1)):
        listed = re.search(r'<td class="what-ifs">(.*?)</td>', row, re.S).group(1)
        saved = [int(p) for p in re.findall(r"\((\d+)% less\)", listed)]
        assert all(p >= 5 for p in saved) and (saved or "no change pays" in listed), listed
    # The input path has no figure on the board: counted as 0, and said so.
    assert "Not measured, counted as 0: input stall" in slow_row.group(1)
    # A cluster has no page of its own: its name opens the compare page, this job with it.
    assert (f'href="/en/compare/?clusters={slow.pk}%2C{fast.pk}&amp;preset=gpt2-medium&amp;'
            f'steps=20000&amp;job_nodes=2&amp;gpus_per_node=1"') in slow_row.group(1)
    # The workload in words, and how it is computed.
    facts = table(cheapest, "workload")
    assert "355 million" in facts and "512 samples per optimizer step" in facts
    assert "2 (2 nodes × 1 GPU each)" in facts and "20,000" in facts
    assert "The figures are the board's measured ones" in cheapest
    # The board's filters still apply: Guangdong holds the slow one only.
    assert candidates(get(f"/en/estimate/?{JOB}&region=guangdong")) == [f"cluster-{slow.pk}"]


def test_the_chinese_page_says_the_bottleneck_and_what_ifs_in_chinese(two: Any) -> None:
    html = get(f"/zh-hans/estimate/?{JOB}")
    row = re.search(rf'data-candidate="cluster-{two["slow"].pk}">(.*?)</tr>', html, re.S)
    assert row
    assert "梯度同步：占单步时间的" in row.group(1)
    assert "4 倍梯度累积" in row.group(1) and "可将任务从" in row.group(1)
    assert "未测量，按 0 计：输入等待" in row.group(1)
    assert "3.55 亿" in table(html, "workload")
    assert "2（2 个节点 × 每节点 1 块 GPU）" in table(html, "workload")
    assert "gradient sync" not in html and "would cut" not in html


def test_candidates_without_a_needed_figure_are_listed_apart_with_the_reason(
        cluster: Any, hangzhou: Region) -> None:
    priced = cluster("ok", hangzhou, 10.0)
    # No GPU enrolled and no figure measured: a GPU job has nothing to stand on (#32: never
    # a CPU's figure, and no datasheet without a GPU).
    bare = cluster("ba", hangzhou, 10.0, tflops=None, inventory=HONEST_INVENTORY)
    html = get(f"/en/estimate/?{JOB}")
    assert candidates(html) == [f"cluster-{priced.pk}"]
    assert candidates(html, "skipped") == [f"cluster-{bare.pk}"]
    assert ('<span translate="no">ba0, ba1</span>: no GPU enrolled or measured; a CPU-only job '
            "can be estimated on its CPU" in table(html, "skipped"))
    zh = table(get(f"/zh-hans/estimate/?{JOB}"), "skipped")
    assert "没有登记或测得 GPU" in zh and '<span translate="no">ba0, ba1</span>' in zh
    assert "no GPU enrolled" not in zh


def test_a_cpu_figure_is_marked_and_a_node_links_to_its_page(enrol_node: Any, buyer: Actor) -> None:
    solo = enrol_node("solo")  # no GPU: its matmul figure is the CPU's
    measured(buyer, trial_agent(buyer, solo), 5.0, extra={"gpu.matmul_tflops_bf16": 0.5,
                                      "training.dataloader_samples_per_s": 1000.0,
                                      "storage.packedfile_read": 50_000.0})
    assert Node.objects.get(pk=solo.node.pk).gpu_model in ("", "none")
    # A GPU job has no GPU to run on here, whatever its matmul sample says of its device.
    gpu_job = get("/en/estimate/?preset=resnet50&steps=1000")
    assert ('<span translate="no">solo</span>: no GPU enrolled or measured'
            in table(gpu_job, "skipped"))
    # Asked for a CPU-only job, it is estimated on its CPU's figure, and marked.
    html = get("/en/estimate/?preset=resnet50&steps=1000&cpu_only=1")
    row = re.search(rf'data-candidate="node-{solo.node.pk}">(.*?)</tr>', html, re.S)
    assert row and f'href="/en/nodes/{solo.node.pk}/"' in row.group(1)
    assert "CPU figure: no GPU on the host" in row.group(1)
    assert "buyer-measured" in row.group(1)  # a trial measured it: the rung it stands on
    assert "Not measured" not in row.group(1)  # loader and storage figures are on the board
    assert "CPU 数据：该主机没有 GPU" in get("/zh-hans/estimate/?preset=resnet50&steps=1000&cpu_only=1")


@pytest.mark.parametrize("query, english, chinese", [
    ("preset=gpt5&steps=10", "“gpt5” is not a model we know", "不认识的模型"),
    ("preset=gpt2-small&steps=abc", "Steps must be a whole number from 1 to", "步数必须是"),
    ("preset=gpt2-small&steps=0", "Steps must be a whole number from 1 to", "步数必须是"),
    ("preset=gpt2-small", "Steps must be a whole number", "步数必须是"),
    ("preset=gpt2-small&steps=%C2%B2", "Steps must be a whole number", "步数必须是"),
    ("preset=gpt2-small&steps=" + "9" * 5000, "Steps must be a whole number", "步数必须是"),
    ("preset=gpt2-small&steps=10&nodes=9", "Nodes per job must be a whole number from 1 to 8",
     "每个任务的节点数必须是"),
    ("preset=gpt2-small&steps=10&rank_by=vibes", "Rank by cost or by time", "按费用或按时间排序"),
    ("preset=gpt2-small&steps=10&region=a%00b", "is not a region on the board", "不是榜单上的地区"),
])
def test_bad_input_is_a_400_that_says_what_is_wrong(db: Any, query: str, english: str,
                                                     chinese: str) -> None:
    assert english in problem(get(f"/en/estimate/?{query}", 400))
    assert chinese in problem(get(f"/zh-hans/estimate/?{query}", 400))


def test_the_compare_page_shows_the_estimate_rows_when_a_job_is_given(two: Any) -> None:
    fast, slow = two["fast"], two["slow"]
    url = f"/en/compare/?clusters={slow.pk},{fast.pk}"
    assert 'id="estimate"' not in get(url)  # no job asked: no estimate rows
    assert 'id="job-form"' in get(url)  # but the form to ask for it
    html = get(f"{url}&preset=gpt2-medium&steps=20000")  # nodes per job: the clusters' size
    rows = dict(re.findall(r'<tr data-estimate="(\w+)">(.*?)</tr>', html, re.S))
    assert set(rows) == {"step", "hours", "cost", "bottleneck"}
    workload = estimate.from_preset("gpt2-medium", steps=20_000, nodes=2)
    by_id = {c.id: c.estimate.cost_cny for c in estimate_board.rank(
        workload, estimate_board.Selection(clusters=(slow.pk, fast.pk))) if c.estimate}
    slow_cost, fast_cost = by_id[slow.pk], by_id[fast.pk]
    assert slow_cost is not None and fast_cost is not None
    costs = re.findall(r'<td class="num( best)?">([^<]*)</td>', rows["cost"])
    # In the page's column order (slow, fast); the fast one is cheaper for this job.
    assert costs == [("", charts.number(slow_cost)), (" best", charts.number(fast_cost))]
    assert "gradient sync: " in rows["bottleneck"]
    # A one-node job on two-node clusters: each says why it has no estimate.
    one = get(f"{url}&preset=gpt2-medium&steps=20000&job_nodes=1")
    bottleneck = dict(re.findall(r'<tr data-estimate="(\w+)">(.*?)</tr>', one, re.S))["bottleneck"]
    assert bottleneck.count("A cluster of 2 nodes; the job runs on 1<") == 2
    zh = get(f"/zh-hans/compare/?clusters={slow.pk},{fast.pk}&preset=gpt2-medium&steps=20000")
    assert "你的任务估算" in zh and "梯度同步：" in zh


def test_a_bad_job_on_the_compare_page_is_a_400_that_keeps_the_comparison(two: Any) -> None:
    url = f"/en/compare/?clusters={two['slow'].pk},{two['fast'].pk}&preset=gpt2-medium&steps=0"
    html = get(url, 400)
    assert "Steps must be a whole number" in problem(html, "estimate-problem")
    assert 'id="comparison"' in html and 'id="estimate"' not in html
