"""The reference's nft script (workers.host.reference_firewall), as text: no root needed.
tests/security/test_reference_allowlist.py applies it in namespaces."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from workers.host import reference_firewall
from workers.host.reference_firewall import Firewall, guard_script, nft_script, parse_ports

EXPECTED = """\
table inet benchref
delete table inet benchref
table inet benchref {
\tset nodes4 {
\t\ttype ipv4_addr
\t\telements = { 10.0.0.2, 10.0.0.10 }
\t}
\tset nodes6 {
\t\ttype ipv6_addr
\t\telements = { 2001:db8::1 }
\t}
\tchain input {
\t\ttype filter hook input priority 0; policy accept;
\t\tiif "lo" accept
\t\ttcp dport { 5201, 7007 } ct state new ip saddr != @nodes4 drop
\t\ttcp dport { 5201, 7007 } ct state new ip6 saddr != @nodes6 drop
\t}
}
"""


def test_the_script_replaces_the_table_with_the_valid_addresses_sorted() -> None:
    script = nft_script(["10.0.0.10", "2001:DB8:0::1", " 10.0.0.2", "10.0.0.10", "",
                         "node.example.com", "10.0.0.300", "; flush ruleset"], [7007, 5201])
    assert script == EXPECTED


def test_an_ipv4_client_seen_by_a_dual_stack_server_is_allowed_as_ipv4() -> None:
    assert "elements = { 192.0.2.7 }" in nft_script(["::ffff:192.0.2.7"], [5201])


def test_an_empty_list_closes_the_ports_to_everyone_but_loopback() -> None:
    script = nft_script([], [5201])
    assert "elements" not in script  # nft refuses an empty element list
    assert "tcp dport { 5201 } ct state new ip saddr != @nodes4 drop" in script


def test_the_guard_keeps_the_sets_and_replaces_the_rules() -> None:
    script = guard_script([5201])
    assert "delete" not in script and "elements" not in script
    assert "flush chain inet benchref input" in script
    assert script.index("flush chain") < script.index("saddr != @nodes4 drop")


def test_ports_are_parsed_or_refused() -> None:
    assert parse_ports("7007, 5201,5201") == [5201, 7007]
    for bad in ("", "0", "70000", "5201,x"):
        with pytest.raises(ValueError):
            parse_ports(bad)


class Platform:
    """The allow-list endpoint as the agent's session sees it: answers in turn."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)

    def get(self, url: str, timeout: float) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        response = requests.Response()
        response.status_code, response._content = answer  # type: ignore[attr-defined]
        return response


def firewall(platform: Platform, applied: list[str]) -> tuple[Firewall, list[float]]:
    now = [0.0]
    wall = Firewall(platform, "http://platform", [5201], interval=10,  # type: ignore[arg-type]
                    apply=applied.append, clock=lambda: now[0])
    return wall, now


def test_a_failed_fetch_keeps_the_last_list_and_a_changed_one_is_applied() -> None:
    applied: list[str] = []
    wall, now = firewall(Platform(
        (200, b'{"addresses": ["10.0.0.1"], "generated_at": 1}'),
        requests.ConnectionError("platform down"),
        (503, b"busy"),
        (200, b'{"addresses": ["10.0.0.1"], "generated_at": 4}'),
        (200, b'{"addresses": ["10.0.0.2"], "generated_at": 5}')), applied)
    assert wall.refresh() is not None and applied == [nft_script(["10.0.0.1"], [5201])]
    assert wall.refresh() is None and wall.wait() == 10  # not due yet: nothing fetched
    for _ in range(2):
        now[0] += 10
        line = wall.refresh()
        assert line is not None and "keeping the last one" in line
    assert len(applied) == 1  # nothing was opened up, nor closed further
    now[0] += 10
    assert wall.refresh() is None and len(applied) == 1  # the same list: not applied again
    now[0] += 10
    assert wall.refresh() is not None and applied[-1] == nft_script(["10.0.0.2"], [5201])


def test_a_script_nft_refused_is_tried_again() -> None:
    calls: list[str] = []

    def refuse(script: str) -> None:
        calls.append(script)
        raise RuntimeError("nft -f -: Operation not permitted")

    body = (200, b'{"addresses": ["10.0.0.1"], "generated_at": 1}')
    wall, now = firewall(Platform(body, body), [])
    wall.apply = refuse
    line = wall.refresh()
    assert line is not None and "Operation not permitted" in line and wall.applied is None
    now[0] += 10
    wall.refresh()
    assert len(calls) == 2


def test_nft_is_run_through_the_runner_with_the_script_on_stdin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def run(argv: list[str], timeout: float, stdin: str | None = None) -> Any:
        seen.update(argv=argv, stdin=stdin)
        return reference_firewall.runner.CommandResult(argv, 1, "", "Error: syntax\n")

    monkeypatch.setattr(reference_firewall.runner, "run", run)
    with pytest.raises(RuntimeError, match="Error: syntax"):
        reference_firewall.apply_nft("table inet benchref\n")
    assert seen == {"argv": ["nft", "-f", "-"], "stdin": "table inet benchref\n"}
