"""A buyer's sites and the probes from them (`benchctl probe`): the per-probe tokens that
open a node's test server, the node's claim of a token, the node's record of the session
and the buyer's figures.

Trust. The buyer's CLI is the buyer's own side: the stored figures are what it timed and
measured (contract/site_probe.py: a host can delay its round trips, never shorten them).
The node's record is the host's claim; it only confirms that the test reached the enrolled
node, by the buyer's iperf3 cookies in its server's log. A token is 32 random bytes stored
as a digest, bound to one node, used once (a conditional UPDATE), and short-lived: a token
for node A does not open node B (B's claim of it finds nothing of B's), and an outsider
without one never gets an iperf3 test from a node's test server.

Visibility. A site and its figures are its owner's: every read is filtered by the owner, so
another buyer's request reads the same as a missing site (404).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone, translation

from config.errors import Conflict, Invalid, NotFound, TooMany, Unprocessable
from contract import places
from contract.site_probe import BOUNDS
from fleet.models import Node, Region
from fleet.services import secrets
from jobs.models import Site, SiteProbe


def city_name(text: str) -> str:
    """The place as contract.places lists it (English), from its English or Chinese name."""
    wanted = text.strip().casefold()
    with translation.override("zh-hans"):
        for place in places.PLACES:
            if wanted in (place.casefold(), str(translation.gettext(place)).casefold()):
                return place
    raise Invalid(f"unknown city {text!r}: name one of {', '.join(places.PLACES)}", field="city")


def create_site(owner: User, name: str, city: str) -> Site:
    name = name.strip()
    if not name:
        raise Invalid("a site needs a name, e.g. \"Hangzhou office\"", field="name")
    try:
        with transaction.atomic():
            return Site.objects.create(owner=owner, name=name, city=city_name(city))
    except IntegrityError:
        raise Conflict(f"you already have a site named {name!r}: use it, or pick another name",
                       field="name") from None


def sites_of(owner: User) -> Any:
    return Site.objects.filter(owner=owner).order_by("name")


def site_of(owner: User, site_id: int) -> Site:
    """The owner's site; another buyer's reads the same as a missing one."""
    site = Site.objects.filter(owner=owner, pk=site_id).first()
    if site is None:
        raise NotFound(f"you have no site {site_id}: list yours with GET /api/v1/sites")
    return site


@dataclass(frozen=True)
class Issued:
    probe: SiteProbe
    token: str  # shown once: the buyer's CLI hands it to the node's test server


def candidates(node_ids: list[int] | None, region: str | None) -> list[Node]:
    """The nodes to probe: those named, or the region's active ones (trial agents are a
    buyer's own instances, not candidates)."""
    if bool(node_ids) == bool(region):
        raise Invalid("name the nodes (nodes) or a region (region), one of the two",
                      field="nodes")
    rows = Node.objects.filter(status=Node.Status.ACTIVE, trial_of__isnull=True)
    if region:
        if not Region.objects.filter(code=region).exists():
            raise NotFound(f"no region {region!r}: GET /api/v1/leaderboard/regions lists them",
                           field="region")
        return list(rows.filter(region__code=region).order_by("pk"))
    found = {n.pk: n for n in rows.filter(pk__in=node_ids or [])}
    missing = [i for i in node_ids or [] if i not in found]
    if missing:
        raise NotFound(f"no active node {', '.join(map(str, missing))}: the board lists them",
                       field="nodes")
    return [found[i] for i in dict.fromkeys(node_ids or [])]


def issue(site: Site, node_ids: list[int] | None = None,
          region: str | None = None) -> list[Issued]:
    """One token per candidate node, each opening only that node's test server, once."""
    nodes = candidates(node_ids, region)
    if not nodes:
        raise Unprocessable(f"region {region!r} has no active node to probe", field="region")
    if len(nodes) > BOUNDS["nodes_per_request"]:
        raise Invalid(f"at most {int(BOUNDS['nodes_per_request'])} nodes a request; "
                      "ask in parts", field="nodes")
    unreachable = [n.name for n in nodes if not n.address]
    if unreachable:
        raise Unprocessable(f"{', '.join(unreachable)} enrolled without an address: nobody can "
                            "reach its test server; leave it out, or ask its provider to enrol "
                            "it again with --address", field="nodes")
    now = timezone.now()
    open_now = SiteProbe.objects.filter(site=site, claimed_at__isnull=True,
                                        expires_at__gt=now).count()
    if open_now + len(nodes) > BOUNDS["open_tokens_per_site"]:
        raise TooMany(f"this site holds {open_now} unused tokens; use them or wait "
                      f"{int(BOUNDS['token_minutes'])} minutes for them to run out")
    expires = now + timedelta(minutes=BOUNDS["token_minutes"])
    issued = []
    for node in nodes:
        plain = secrets.new_secret()
        issued.append(Issued(SiteProbe.objects.create(
            site=site, node=node, token_hash=secrets.digest(plain), expires_at=expires), plain))
    return issued


