"""When the network probe tries an iperf3 test at a reference again (benchmarks.probes.network)."""

from __future__ import annotations

import pytest

from benchmarks.probes.network import AUTH_RETRY_S, BUSY_RETRIES, QUICK_AUTH_RETRIES, Retries

REFUSED = "iperf3 failed: test authorization failed"
BUSY = "iperf3 failed: the server is busy running a test. try again later"


def schedule(retries: Retries, error: str) -> list[float]:
    delays = []
    while (delay := retries.after(error)) is not None:
        delays.append(delay)
    return delays


def test_a_busy_server_is_tried_again_later_and_later_then_given_up() -> None:
    assert schedule(Retries(), BUSY) == [0.5 * n for n in range(1, BUSY_RETRIES)]


def test_a_refused_credential_is_tried_again_soon_then_as_a_busy_server() -> None:
    # The agent writes a granted turn within half a second: the first tries come quickly,
    # and an agent slower than that still has every busy retry's patience.
    delays = schedule(Retries(), REFUSED)
    assert delays[:QUICK_AUTH_RETRIES] == [AUTH_RETRY_S] * QUICK_AUTH_RETRIES
    assert delays[QUICK_AUTH_RETRIES:] == schedule(Retries(), BUSY)


@pytest.mark.parametrize("error", ["iperf3 failed: unable to connect to server: No route to host",
                                   "iperf3 printed no JSON"])
def test_any_other_failure_is_not_tried_again(error: str) -> None:
    assert Retries().after(error) is None


def test_quick_tries_spent_on_refusals_leave_the_busy_ones() -> None:
    retries = Retries()
    for _ in range(QUICK_AUTH_RETRIES):
        assert retries.after(REFUSED) == AUTH_RETRY_S
    assert retries.after(BUSY) == 0.5
    assert retries.after(REFUSED) == 1.0  # the quick ones are spent
