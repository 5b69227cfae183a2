"""Structured logs: one JSON object a line, carrying the job and run ids."""

from __future__ import annotations

import json
import logging
from typing import Any

from config.logs import JsonFormatter
from jobs.services import lifecycle, submission


def test_a_claim_logs_a_json_line_with_its_job_and_run(buyer: Any, enrol_node: Any,
                                                       caplog: Any) -> None:
    node = enrol_node("hz-1")
    job, _ = submission.submit(buyer.user, [node.node.pk], "noop")
    with caplog.at_level(logging.INFO, logger="jobs.services.lifecycle"):
        claim = lifecycle.claim(node.node, job.runs.get().pk)
    record = next(r for r in caplog.records if "claimed" in r.getMessage())
    line = json.loads(JsonFormatter().format(record))
    assert (line["job_id"], line["run_id"], line["node_id"]) == (
        str(job.pk), str(claim.run.pk), str(node.node.pk))
    assert line["level"] == "INFO" and line["message"].startswith(f"run {claim.run.pk} claimed")
