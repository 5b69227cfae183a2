"""The node's HTTP client for the platform API, authenticated with its node key."""

from __future__ import annotations

import time
from typing import Any, cast

import requests

from contract.run_spec import RunSpec


class ApiError(Exception):
    def __init__(self, status: int, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.body = body or {}


def _error(response: requests.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        return ApiError(response.status_code, response.text[:300])
    if isinstance(body, dict):
        return ApiError(response.status_code, str(body.get("detail") or body), body)
    return ApiError(response.status_code, str(body))


def enrol(api_url: str, token: str, address: str = "", inventory: dict[str, Any] | None = None,
          iperf3_port: int = 5201, timeout: float = 30, trial: bool = False) -> dict[str, Any]:
    response = requests.post(f"{api_url.rstrip('/')}/api/v1/enrol",
                             json={"token": token, "address": address, "iperf3_port": iperf3_port,
                                   "inventory": inventory or {}, "trial": trial}, timeout=timeout)
    if response.status_code != 201:
        raise _error(response)
    data: dict[str, Any] = response.json()
    return data


class NodeApi:
    def __init__(self, api_url: str, api_key: str, timeout: float = 30) -> None:
        self.base = f"{api_url.rstrip('/')}/api/v1/node"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Node {api_key}"
        self.timeout = timeout

    def _post(self, path: str, body: dict[str, Any] | None = None, retries: int = 0) -> dict[str, Any]:
        """POST; server errors and lost connections are retried ``retries`` times."""
        delay = 1.0
        for attempt in range(retries + 1):
            try:
                response = self.session.post(f"{self.base}/{path}", json=body or {},
                                             timeout=self.timeout)
            except requests.ConnectionError as exc:
                if attempt == retries:
                    raise ApiError(0, f"platform unreachable: {exc}") from None
            else:
                if response.status_code < 500 or attempt == retries:
                    if response.status_code >= 400:
                        raise _error(response)
                    data: dict[str, Any] = response.json()
                    return data
            time.sleep(delay)
            delay = min(delay * 2, 30)
        raise AssertionError("unreachable")

    def claim(self, run_id: int) -> RunSpec:
        return cast(RunSpec, self._post(f"runs/{run_id}/claim", retries=3))

    def progress(self, run_id: int, attempt_id: str, progress: dict[str, Any] | None) -> None:
        self._post(f"runs/{run_id}/progress", {"attempt_id": attempt_id, "progress": progress})

    def result(self, run_id: int, attempt_id: str, body: dict[str, Any]) -> dict[str, Any]:
        # A measured result is worth waiting for: retry for several minutes before giving up.
        return self._post(f"runs/{run_id}/result", {"attempt_id": attempt_id, **body}, retries=8)

    def barrier(self, run_id: int, attempt_id: str, name: str) -> dict[str, Any]:
        return self._post(f"runs/{run_id}/barrier", {"attempt_id": attempt_id, "name": name},
                          retries=3)

    def reference_slot(self, run_id: int, attempt_id: str, peer: str, seconds: float = 60,
                       release: bool = False) -> dict[str, Any]:
        return self._post(f"runs/{run_id}/reference-slot", {
            "attempt_id": attempt_id, "peer": peer, "seconds": seconds, "release": release},
            retries=3)

    def heartbeat(self) -> None:
        self._post("heartbeat")

    def probe_claim(self, token: str) -> dict[str, Any]:
        """Take a buyer's probe token for this node's test server (ApiError when it is not
        this node's, used or run out)."""
        return self._post("probes/claim", {"token": token})

    def probe_record(self, probe_id: int, record: dict[str, Any]) -> None:
        self._post(f"probes/{probe_id}/record", record, retries=3)
