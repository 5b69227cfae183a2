"""Finding the interface for the enrolled address, from recorded `ip -o addr show` output."""

from __future__ import annotations

from pathlib import Path

from workers.host.netif import interface_for

SHOWN = (Path(__file__).parents[1] / "data" / "ip" / "addr_show.txt").read_text()


def test_loopback_is_lo() -> None:
    assert interface_for("127.0.0.1", SHOWN) == "lo"


def test_an_ipv6_address_is_found_too() -> None:
    assert interface_for("::1", SHOWN) == "lo"


def test_an_address_no_interface_has_is_none() -> None:
    assert interface_for("203.0.113.9", SHOWN) is None


def test_a_veth_name_loses_its_peer_suffix() -> None:
    shown = "7: veth-a@if6    inet 10.77.0.1/24 scope global veth-a\\       valid_lft forever"
    assert interface_for("10.77.0.1", shown) == "veth-a"


def test_garbage_is_none() -> None:
    assert interface_for("not an address", SHOWN) is None
