"""benchctl estimate: a buyer's job on each candidate, as the platform estimates it.

The live tests run benchctl as a person does (a subprocess, only LANG saying the language)
against the live test platform, with clusters its trial agents posted as hosts post them (the approach
of tests/api/test_estimates.py), and check the printed figures against the API's own answer.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from board.models import ClusterResult
from fleet.models import Node, Region
from lab.procs import REPO
from tests.board.test_links_clusters import multi_node_job, uniform
from tests.fixtures import HONEST_INVENTORY, Actor, measured, trial_agent
from workers import cli, i18n
from workers.buyer import estimate
from workers.buyer.display import number
from workers.errors import CliError

LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
A100 = "NVIDIA A100-SXM4-80GB"
TFLOPS = 250.0  # bf16, under the A100's published 312
JOB = ("--preset", "gpt2-medium", "--nodes", "2", "--steps", "20000")


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    """In-process tests read English unless they switch; the next test gets the default back."""
    i18n.activate(i18n.ENGLISH)
    yield
    i18n.activate(i18n.language())


def benchctl(*args: str, lang: str = "C", **env: str) -> subprocess.CompletedProcess[str]:
    """benchctl as a person runs it, with only LANG (and ``env``) saying the language."""
    base = {k: v for k, v in os.environ.items() if k not in LOCALE_VARIABLES}
    return subprocess.run([sys.executable, "-m", "workers.cli", *args], cwd=REPO, timeout=120,
                          capture_output=True, text=True, encoding="utf-8", check=False,
                          env={**base, "COLUMNS": "200", "LANG": lang, **env})


def tables(out: str) -> list[dict[str, Any]]:
    """Each table rich printed: its title, headers and body rows, as cells."""
    found: list[dict[str, Any]] = []
    title = ""
    for line in out.splitlines():
        edge = line[:1]  # ┏ a table's top, ┃ its header row, │ a body row
        cells = [c.strip() for c in line.rstrip()[1:-1].split(edge)] if edge in ("┃", "│") else []
        if edge == "┏":
            found.append({"title": title, "headers": [], "rows": []})
        elif edge == "┃":
            found[-1]["headers"] = cells
        elif edge == "│":
            found[-1]["rows"].append(cells)
        elif line.strip():
            title = line.strip()
    return found


@pytest.fixture
def platform(live_server: Any, buyer: Actor, tmp_path: Path) -> dict[str, str]:
    """The environment that points benchctl at the live platform as the buyer."""
    return {"BENCH_URL": live_server.url, "BENCH_TOKEN": buyer.token,
            "BENCH_CLIENT_CONFIG": str(tmp_path / "no-client.json")}


def curve_for(link_gbps: float) -> list[dict[str, float]]:
    """What the probe posts: busbw rising with the message size to half the link's GB/s."""
    top = link_gbps / 8 * 0.5
    return [{"size_mib": 1, "busbw_gbs": top * 0.5}, {"size_mib": 32, "busbw_gbs": top}]


@pytest.fixture
def cluster(enrol_node: Any, buyer: Actor, settings: Any) -> Callable[..., ClusterResult]:
    """Two nodes measured together on a link of ``gbps`` by the buyer's trial agents of
    them, each with its own matmul figure (tests/api/test_estimates.py's approach; the live
    server commits, so the cluster's on-commit work has run when this returns).
    ``gpu=None``: hosts without a GPU."""
    settings.TRIAL_TOKENS_PER_DAY = 100

    def make(prefix: str, region: Region, gbps: float, price: int | None = 25_000,
             params: dict[str, Any] | None = None, gpu: str | None = A100,
             tflops: float = TFLOPS) -> ClusterResult:
        inventory = HONEST_INVENTORY | (
            {"gpu": {"available": True, "devices": [{"name": gpu}]}} if gpu else {})
        count = Node.objects.count()
        enrolled = [enrol_node(f"{prefix}{i}", region=region, inventory=inventory,
                               address=f"10.0.9.{count + i + 2}") for i in range(2)]
        agents = []
        for e in enrolled:
            Node.objects.filter(pk=e.node.pk).update(monthly_price_cny=price,
                                                     gpu_model=gpu or "none")
            e.node.refresh_from_db()
            agents.append(trial_agent(buyer, e, inventory=inventory))
            measured(buyer, agents[-1], 5.0, extra={"gpu.matmul_tflops_bf16": tflops})
        job = multi_node_job(buyer, agents, uniform(2, gbps), params=params,
                             curve=curve_for(gbps))
        return ClusterResult.objects.get(job=job)
    return make


