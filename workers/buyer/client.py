"""benchctl's procurement commands: submit, status, results, compare, leaderboard.

Configuration comes from flags, then the environment (BENCH_URL, BENCH_TOKEN), then the
client config file (~/.config/benchctl/client.json, or BENCH_CLIENT_CONFIG), in that order.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from contract import metrics
from workers.buyer import display, words
from workers.buyer.display import Figure
from workers.errors import CliError
from workers.i18n import _

CLIENT_CONFIG = Path(os.environ.get("BENCH_CLIENT_CONFIG",
                                    Path.home() / ".config" / "benchctl" / "client.json"))


@dataclass(frozen=True)
class Client:
    url: str
    token: str

    @classmethod
    def resolve(cls, url: str | None, token: str | None) -> Client:
        stored: dict[str, str] = {}
        if CLIENT_CONFIG.exists():
            try:
                stored = json.loads(CLIENT_CONFIG.read_text())
            except ValueError:
                raise CliError(_("{path} is not valid JSON; fix or delete it").format(
                    path=CLIENT_CONFIG)) from None
        url = url or os.environ.get("BENCH_URL") or stored.get("url")
        token = token or os.environ.get("BENCH_TOKEN") or stored.get("token")
        if not url:
            raise CliError(_("no platform URL: pass --url, set BENCH_URL, or put it in {path}")
                           .format(path=CLIENT_CONFIG))
        if not token:
            raise CliError(_("no API token: pass --token, set BENCH_TOKEN, or put it in {path}")
                           .format(path=CLIENT_CONFIG))
        return cls(url.rstrip("/"), token)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = requests.request(method, f"{self.url}{path}", timeout=30,
                                        headers={"Authorization": f"Token {self.token}"}, **kwargs)
        except requests.ConnectionError:
            raise CliError(_("cannot reach {url}; check --url / BENCH_URL").format(url=self.url)) from None
        if response.status_code in (401, 403):
            raise CliError(_("the platform refused the token; check --token / BENCH_TOKEN"))
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {"detail": response.text[:200]}
            detail = body.get("detail", body) if isinstance(body, dict) else body
            errors = body.get("errors") if isinstance(body, dict) else None
            raise CliError(f"HTTP {response.status_code}: {detail}" + (f" {errors}" if errors else ""))
        return response.json()


def parse_params(items: list[str]) -> dict[str, float]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise CliError(_("--param {item}: write NAME=VALUE, e.g. --param iperf3_duration=5")
                           .format(item=repr(item)))
        try:
            params[key] = float(value) if "." in value else int(value)
        except ValueError:
            raise CliError(_("--param {item}: the value must be a number").format(
                item=repr(item))) from None
    return params


def submit(client: Client, nodes: list[int], suite: str, profile: str, params: dict[str, float],
           wait: bool) -> dict[str, Any]:
    job: dict[str, Any] = client.call("POST", "/api/v1/benchmarks", json={
        "nodes": nodes, "suite": suite, "profile": profile, "params": params})
    display.console.print(_("job {id} accepted: {url}").format(id=job["id"], url=job["url"]),
                          markup=False, highlight=False)
    if not wait:
        return job
    return follow(client, job["id"])


def follow(client: Client, job_id: int) -> dict[str, Any]:
    """Each node's progress until the job finishes: live bars on a terminal; elsewhere (a log,
    a pipe, CI) one plain line per change, since rich shortens node names to fit its bars."""
    if not display.console.is_terminal:
        return _follow_lines(client, job_id)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[state]}"),
                  console=display.console, transient=False) as progress:
        bars: dict[int, TaskID] = {}
        for job in _polls(client, job_id):
            for run in job["runs"]:
                state, done = run_state(run)
                if run["id"] not in bars:
                    bars[run["id"]] = progress.add_task(run["node"]["name"], total=100, state=state)
                progress.update(bars[run["id"]], completed=done, state=state)
    return job


def _follow_lines(client: Client, job_id: int) -> dict[str, Any]:
    shown: dict[int, str] = {}
    for job in _polls(client, job_id):
        for run in job["runs"]:
            state, _done = run_state(run)
            if shown.get(run["id"]) != state:
                shown[run["id"]] = state
                print(f"{run['node']['name']}: {state}", file=display.console.file, flush=True)
    return job


def _polls(client: Client, job_id: int) -> Iterator[dict[str, Any]]:
    """The job once a second; the last one is the finished job."""
    while True:
        job: dict[str, Any] = client.call("GET", f"/api/v1/benchmarks/{job_id}")
        yield job
        if job["status"] not in ("queued", "running"):
            return
        time.sleep(1)


def run_state(run: dict[str, Any]) -> tuple[str, float]:
    """"running network 2/5" (the API's words) and the percentage done."""
    p = run.get("progress") or {}
    state = run["status"] + (f" {p.get('probe')} {p.get('step')}/{p.get('steps')}"
                             if run["status"] == "running" and p else "")
    done = 100 if run["status"] not in ("queued", "running") else (
        100 * p.get("step", 0) / p["steps"] if p.get("steps") else 0)
    return state, done


def result_rows(job: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for run in job["runs"]:
        for s in run["samples"]:
            rows.append({"node": run["node"]["name"], "metric": s["metric"], "value": s["value"],
                         "unit": s["unit"], "p5": s["p5"], "p95": s["p95"], "n": s["n"],
                         "peer": s["metadata"].get("peer", "")})
        if run["status"] != "succeeded":
            rows.append({"node": run["node"]["name"], "metric": "-", "value": None, "unit": "",
                         "p5": None, "p95": None, "n": 0, "peer": f"{run['status']}: {run['error']}"})
    return rows


def compare(client: Client, node_ids: list[int]) -> list[dict[str, Any]]:
    """Side by side: each metric's value and spread per node, and the winner (or a tie)."""
    reports = {n: client.call("GET", f"/api/v1/nodes/{n}/report") for n in node_ids}
    names = {n: client.call("GET", f"/api/v1/nodes/{n}")["name"] for n in node_ids}
    by_metric: dict[str, dict[int, dict[str, Any]]] = {}
    for node_id, report in reports.items():
        for m in report["metrics"]:
            by_metric.setdefault(m["metric"], {})[node_id] = m
    rows = []
    for metric_name in sorted(by_metric):
        cells = by_metric[metric_name]
        known = metrics.METRICS.get(metric_name)
        unit = known.unit if known else next(iter(cells.values())).get("unit", "")
        row: dict[str, Any] = {"metric": metric_name, "unit": unit}
        for node_id in node_ids:
            m = cells.get(node_id)
            row[names[node_id]] = Figure(m["value"], m.get("p5"), m.get("p95")) if m else Figure(None)
        values = {names[n]: m["value"] for n, m in cells.items() if m["value"] is not None}
        row["winner"] = winner(values, known.higher_is_better) if known and len(values) > 1 else ""
        rows.append(row)
    rows.append({"metric": "score", "unit": "0-100", **{
        names[n]: reports[n]["score"]["value"] for n in node_ids}, "winner": ""})
    return rows


def winner(values: dict[str, float], higher_is_better: bool) -> str:
    """The node with the best value, or TIE when more than one shows the best (the first of
    equal values is no better than the second)."""
    best = (max if higher_is_better else min)(values.values())
    leaders = [name for name, value in values.items() if display.same_figure(value, best)]
    return leaders[0] if len(leaders) == 1 else display.TIE


def leaderboard(client: Client, metric: str, region: str, fmt: str) -> list[dict[str, Any]]:
    query = {"metric": metric, "region": region}
    page = client.call("GET", "/api/v1/leaderboard", params={k: v for k, v in query.items() if v})
    return [{"rank": r["rank"], "node": r["node"]["name"], "provider": r["node"]["provider"],
             "region": f"{r['node']['province']}/{r['node']['city']}", "value": r["value"],
             "unit": r["unit"], "p5": r["p5"], "p95": r["p95"], "score": r["score"]["value"],
             "stale": r["stale"]} for r in page["results"]]


def leaderboard_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The board for people, narrow enough for a terminal: the value with its spread in one
    cell (as compare shows it), the unit in the title since every row has the board's, and
    the provider over its region in one cell (two whole names a line can break between)."""
    return [{"rank": r["rank"], "node": r["node"],
             "where": f"{r['provider']} {words.region(r['region'])}",
             "value": Figure(r["value"], r["p5"], r["p95"]), "score": r["score"],
             "stale": r["stale"]} for r in rows]