def claim(node: Node, token: str) -> SiteProbe:
    """The node's test server takes a buyer's token: this node's, unused, unexpired; once."""
    now = timezone.now()
    digest = secrets.digest(token)
    taken = SiteProbe.objects.filter(token_hash=digest, node=node, claimed_at__isnull=True,
                                     expires_at__gt=now).update(claimed_at=now)
    probe = SiteProbe.objects.filter(token_hash=digest, node=node).first()
    if probe is None:
        raise NotFound("not a probe token of this node", code="unknown_token")
    if not taken:
        if probe.claimed_at is not None:
            raise Conflict("this probe token was used already: ask for a new one",
                           code="used_token")
        raise Conflict("this probe token ran out: ask for a new one", code="expired_token")
    return probe


def node_probe(node: Node, probe_id: int) -> SiteProbe:
    probe = SiteProbe.objects.filter(pk=probe_id, node=node, claimed_at__isnull=False).first()
    if probe is None:
        raise NotFound("not a probe this node's test server took")
    return probe


def record(node: Node, probe_id: int, data: dict[str, Any]) -> SiteProbe:
    """The node's record of the session (its own timings, the cookies its iperf3 server
    logged): kept once, as it came, to confirm the buyer's figures."""
    probe = node_probe(node, probe_id)
    if probe.node_record is not None:
        raise Conflict("this probe's record is in already")
    probe.node_record = data
    probe.confirmed = confirmed(probe)
    probe.save(update_fields=["node_record", "confirmed"])
    return probe


def buyer_probe(owner: User, probe_id: int) -> SiteProbe:
    probe = SiteProbe.objects.select_related("site", "node").filter(
        pk=probe_id, site__owner=owner).first()
    if probe is None:
        raise NotFound(f"you have no probe {probe_id}")
    return probe


def results(owner: User, probe_id: int, data: dict[str, Any]) -> SiteProbe:
    """The buyer's figures of a probe the node's test server took (once)."""
    probe = buyer_probe(owner, probe_id)
    if probe.claimed_at is None:
        raise Conflict("the node's test server has not taken this probe's token: run "
                       "`benchctl probe` to measure it")
    if probe.measured_at is not None:
        raise Conflict("this probe's figures are in already: probe again for new ones")
    rtts = [float(r) for r in data.get("rtts_ms", [])]
    if not rtts and data.get("upload_gbps") is None and data.get("download_gbps") is None:
        raise Unprocessable("no figure measured: nothing to store")
    probe.rtts_ms = rtts
    probe.rtt_ms = statistics.median(rtts) if rtts else None
    probe.upload_gbps, probe.download_gbps = data.get("upload_gbps"), data.get("download_gbps")
    probe.hops = data.get("hops", [])
    probe.hop_count = data.get("hop_count")
    probe.cookies = [str(c) for c in data.get("cookies", [])]
    probe.measured_at = timezone.now()
    probe.confirmed = confirmed(probe)
    probe.save()
    return probe


def confirmed(probe: SiteProbe) -> bool:
    """The node's record shows the buyer's session reached it: its own round trips, and each
    of the buyer's iperf3 tests by cookie in its server's log."""
    node = probe.node_record or {}
    served = {str(s.get("cookie")) for s in node.get("served", []) if isinstance(s, dict)}
    return bool(probe.measured_at and node.get("rtts_ms")
                and set(probe.cookies) <= served)


def latest(site: Site) -> list[SiteProbe]:
    """The site's most recent measured probe of each node."""
    rows = (SiteProbe.objects.filter(site=site, measured_at__isnull=False)
            .select_related("node", "node__region").order_by("node_id", "-measured_at")
            .distinct("node_id"))
    return list(rows)
