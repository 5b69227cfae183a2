"""The demo's last words: what a person needs to try the platform it left running.

The web sign-in of the buyer who owns the demo's job, the buyer's and each provider's API
token, the certificate the demo obtained, and the README tour's commands with this run's
ids. Every command line starts with ``  $ `` and they run in order, as one shell script, from
the directory the demo was started in (tests/e2e/test_demo.py runs them so).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMMAND = "  $ "
# The lab's nodes have no GPU: their measured compute is a CPU's, so the try-it estimate
# asks for a CPU-only job, on figures the lab measured (a GPU job never takes a CPU's
# figure: it takes the declared model's datasheet, as the demo's verdict shows).
ESTIMATE_PRESET, ESTIMATE_STEPS = "gpt2-small", 1000


@dataclass(frozen=True)
class DemoRun:
    api: str
    job_id: int
    nodes: list[dict[str, Any]]  # name, id, provider, provider_id, provider_token, price_cny_month
    seed: dict[str, Any]  # seed_demo's answer: buyer_token, buyer_login, providers
    certificate: dict[str, Any] | None  # id, tier, title, node, node_id, provider
    board_metric: str
    var: Path
    stability: dict[str, str] | None = None  # node name -> its verdict (the lab only)


def benchctl() -> str:
    """The benchctl beside this Python (the demo's .venv), as the person would type it."""
    beside = Path(sys.executable).parent / "benchctl"
    return os.path.relpath(beside) if beside.exists() else "benchctl"


def try_it_lines(demo: DemoRun, waiting: bool) -> list[str]:
    api, login = demo.api, demo.seed["buyer_login"]
    ctl = benchctl()
    until = "it all stays up until Ctrl-C" if waiting else "--no-wait: it stops now; make demo waits"
    lines = [f"==> try it yourself ({until}):",
             f"  board         {api}/   (price-performance: CNY/month per score point)",
             f"  in Chinese    {api}/zh-hans/   (English: {api}/en/)",
             f"  compare       {api}/compare/?nodes={','.join(str(n['id']) for n in demo.nodes)}",
             f"  your job      {api}/estimate/?preset={ESTIMATE_PRESET}&steps={ESTIMATE_STEPS}"
             "&cpu_only=1   (what a one-node GPT-2 small run on CPUs takes and costs on each node)",
             f"  web sign-in   {api}/accounts/login/   user {login['username']}  "
             f"password {login['password']}",
             f"  the job       {api}/jobs/{demo.job_id}/   (its owner's page: sign in first)",
             f"  profiles      {api}/certification/",
             f"  buyer token   {demo.seed['buyer_token']}"]
    for node in demo.nodes:
        lines.append(f"  provider      {node['provider']} (provider {node['provider_id']}): "
                     f"node {node['name']} is node {node['id']}; owner's API token "
                     f"{node['provider_token']}")
    cert = demo.certificate
    if cert is not None:
        lines.append(f"  certificate   {cert['id']}: {cert['node']} (node {cert['node_id']}), tier "
                     f"{cert['tier']}, \"{cert['title']}\"")
    else:
        lines.append("  certificate   none was issued (see above why)")
    verdicts = demo.stability or {}
    for node in demo.nodes:
        if node["name"] in verdicts:
            lines.append(f"  stability     {api}/api/v1/nodes/{node['id']}/stability   "
                         f"({node['name']}: {verdicts[node['name']]})")
    node_ids = " ".join(str(n["id"]) for n in demo.nodes)
    priced = next((n for n in demo.nodes if n["price_cny_month"] is not None), None)
    # The demo's key is pinned in its own folder, not in the person's ~/.config/benchctl.
    trusted = os.path.relpath(demo.var / "trusted-keys.pem")
    commands = [
        f"export BENCH_URL={api} BENCH_TOKEN={demo.seed['buyer_token']} "
        f"BENCH_TRUSTED_KEYS={shlex.quote(trusted)}",
        f"{ctl} status {demo.job_id}",
        f"{ctl} results {demo.job_id}",
        f"{ctl} compare {node_ids}",
        f"{ctl} leaderboard --metric {demo.board_metric}",
        f"{ctl} estimate --preset {ESTIMATE_PRESET} --steps {ESTIMATE_STEPS} --cpu-only "
        "--region zhejiang",
        f'curl -sf -w "\\n" -H "Authorization: Token $BENCH_TOKEN" '
        f'"$BENCH_URL/api/v1/leaderboard?metric={demo.board_metric}&region=zhejiang"',
    ]
    if priced is not None:
        commands.append(  # as the provider: state the node's monthly price again
            f'curl -sf -w "\\n" -X POST -H "Authorization: Token {priced["provider_token"]}" '
            "-H 'Content-Type: application/json' "
            f"-d '{{\"monthly_price_cny\": {priced['price_cny_month']}}}' "
            f"$BENCH_URL/api/v1/nodes/{priced['id']}/price")
    if cert is not None:
        saved = shlex.quote(os.path.relpath(demo.var / f"certificate-{cert['id']}.json"))
        commands += [f"curl -sf $BENCH_URL/api/v1/certificates/{cert['id']} -o {saved}",
                     f"{ctl} trust add $BENCH_URL",
                     f"{ctl} verify {saved}"]
    return [*lines, "", *(COMMAND + c for c in commands), ""]


def commands_of(output: str) -> list[str]:
    """The command lines of a printed block, in order (for the demo's test)."""
    return [line[len(COMMAND):] for line in output.splitlines() if line.startswith(COMMAND)]