@pytest.fixture
def two_clusters(cluster: Any, hangzhou: Region, shenzhen: Region) -> tuple[ClusterResult, ...]:
    """Hangzhou on 10 Gbit/s at 50,000 CNY a month; Shenzhen on 1 Gbit/s at 40,000: cheaper
    a month, dearer for a gpt2-medium job that waits on its gradient sync."""
    return cluster("hz", hangzhou, 10.0, price=25_000), cluster("sz", shenzhen, 1.0, price=20_000)


def api_answer(live_server: Any, buyer: Actor, request: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(f"{live_server.url}{estimate.PATH}", json=request,
                             headers=buyer.headers, timeout=30)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


GPT2_MEDIUM = {"workload": {"preset": "gpt2-medium", "steps": 20_000, "nodes": 2},
               "rank_by": "cost"}


# The table


def test_the_table_ranks_the_cheaper_cluster_for_the_job_first_with_the_apis_figures(
        platform: dict[str, str], two_clusters: Any, live_server: Any, buyer: Actor) -> None:
    fast, slow = two_clusters
    done = benchctl("estimate", *JOB, **platform)
    assert done.returncode == 0, done.stderr
    (table,) = tables(done.stdout)
    assert table["title"] == ("gpt2-medium: 20,000 steps on 2 node(s) with 1 GPU(s) each, "
                              "ranked by cost")
    assert table["headers"] == ["rank", "candidate", "provider", "region", "step (s)", "hours",
                                "cost (CNY)", "bottleneck", "notes"]
    api = {r["id"]: r for r in api_answer(live_server, buyer, GPT2_MEDIUM)["results"]}
    first, second = table["rows"]
    for row, rank, result in ((first, "1", fast), (second, "2", slow)):
        e = api[result.pk]["estimate"]
        assert row[:4] == [rank, api[result.pk]["name"], "West Lake DC", result.region.code]
        assert row[4:7] == [number(e["step_s"]), number(e["hours"]), number(e["cost_cny"])]
        assert row[8] == "not measured, counted as 0: input stall"  # no loader figure posted
    # The Shenzhen pair is 10,000 CNY a month cheaper, and several times dearer for this job.
    assert api[slow.pk]["estimate"]["cost_cny"] > 2 * api[fast.pk]["estimate"]["cost_cny"]
    slow_e = api[slow.pk]["estimate"]
    best = min(slow_e["what_ifs"], key=lambda w: w["hours"])
    assert best["name"] == "link_10gbe"
    assert second[7] == (f"gradient sync: {slow_e['shares']['sync']:.0%} of the step; a 10 GbE "
                         f"link would cut the job from {number(slow_e['hours'])} h to "
                         f"{number(best['hours'])} h")


def test_the_issues_example_estimates_the_clusters_in_shenzhen_only(
        platform: dict[str, str], two_clusters: Any) -> None:
    _fast, slow = two_clusters
    done = benchctl("estimate", "--preset", "gpt2-medium", "--nodes", "2", "--steps", "20000",
                    "--region", "shenzhen", "--format", "json", **platform)
    assert done.returncode == 0, done.stderr
    assert [(r["id"], r["region"]) for r in json.loads(done.stdout)] == [(slow.pk, "shenzhen")]


def test_skipped_candidates_follow_the_ranked_ones_with_their_reason(
        platform: dict[str, str], cluster: Any, hangzhou: Region) -> None:
    good = cluster("ok", hangzhou, 10.0)
    unpriced = cluster("np", hangzhou, 10.0, price=None)
    tuned = cluster("tu", hangzhou, 10.0, params={"train_steps": 7})  # a provider's own tuning
    done = benchctl("estimate", *JOB, "--clusters", f"{tuned.pk},{unpriced.pk},{good.pk}",
                    **platform)
    assert done.returncode == 0, done.stderr
    ranked, skipped = tables(done.stdout)
    assert [row[0] for row in ranked["rows"]] == ["1", "2"]
    unpriced_row = ranked["rows"][1]
    assert unpriced_row[6] == "" and unpriced_row[8].endswith("; no price")
    assert skipped["title"] == "skipped"
    assert skipped["headers"] == ["candidate", "provider", "region", "reason"]
    ((name, provider, region, reason),) = skipped["rows"]
    assert reason.startswith("not a ranked offer: measured with custom parameters")
    assert (provider, region) == ("West Lake DC", "hangzhou")


def test_compute_on_a_cpu_is_marked(platform: dict[str, str], cluster: Any,
                                    hangzhou: Region) -> None:
    on_cpu = cluster("cpu", hangzhou, 10.0, gpu=None, tflops=1.5)  # no GPU on the hosts
    # A GPU job has no GPU to run on there: skipped, saying so.
    gpu_job = benchctl("estimate", *JOB, "--clusters", str(on_cpu.pk), **platform)
    (skipped,) = tables(gpu_job.stdout)
    assert "no GPU enrolled or measured" in skipped["rows"][0][-1], gpu_job.stdout
    # A CPU-only job runs on the CPUs' figure, marked.
    done = benchctl("estimate", *JOB, "--cpu-only", "--clusters", str(on_cpu.pk), **platform)
    (table,) = tables(done.stdout)
    assert table["rows"][0][8].startswith("compute is a CPU's figure; ")


# For machines


def test_json_keeps_the_apis_raw_numbers(platform: dict[str, str], two_clusters: Any,
                                         live_server: Any, buyer: Actor) -> None:
    fast, slow = two_clusters
    done = benchctl("estimate", *JOB, "--format", "json", **platform)
    rows = json.loads(done.stdout)
    api = api_answer(live_server, buyer, GPT2_MEDIUM)["results"]
    assert [r["id"] for r in rows] == [fast.pk, slow.pk]
    for row, result in zip(rows, api, strict=True):
        e = result["estimate"]
        assert row["rank"] == result["rank"] and row["kind"] == "cluster"
        assert (row["step_s"], row["hours"], row["cost_cny"]) == (e["step_s"], e["hours"],
                                                                  e["cost_cny"])
        assert row["sync_s"] == e["parts_s"]["sync"] and row["input_s"] == 0.0
        assert row["price_cny_month"] == result["price_cny_month"]
        assert row["nodes"] == ",".join(n["name"] for n in result["nodes"])
        assert row["unmeasured"] == "input" and row["on_cpu"] is False and row["skipped"] == ""
    assert rows[1]["bottleneck"] == "sync" and rows[1]["price_cny_month"] == 40_000


def test_csv_has_a_column_per_figure_and_the_skipped_with_empty_figures(
        platform: dict[str, str], cluster: Any, hangzhou: Region) -> None:
    good = cluster("ok", hangzhou, 10.0)
    tuned = cluster("tu", hangzhou, 10.0, params={"train_steps": 7})
    done = benchctl("estimate", *JOB, "--clusters", f"{good.pk},{tuned.pk}", "--format", "csv",
                    **platform)
    assert done.stdout.splitlines()[0] == (
        "rank,kind,id,name,provider,region,nodes,price_cny_month,step_s,compute_s,sync_s,"
        "input_s,checkpoint_s,hours,cost_cny,bottleneck,summary,on_cpu,unmeasured,skipped")
    ranked, skipped = csv.DictReader(io.StringIO(done.stdout))
    assert ranked["id"] == str(good.pk) and float(ranked["hours"]) > 0
    assert skipped["id"] == str(tuned.pk) and skipped["rank"] == skipped["hours"] == ""
    assert skipped["skipped"].startswith("not a ranked offer")


# In Chinese


def test_a_chinese_locale_gets_chinese_headers_title_and_sentences(
        platform: dict[str, str], two_clusters: Any) -> None:
    done = benchctl("estimate", *JOB, lang="zh_CN.UTF-8", **platform)
    assert done.returncode == 0, done.stderr
    (table,) = tables(done.stdout)
    assert table["title"] == "gpt2-medium：20,000 步，2 个节点，每节点 1 块 GPU，按费用排序"
    assert table["headers"] == ["排名", "候选", "服务商", "地区", "每步（秒）", "小时",
                                "费用（元）", "瓶颈", "备注"]
    second = table["rows"][1]
    assert second[7].startswith("梯度同步：占每步的 ")
    assert "10 GbE 链路可将任务从 " in second[7] and second[7].endswith(" 小时")
    assert second[8] == "未测量，按 0 计：数据输入等待"
    assert "West Lake DC" in second[1]  # names stay as they are


# Bad invocations and the platform's refusals


def test_steps_are_required_as_argparse_says() -> None:
    done = benchctl("estimate", "--preset", "gpt2-medium")
    assert done.returncode == 2
    assert "the following arguments are required: --steps" in done.stderr


@pytest.mark.parametrize("flags", [("--steps", "10"), ("--steps", "10", "--params", "355e6")])
def test_a_job_without_a_preset_or_all_its_figures_is_refused_before_any_request(
        flags: tuple[str, ...], tmp_path: Path) -> None:
    # No platform is configured: the error is the invocation's, not a missing URL.
    nothing = {"BENCH_URL": "", "BENCH_TOKEN": "", "BENCH_CLIENT_CONFIG": str(tmp_path / "x")}
    done = benchctl("estimate", *flags, **nothing)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "benchctl: say what the job trains: --preset NAME (e.g. gpt2-medium), or all of "
        "--params, --flops-per-sample and --global-batch")
    chinese = benchctl("estimate", *flags, lang="zh_CN.UTF-8", **nothing)
    assert chinese.stderr.startswith("benchctl：请说明任务训练什么：给出 --preset NAME")


