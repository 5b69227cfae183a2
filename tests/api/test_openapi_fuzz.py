"""Every operation of the committed OpenAPI schema, fuzzed: no 5xx, responses match the schema.

A fixed seed and a bounded number of examples per operation keep it repeatable and CI-sized.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from lab.procs import REPO

schema = schemathesis.openapi.from_path(REPO / "api" / "openapi.yaml")

pytestmark = pytest.mark.slow


@pytest.fixture
def credentials(buyer: Any, enrol_node: Any, reference_endpoint: Any) -> dict[str, str]:
    node = enrol_node("hz-1")
    return {"user": f"Token {buyer.token}", "node": f"Node {node.api_key}"}


@schema.parametrize()
@settings(max_examples=15, derandomize=True, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_the_api_never_fails_with_a_server_error(case: Any, live_server: Any,
                                                 credentials: dict[str, str]) -> None:
    who = "node" if case.path.startswith("/api/v1/node/") else "user"
    case.call_and_validate(base_url=live_server.url, headers={"Authorization": credentials[who]},
                           checks=[not_a_server_error, response_schema_conformance,
                                   content_type_conformance])
