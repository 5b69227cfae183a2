"""`make demo` keeps working: the whole stack, enrolled nodes, the full suite, a table, prices,
a certificate, and a "try it yourself" block whose sign-in and commands work.

As root the demo builds the lab, and the table must show the links it shaped. The demo runs
as `make demo` does (it waits), so that what it printed is tried against the running
platform; then SIGTERM stops it, as Ctrl-C would.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from lab.procs import REPO
from lab.try_it import commands_of

# Beside the parallel part (`make test`), not alone after it: what it checks is what the lab's
# shaped links give (tbf sets 1 Gbit/s and 200 Mbit/s whatever else runs), the stability
# verdicts of links the lab reshapes by hour, and the platform's own answers; it is the
# suite's longest test (about ten minutes), and beside the parallel part it costs a third of
# that. Measured so on this 2-core machine: both green, 874 s together against 635 + 574 s.
pytestmark = [pytest.mark.slow, pytest.mark.beside]

READY = "press Ctrl-C to stop everything"
OUTPUT = REPO / "var" / "test-output" / "demo.out"


def run_demo_until_it_waits(log: Path) -> tuple[subprocess.Popen[str], list[str],
                                                threading.Thread]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    demo = subprocess.Popen([sys.executable, "-m", "lab.demo"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=log.open("w"))
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert demo.stdout is not None
        for line in demo.stdout:
            lines.append(line)
            if READY in line:
                ready.set()
        ready.set()  # it ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # A guard against a hung demo, not a time limit on it (make bench times the platform):
    # beside the parallel part on a slow day the demo took over 900 s to its last table
    # while still moving (stop 45's CI: the buyer's trial agents at storage step 9 of 17).
    ready.wait(1500)
    # Kept where `make test` keeps its output: each step's clock says where the demo's
    # minutes went, pass or fail.
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text("".join(lines))
    assert READY in "".join(lines), "".join(lines)[-3000:] + log.read_text()[-3000:]
    return demo, lines, reader


def stop(demo: subprocess.Popen[str]) -> int:
    demo.send_signal(signal.SIGTERM)
    try:
        return demo.wait(120)
    except subprocess.TimeoutExpired:
        demo.kill()
        return demo.wait(10)


def field(out: str, pattern: str) -> re.Match[str]:
    found = re.search(pattern, out, re.M)
    assert found, f"{pattern!r} not in the output:\n{out[-3000:]}"
    return found


def check_the_try_it_block(out: str) -> None:
    api = field(out, r"^  board\s+(http://\S+)/ ").group(1)
    login = field(out, r"^  web sign-in\s+\S+\s+user (\S+)\s+password (\S+)$")
    job_url = field(out, r"^  the job\s+(\S+/jobs/\d+/)").group(1)
    cert = field(out, r"^  certificate\s+(\d+): \S+ \(node \d+\), tier (\w+)")
    buyer_token = field(out, r"^  buyer token\s+(\S+)$").group(1)
    assert re.search(r"^  provider\s+.*owner's API token \S+$", out, re.M), out[-3000:]

    # The web sign-in works and opens the buyer's own job page.
    web = requests.Session()
    web.headers["Accept-Language"] = "en"  # the assertions read the English page
    web.get(f"{api}/accounts/login/", timeout=10).raise_for_status()
    signed_in = web.post(f"{api}/accounts/login/?next={job_url[len(api):]}", timeout=10,
                         headers={"Referer": f"{api}/accounts/login/"},
                         data={"username": login.group(1), "password": login.group(2),
                               "csrfmiddlewaretoken": web.cookies["csrftoken"]})
    assert signed_in.status_code == 200 and signed_in.url == job_url, signed_in.url
    job_id = job_url.rstrip("/").rsplit("/", 1)[1]
    assert f"Job {job_id}" in signed_in.text
    # The page's live progress reads the job's API with the same sign-in.
    assert web.get(f"{api}/api/v1/benchmarks/{job_id}", timeout=10).json()["status"] == "succeeded"
    assert requests.get(job_url, timeout=10).url.startswith(f"{api}/accounts/login/")
    # Signed out from the header's form, the job is closed again.
    signed_out = web.post(f"{api}/en/accounts/logout/", timeout=10,
                          headers={"Referer": f"{api}/en/"},
                          data={"csrfmiddlewaretoken": web.cookies["csrftoken"]})
    assert signed_out.url == f"{api}/en/", signed_out.url
    assert web.get(job_url, timeout=10).url.startswith(f"{api}/accounts/login/")
    # The demo serves with DEBUG off: a wrong address gets the site's own page, in the
    # reader's language, and no list of the site's URL patterns.
    for lang, title in (("en", "Not found"), ("zh-hans", "页面不存在")):
        missing = requests.get(f"{api}/{lang}/no-such-page/", timeout=10)
        assert missing.status_code == 404 and title in missing.text, missing.text[:500]
        assert "URLconf" not in missing.text and "api/v1/" not in missing.text

    # The certificate is the platform's, valid, of the tier printed.
    body = requests.get(f"{api}/api/v1/certificates/{cert.group(1)}", timeout=10).json()
    assert body["status"] == "valid" and body["document"]["tier"] == cert.group(2), body

    # Price-performance is on the board.
    board = requests.get(f"{api}/api/v1/leaderboard", params={"metric": "network.tcp_throughput"},
                         headers={"Authorization": f"Token {buyer_token}"}, timeout=30).json()
    priced = {e["node"]["name"]: e["price_per_score"] for e in board["results"]}
    assert priced and all(v is not None and v > 0 for v in priced.values()), board

    # The printed Chinese board and compare page: the demo's nodes, in Chinese, side by side.
    zh = requests.get(field(out, r"^  in Chinese\s+(http://\S+) ").group(1), timeout=30).text
    assert "去哪里租 GPU 节点做训练" in zh and "浙江省 · 杭州" in zh and "本地机房" in zh
    compared = requests.get(field(out, r"^  compare\s+(http://\S+)$").group(1), timeout=30,
                            headers={"Accept-Language": "zh-CN"}).text
    nodes = len(re.findall(r"^  provider\s", out, re.M))
    assert compared.count("data-candidate=") == nodes >= 2 and "并排对比" in compared

    # Stable or shared (lab only): the node slowed in the evening and the steady one, as the
    # printed stability URLs give them. The demo's re-tests are the scheduler's own (six
    # rounds through retests.tick, on the real workers, the shared link shaped by hour):
    # this is the lab's one proof of the stability verdicts and of their words.
    if os.geteuid() == 0:
        printed = dict((m[1], m[0]) for m in re.findall(
            r"^  stability\s+(http://\S+)\s+\((\S+): \S+\)$", out, re.M))
        assert set(printed) == {"sz-h800-01", "nb-a100-01"}, out[-3000:]
        verdicts, said = {}, {}
        for name, url in printed.items():
            body = requests.get(url, timeout=30, headers={"Authorization": f"Token {buyer_token}",
                                                          "Accept-Language": "en"}).json()
            verdicts[name] = next(f for f in body["figures"]
                                  if f["metric"] == "network.tcp_throughput")
            said[name] = [d["verdict"] for d in body["diagnosis"]]
        assert verdicts["sz-h800-01"]["verdict"] == "varies-by-hour", verdicts
        assert verdicts["sz-h800-01"]["worst_hours"] == [20, 21, 22]
        assert verdicts["nb-a100-01"]["verdict"] == "stable", verdicts
        assert any("worst at 20:00-23:00: likely shared bandwidth" in v
                   for v in said["sz-h800-01"]), said
        assert not any("TCP throughput" in v for v in said["nb-a100-01"]), said
    # What a one-node GPT-2 small run takes on each node, as the printed page shows it.
    estimate = requests.get(field(out, r"^  your job\s+(http://\S+)\s").group(1), timeout=30,
                            headers={"Accept-Language": "en"})
    assert estimate.status_code == 200 and "gpt2-small" in estimate.text

    # Every printed command, in order, as the person would paste them.
    commands = commands_of(out)
    assert any(" verify " in c for c in commands) and any(" trust add " in c for c in commands)
    # benchctl speaks the person's language: English here, for the assertions.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BENCH_", "DATABASE_URL", "LANG", "LC_"))} | {"LC_ALL": "C.UTF-8"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(commands)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "VALID: " in done.stdout and "checked online: not revoked" in done.stdout, done.stdout
    assert re.search(r"certificate \d+: node \S+ of .+, profile \S+ v\d+, tier \w+", done.stdout), \
        done.stdout


def test_the_demo_benchmarks_prices_certifies_and_its_printed_commands_work(tmp_path: Path) -> None:
    started = time.monotonic()
    demo, lines, reader = run_demo_until_it_waits(tmp_path / "demo.stderr")
    try:
        check_the_try_it_block("".join(lines))
    finally:
        returncode = stop(demo)
    reader.join(10)  # its last lines: it ends with the demo's output
    out = "".join(lines)
    assert returncode == 0, out[-3000:]
    assert "stopped every process it started" in out
    print(f"\nthe demo took {time.monotonic() - started:.0f} s; its last lines:\n{out[-5000:]}")

    rows = {m[0]: [float(v.replace(",", "")) for v in m[1].split()]
            for m in re.findall(r"^((?:hz|nb|sz)-\S+)\s+.*?/\S+\s+([\d.,%\s]+?)%?$", out, re.M)}
    assert "Zhejiang/Hangzhou" in out and "Guangdong/Shenzhen" in out
    # The printed board: every node has a price and a price per score point.
    board = dict(re.findall(r"^\s+\d+  ((?:hz|nb|sz)-\S+)\s.*\s[\d,]+\s+([\d,]+)$", out, re.M))
    assert "certificate" in out and re.search(r"certificate \d+ issued to hz-a100-01", out)
    if os.geteuid() == 0:
        assert set(rows) == {"hz-a100-01", "nb-a100-01", "sz-h800-01", "sz-h800-02"}, out
        assert set(board) == set(rows), out
        gbps = {name: values[1] for name, values in rows.items()}
        # The demo lab shapes them to 10 Gbit/s, 1 Gbit/s, 1 Gbit/s and 200 Mbit/s.
        assert gbps["hz-a100-01"] > gbps["nb-a100-01"] > gbps["sz-h800-02"]
        assert 0.9 <= gbps["sz-h800-01"] <= 1.02
        assert 0.18 <= gbps["sz-h800-02"] <= 0.204
        # A link's RTT is TCP's, echoed by the peer's test server, so between cities it is
        # the geography's round trip (lab/specs/demo.yaml), within a city near nothing.
        links = {(m[0], m[1]): float(m[2]) for m in re.findall(
            r"^((?:hz|nb|sz)-\S+)\s+((?:hz|nb|sz)-\S+)\s+.*?([\d.]+)\s+(?:yes|agreed|no)$",
            out, re.M)}
        assert len(links) == 12, out[out.index("Each link"):][:3000]
        modelled = {frozenset({"hz", "nb"}): 2.1, frozenset({"hz", "sz"}): 15.5,
                    frozenset({"nb", "sz"}): 16.2}
        for (a, b), rtt in links.items():
            figure = modelled.get(frozenset({a[:2], b[:2]}), 0.0)
            assert figure <= rtt < figure + 5, (a, b, rtt, links)
        # It ends with the verdict for GPT-2 small across two nodes, in both languages: the
        # hosts stand for A100 and H800 nodes, so compute is their datasheets' and each
        # pick says to check it; the 200 Mbit/s node is avoided for its link.
        assert "Where to rent gpt2-small (10,000 steps on 2 node(s)" in out, out[-6000:]
        english = out[out.index("Where to rent gpt2-small"):]
        assert re.search(r"^  1\. \S+ \(", english, re.M), english[:3000]
        assert "its GPU was not measured (the compute is its datasheet's)" in english
        assert re.search(r"^  - sz-h800-02: its link runs at 0\.\d+ Gbit/s, gradient sync "
                         r"would be \d+% of the step", english, re.M), english[:3000]
        assert "去哪里租：" in out and "不建议租用：" in out, out[-6000:]
        assert "。租用前先确认：" in out and ". 租用前" not in out, out[-6000:]
        # The API's answer, kept beside the demo's files: the same verdict as codes.
        answer = json.loads((REPO / "var" / "demo" / "recommendation.json").read_text())
        assert answer["workload"]["name"] == "gpt2-small" and answer["picks"], answer
        assert {"code": "datasheet", "values": {}} in answer["picks"][0]["checks"]
        assert {a["candidate"]["name"]: a["reason"]["code"] for a in answer["avoid"]}.get(
            "sz-h800-02") == "slow-link", answer["avoid"]
        # From the buyer's own site (#33): benchctl probe on the buyer's machine in Hangzhou
        # names every node, each confirmed by the node's own test server; TCP to Shenzhen
        # takes the geography's round trip (15.5 ms in the spec), to Hangzhou nothing; and
        # the estimate copies the data set from there at what the probe measured.
        site = out[out.index("From your site"):] if "From your site" in out else ""
        probed = {m[0]: float(m[1].replace(",", "")) for m in re.findall(
            r"^│ ((?:hz|nb|sz)-\S+)\s+│\s+([\d.,]+)\s+│.*│\s+yes\s+│$", site, re.M)}
        assert set(probed) == set(rows), site[:4000] or out[-6000:]
        assert all(15.5 <= v < 25 for k, v in probed.items() if k.startswith("sz-")), probed
        assert probed["hz-a100-01"] < 5, probed
        assert "2,000 GB from your Hangzhou office" in site, site[:6000]
    else:
        assert set(rows) == {"hz-a100-01", "sz-h800-01"}, out
        assert set(board) == set(rows), out