def test_a_platform_400_is_shown_with_its_message(platform: dict[str, str]) -> None:
    done = benchctl("estimate", "--preset", "gpt5", "--steps", "10", **platform)
    assert done.returncode == 2
    assert done.stderr.startswith("benchctl: HTTP 400: invalid request: workload: ")
    assert "gpt5" in done.stderr and "Traceback" not in done.stderr
    unknown = benchctl("estimate", *JOB, "--clusters", "999999", **platform)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("benchctl: HTTP 400: ") and "no cluster 999999" in unknown.stderr


# The request, in process


def parsed(*flags: str) -> Any:
    return cli.build_parser().parse_args(["estimate", *flags])


def test_the_flags_become_the_apis_workload_and_candidates() -> None:
    request = estimate.body(parsed(
        "--params", "1e8", "--flops-per-sample", "6e11", "--global-batch", "64", "--steps", "500",
        "--nodes", "2", "--gpus-per-node", "8", "--accumulation", "4", "--small-files",
        "--checkpoint-gb", "2.5", "--checkpoint-every", "100", "--precision", "fp32",
        "--clusters", "3, 4", "--rank-by", "time"))
    assert request == {
        "workload": {"params": 1e8, "train_flops_per_sample": 6e11, "global_batch": 64,
                     "steps": 500, "nodes": 2, "gpus_per_node": 8, "accumulation": 4,
                     "precision": "fp32", "checkpoint_gb": 2.5, "checkpoint_interval": 100,
                     "packed": False},
        "rank_by": "time", "clusters": [3, 4]}
    # What is not said is left to the platform's defaults.
    assert estimate.body(parsed(*JOB, "--region", "shenzhen", "--max-price", "0")) == {
        "workload": {"preset": "gpt2-medium", "steps": 20_000, "nodes": 2}, "rank_by": "cost",
        "region": "shenzhen", "max_price": 0}


