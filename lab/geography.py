"""Where the lab's hosts are: cities, and the round trip between two cities.

A spec may name cities (each a set of the platform's regions) and give the TCP round trip
between every two of them, each figure with its source. The lab then adds that round trip
to TCP connections between hosts of different cities: in the connecting host's namespace
an nft rule sends the connection to a local transparent relay (lab/relay.py, ``--detour``),
which goes on to the original destination from the same namespace (the destination sees
the host's own address) and holds the data for half the figure each way. Only the
connecting side redirects, so a connection is delayed once.

What it cannot do: ICMP (ping, tracepath) and UDP are not redirected and keep the lab's raw
round trip; hosts of one city are not delayed (their bridge is their metro network, and
each node's ``delay_ms`` already says how far it is from its city's reference); the relay
terminates TCP, so a long link's congestion window is the relay's, not the ends'.

Without a ``geography`` section a lab has no inter-city delay, as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lab.relay import BYPASS_MARK

# Light in silica fibre: c / 1.468 (the effective group index of standard single-mode
# fibre at 1550 nm: 1.4682 in Corning's SMF-28 datasheet), 204,218 km/s. A figure under the
# great circle at this speed, there and back, is not a fibre path.
FIBRE_KM_PER_S = 299_792.458 / 1.468
EARTH_RADIUS_KM = 6371.0
# The relays' listening ports in each namespace (127.0.0.1), one per other city: below the
# ephemeral range the platform's loopback ports come from, above the reference relays'.
DETOUR_PORT_BASE = 17300


class GeographyError(ValueError):
    """Raised as netlab.LabError's cause: a spec's geography that cannot be built."""


@dataclass(frozen=True)
class City:
    name: str
    regions: tuple[str, ...]
    at: tuple[float, float] | None = None  # latitude, longitude: checks the figures


@dataclass(frozen=True)
class Figure:
    rtt_ms: float
    source: str


@dataclass(frozen=True)
class Detour:
    """In one host's namespace: connections to ``addresses`` go through a relay on
    127.0.0.1:``port`` that adds ``rtt_ms`` to their round trips."""

    city: str
    port: int
    rtt_ms: float
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class Geography:
    cities: dict[str, City]
    pairs: dict[frozenset[str], Figure]
    within_city: Figure

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Geography:
        cities = _cities(data.get("cities"))
        within = _figure(data.get("within_city"), "geography.within_city")
        if within.rtt_ms != 0:
            raise GeographyError(
                "geography.within_city: the lab adds no delay between hosts of one city (they "
                "share a bridge and are not redirected): set its rtt_ms to 0, and give a node's "
                "distance to its city's reference with the node's delay_ms")
        pairs: dict[frozenset[str], Figure] = {}
        for i, entry in enumerate(data.get("pairs") or []):
            where = f"geography.pairs[{i}]"
            if not isinstance(entry, Mapping):
                raise GeographyError(f"{where}: write {{between: [CITY, CITY], rtt_ms: N, "
                                     "source: ...}")
            between = entry.get("between")
            if not isinstance(between, list) or len(between) != 2 or between[0] == between[1]:
                raise GeographyError(f"{where}: between names two different cities, "
                                     "e.g. between: [hangzhou, shenzhen]")
            for name in between:
                if name not in cities:
                    raise GeographyError(
                        f"{where}: unknown city {name!r}: name one of geography.cities "
                        f"({', '.join(sorted(cities))}) or add it there")
            key = frozenset(between)
            if key in pairs:
                raise GeographyError(f"{where}: {between[0]} and {between[1]} are given twice: "
                                     "keep one figure per pair")
            pairs[key] = _figure(entry, where)
            _check_physics(cities[between[0]], cities[between[1]], pairs[key], where)
        names = sorted(cities)
        for a in names:
            for b in names:
                if a < b and frozenset((a, b)) not in pairs:
                    raise GeographyError(
                        f"geography.pairs: no round trip between {a} and {b}: add "
                        f"{{between: [{a}, {b}], rtt_ms: N, source: ...}}")
        return cls(cities, pairs, within)

    def city_of(self, region: str) -> str:
        for city in self.cities.values():
            if region in city.regions:
                return city.name
        raise GeographyError(f"region {region!r} is in no city: add it to a city's regions in "
                             "geography.cities")

    def rtt_ms(self, a: str, b: str) -> float:
        return 0.0 if a == b else self.pairs[frozenset((a, b))].rtt_ms

    def detours(self, hosts: Mapping[str, tuple[str, str]]) -> dict[str, list[Detour]]:
        """Per host, the detours of its connections; ``hosts`` maps each host's name to its
        (region, address). A city pair of 0 ms has none (nothing to add)."""
        city_of = {name: self.city_of(region) for name, (region, _) in hosts.items()}
        ports = {city: DETOUR_PORT_BASE + i for i, city in enumerate(sorted(self.cities))}
        plan: dict[str, list[Detour]] = {}
        for name, here in city_of.items():
            for there in sorted(set(city_of.values()) - {here}):
                rtt = self.rtt_ms(here, there)
                if rtt:
                    addresses = tuple(hosts[h][1] for h, c in city_of.items() if c == there)
                    plan.setdefault(name, []).append(Detour(there, ports[there], rtt, addresses))
        return plan


def nft_ruleset(detours: list[Detour]) -> str:
    """The nft rules of one namespace: new TCP connections it opens toward another city's
    hosts go to that city's relay port. Only the output hook (this host connecting), never
    prerouting, so a connection between two hosts is redirected on one side only; the
    relay's own onward connections carry BYPASS_MARK and pass. Loopback (the uplinks to
    the platform) and the host's own city are in no set, so they pass too."""
    rules = [f"    meta mark {BYPASS_MARK:#x} return"]
    rules += [f"    ip daddr {{ {', '.join(d.addresses)} }} meta l4proto tcp redirect to :{d.port}"
              f"  # {d.city}, +{d.rtt_ms:g} ms" for d in detours]
    return "\n".join(["table ip bl_geography {", "  chain output {",
                      "    type nat hook output priority -100; policy accept;", *rules,
                      "  }", "}", ""])


