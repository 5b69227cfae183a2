"""`benchctl sites` and `benchctl probe`: the buyer's sites, and probing nodes from one."""

from __future__ import annotations

import time
from statistics import median
from typing import Any

from contract import site_probe as sp
from workers.buyer import probe as probing
from workers.errors import CliError
from workers.i18n import _

# How long probe waits, in all, for nodes whose test server is busy with another buyer.
BUSY_WAIT_S = 120.0


def find(client: Any, name_or_id: str) -> dict[str, Any]:
    """The buyer's site by id or name."""
    listed = client.call("GET", "/api/v1/sites")
    for site in listed:
        if str(site["id"]) == name_or_id.strip() or site["name"] == name_or_id.strip():
            return dict(site)
    raise CliError(_("you have no site {name!r}: add it with benchctl sites add {name!r} "
                     "--city CITY").format(name=name_or_id))


def node_ids(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(n) for n in text.replace(",", " ").split()]
    except ValueError:
        raise CliError(_("--nodes {nodes!r}: write node ids, e.g. --nodes 1,2,3").format(
            nodes=text)) from None


def probe(client: Any, site: dict[str, Any], nodes: str | None, region: str | None,
          seconds: int, with_route: bool) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Tokens for the candidates, each node measured from here, the figures stored; the rows
    to show and the nodes that failed, with why."""
    if not 1 <= seconds <= sp.BOUNDS["max_iperf3_seconds"]:
        raise CliError(_("--seconds {s}: between 1 and {most}").format(
            s=seconds, most=int(sp.BOUNDS["max_iperf3_seconds"])))
    body: dict[str, Any] = {"nodes": node_ids(nodes)} if nodes else {"region": region}
    issued = client.call("POST", f"/api/v1/sites/{site['id']}/probes", json=body)["probes"]
    rows, failed = [], []
    waiting = list(issued)
    deadline = time.monotonic() + BUSY_WAIT_S
    while waiting:
        busy = []
        for one in waiting:
            try:
                measured = probing.measure(one, seconds, with_route)
            except probing.Busy as exc:
                busy.append((one, exc.seconds))
                continue
            except CliError as exc:
                failed.append((one["node_name"], str(exc)))
                continue
            stored = client.call("POST", f"/api/v1/probes/{one['probe']}", json=measured.body())
            rows.append(row(one, measured, stored))
        waiting = [one for one, _s in busy]
        if busy:
            pause = min(s for _o, s in busy)
            if time.monotonic() + pause > deadline:
                failed += [(one["node_name"], _("its test server stayed busy with another "
                                                "buyer's probe: try again later"))
                           for one in waiting]
                break
            time.sleep(pause)
    return rows, failed


def row(issued: dict[str, Any], measured: probing.Measured, stored: dict[str, Any]
        ) -> dict[str, Any]:
    return {"node": issued["node_name"], "rtt_ms": stored["rtt_ms"],
            "node_rtt_ms": median(measured.node_rtts_ms) if measured.node_rtts_ms else None,
            "upload_gbps": stored["upload_gbps"], "download_gbps": stored["download_gbps"],
            "hops": stored["hop_count"], "confirmed": stored["confirmed"]}


def figure_rows(figures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"node": f["node_name"], "region": f["region"], "rtt_ms": f["rtt_ms"],
             "upload_gbps": f["upload_gbps"], "download_gbps": f["download_gbps"],
             "hops": f["hop_count"], "confirmed": f["confirmed"]} for f in figures]
