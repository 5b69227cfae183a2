"""The reliability tests run with two brokers (NODE_BROKERS): the nodes a test enrols go in
turn to the platform's own Redis ("default") and to a second one ("b"), so every failure
here is also survived with the fleet split over brokers."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def reliability_brokers(request: pytest.FixtureRequest) -> None:
    if "enrol_node" in request.fixturenames:
        request.getfixturevalue("two_brokers")
