"""``ss -Htn state established`` as the reference's agent reads it (recorded output)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.parsers.ss import established_peers

DATA = Path(__file__).resolve().parents[1] / "data" / "ss"


def test_an_ipv4_client_of_a_dual_stack_server_is_its_ipv4_address() -> None:
    assert established_peers((DATA / "established-dual-stack.txt").read_text()) == {"127.0.0.1"}


def test_ipv4_and_ipv6_peers_are_read_as_the_platform_writes_them() -> None:
    assert established_peers((DATA / "established-ipv4.txt").read_text()) == {"127.0.0.1"}
    assert established_peers((DATA / "established-ipv6.txt").read_text()) == {"::1"}


def test_what_is_not_a_connection_line_is_passed_over() -> None:
    text = "State Recv-Q\n0 0 127.0.0.1:5201 not-an-address:1\n0 0 a b c d e\n\n"
    assert established_peers(text) == set()


@given(st.text())
def test_any_text_gives_addresses_or_nothing(text: str) -> None:
    assert all(isinstance(p, str) for p in established_peers(text))