@pytest.mark.parametrize("flags, message", [
    (("--clusters", "3,x"), "--clusters '3,x': write ids, e.g. --clusters 3,4"),
    (("--candidate-nodes", "3", "--region", "shenzhen"), "give one or the other"),
    (("--checkpoint-gb", "2"), "--checkpoint-gb and --checkpoint-every go together"),
])
def test_a_bad_flag_is_named_with_its_fix(flags: tuple[str, ...], message: str) -> None:
    with pytest.raises(CliError, match=message.replace("(", r"\(")):
        estimate.body(parsed(*JOB, *flags))


# The bottleneck in words, from a recorded answer's estimate


ESTIMATE: dict[str, Any] = {"hours": 100.0, "bottleneck": "input", "shares": {"input": 0.5},
            "what_ifs": [{"name": "accumulation_x4", "hours": 97.0, "cost_cny": None},
                         {"name": "packed", "hours": 20.04, "cost_cny": None}]}


def test_the_sentence_names_the_what_if_that_shortens_the_job_most() -> None:
    assert estimate.summary(ESTIMATE) == (
        "input stall: 50% of the step; packed data would cut the job from 100 h to 20.04 h")
    i18n.activate(i18n.CHINESE)
    assert estimate.summary(ESTIMATE) == (
        "数据输入等待：占每步的 50%；打包数据可将任务从 100 小时缩短到 20.04 小时")


def test_a_what_if_that_saves_under_five_percent_is_not_named_and_compute_bound_says_so() -> None:
    small = ESTIMATE | {"what_ifs": ESTIMATE["what_ifs"][:1]}  # 97 h against 100 h
    assert estimate.summary(small) == "input stall: 50% of the step"
    assert estimate.summary({"bottleneck": "", "hours": 1.0, "what_ifs": []}) == (
        "compute bounds the step: nothing else to wait for")
