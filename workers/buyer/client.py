"""benchctl's procurement commands: submit, status, results, compare, leaderboard.

Configuration comes from flags, then the environment (BENCH_URL, BENCH_TOKEN), then the
client config file (~/.config/benchctl/client.json, or BENCH_CLIENT_CONFIG), in that order.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn
from rich.table import Table

from contract import metrics
from workers.errors import CliError

CLIENT_CONFIG = Path(os.environ.get("BENCH_CLIENT_CONFIG",
                                    Path.home() / ".config" / "benchctl" / "client.json"))
console = Console()


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
                raise CliError(f"{CLIENT_CONFIG} is not valid JSON; fix or delete it") from None
        url = url or os.environ.get("BENCH_URL") or stored.get("url")
        token = token or os.environ.get("BENCH_TOKEN") or stored.get("token")
        if not url:
            raise CliError("no platform URL: pass --url, set BENCH_URL, or put it in "
                           f"{CLIENT_CONFIG}")
        if not token:
            raise CliError("no API token: pass --token, set BENCH_TOKEN, or put it in "
                           f"{CLIENT_CONFIG}")
        return cls(url.rstrip("/"), token)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = requests.request(method, f"{self.url}{path}", timeout=30,
                                        headers={"Authorization": f"Token {self.token}"}, **kwargs)
        except requests.ConnectionError:
            raise CliError(f"cannot reach {self.url}; check --url / BENCH_URL") from None
        if response.status_code in (401, 403):
            raise CliError("the platform refused the token; check --token / BENCH_TOKEN")
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
            raise CliError(f"--param {item!r}: write NAME=VALUE, e.g. --param iperf3_duration=5")
        try:
            params[key] = float(value) if "." in value else int(value)
        except ValueError:
            raise CliError(f"--param {item!r}: the value must be a number") from None
    return params


def submit(client: Client, nodes: list[int], suite: str, profile: str, params: dict[str, float],
           wait: bool) -> dict[str, Any]:
    job: dict[str, Any] = client.call("POST", "/api/v1/benchmarks", json={
        "nodes": nodes, "suite": suite, "profile": profile, "params": params})
    console.print(f"job {job['id']} accepted: {job['url']}")
    if not wait:
        return job
    return follow(client, job["id"])


def follow(client: Client, job_id: int) -> dict[str, Any]:
    """A live progress bar per node until the job finishes."""
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[state]}"),
                  console=console, transient=False) as progress:
        bars: dict[int, TaskID] = {}
        while True:
            job: dict[str, Any] = client.call("GET", f"/api/v1/benchmarks/{job_id}")
            for run in job["runs"]:
                p = run.get("progress") or {}
                state = run["status"] + (f" {p.get('probe')} {p.get('step')}/{p.get('steps')}"
                                         if run["status"] == "running" and p else "")
                if run["id"] not in bars:
                    bars[run["id"]] = progress.add_task(run["node"]["name"], total=100, state=state)
                done = 100 if run["status"] not in ("queued", "running") else (
                    100 * p.get("step", 0) / p["steps"] if p.get("steps") else 0)
                progress.update(bars[run["id"]], completed=done, state=state)
            if job["status"] not in ("queued", "running"):
                return job
            time.sleep(1)


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


def print_rows(rows: list[dict[str, Any]], fmt: str, title: str = "") -> None:
    if fmt == "json":
        print(json.dumps(rows, indent=2))
        return
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["node"])
        writer.writeheader()
        writer.writerows(rows)
        print(out.getvalue(), end="")
        return
    table = Table(title=title or None)
    for column in (rows[0] if rows else {"node": ""}):
        table.add_column(column, justify="right" if column in ("value", "p5", "p95", "n") else "left")
    for row in rows:
        table.add_row(*(f"{v:.4g}" if isinstance(v, float) else str("" if v is None else v)
                        for v in row.values()))
    console.print(table)


def compare(client: Client, node_ids: list[int]) -> list[dict[str, Any]]:
    """Side by side: each metric's value and spread per node, and the winner."""
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
        row: dict[str, Any] = {"metric": metric_name, "unit": known.unit if known else ""}
        for node_id in node_ids:
            m = cells.get(node_id)
            row[names[node_id]] = (f"{m['value']:.4g}" + (f" ({m['p5']:.3g}–{m['p95']:.3g})"
                                                          if m.get("p5") is not None else "")
                                   if m else "-")
        if known and len(cells) > 1:
            best = (max if known.higher_is_better else min)(cells, key=lambda n: cells[n]["value"])
            row["winner"] = names[best]
        else:
            row["winner"] = ""
        rows.append(row)
    rows.append({"metric": "score", "unit": "0-100", **{
        names[n]: str(reports[n]["score"]["value"]) for n in node_ids}, "winner": ""})
    return rows


def leaderboard(client: Client, metric: str, region: str, fmt: str) -> list[dict[str, Any]]:
    query = {"metric": metric, "region": region}
    page = client.call("GET", "/api/v1/leaderboard", params={k: v for k, v in query.items() if v})
    return [{"rank": r["rank"], "node": r["node"]["name"], "provider": r["node"]["provider"],
             "region": f"{r['node']['province']}/{r['node']['city']}", "value": r["value"],
             "unit": r["unit"], "p5": r["p5"], "p95": r["p95"], "score": r["score"]["value"],
             "stale": r["stale"]} for r in page["results"]]