def relay_args(detours: list[Detour]) -> list[str]:
    return [a for d in detours for a in ("--detour", f"127.0.0.1:{d.port},{d.rtt_ms:g}")]


def great_circle_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = (math.sin((lat2 - lat1) / 2) ** 2
         + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2)
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def fibre_bound_ms(km: float) -> float:
    """The least round trip over ``km`` of fibre, there and back."""
    return 2 * km / FIBRE_KM_PER_S * 1000


def _cities(data: Any) -> dict[str, City]:
    if not isinstance(data, Mapping) or not data:
        raise GeographyError("geography.cities: name each city and its regions, e.g. "
                             "hangzhou: {regions: [hangzhou], at: [30.27, 120.16]}")
    cities: dict[str, City] = {}
    seen: dict[str, str] = {}
    for name, body in data.items():
        regions = body.get("regions") if isinstance(body, Mapping) else None
        if not isinstance(regions, list) or not regions:
            raise GeographyError(f"geography.cities.{name}: give its regions, e.g. "
                                 f"regions: [{name}]")
        for region in regions:
            if region in seen:
                raise GeographyError(f"region {region!r} is in two cities ({seen[region]}, "
                                     f"{name}): keep it in one")
            seen[region] = str(name)
        at = body.get("at")
        if at is not None and (not isinstance(at, list) or len(at) != 2
                               or not all(isinstance(v, int | float) for v in at)):
            raise GeographyError(f"geography.cities.{name}.at: [latitude, longitude] in degrees")
        cities[str(name)] = City(str(name), tuple(str(r) for r in regions),
                                 (float(at[0]), float(at[1])) if at else None)
    return cities


def _figure(data: Any, where: str) -> Figure:
    if not isinstance(data, Mapping):
        raise GeographyError(f"{where}: give rtt_ms and its source")
    rtt = data.get("rtt_ms")
    if isinstance(rtt, bool) or not isinstance(rtt, int | float) or not math.isfinite(rtt) \
            or rtt < 0:
        raise GeographyError(f"{where}: rtt_ms is {rtt!r}: give the round trip in milliseconds, "
                             "0 or more")
    source = data.get("source")
    if not isinstance(source, str) or not source.strip():
        raise GeographyError(f"{where}: every figure names its source (a public figure, or the "
                             "distance, the fibre's speed and the route factor it assumes)")
    return Figure(float(rtt), source.strip())


def _check_physics(a: City, b: City, figure: Figure, where: str) -> None:
    if a.at is None or b.at is None:
        return
    km = great_circle_km(a.at, b.at)
    least = fibre_bound_ms(km)
    if figure.rtt_ms < least:
        raise GeographyError(
            f"{where}: {figure.rtt_ms:g} ms between {a.name} and {b.name} is faster than light "
            f"in fibre over their {km:,.0f} km great circle ({least:.2f} ms at least): give a "
            "measured figure, or the bound times a route factor")
