"""A host is its hardware: enrolled again under a new name, it keeps its record.

Real parts: the enrolment service and PostgreSQL, the re-test schedule and its stability
figures as the board reads them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from board import stability_board
from certification.models import Certificate
from fleet.models import Node
from fleet.services import identity, revocation
from jobs.models import Retest
from jobs.services import lifecycle, submission

BOARD = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5a1c3f00-aaaa-bbbb-cccc-0123456789ab",
         "serial": "1650123456789"}


def inventory(*boards: dict[str, Any], mac: str = "b8:ce:f6:12:34:56") -> dict[str, Any]:
    return {"nics": [{"name": "eth0", "speed_mbps": 10_000, "mac": mac}],
            "gpu": {"available": True, "devices": list(boards)}}


def test_the_keys_are_gpu_ids_and_burned_in_macs_never_generated_ones() -> None:
    keys = identity.keys(inventory(BOARD) | {"machine_id": "0f1e2d"})
    assert keys == {f"gpu-uuid:{BOARD['uuid']}", f"gpu-serial:{BOARD['serial']}",
                    "mac:b8:ce:f6:12:34:56"}
    # A veth's or a VM's locally administered MAC, a board without a serial: no key.
    assert identity.keys(inventory({"name": "x", "serial": "[N/A]"}, mac="9a:3c:11:00:00:01")) == set()


def test_a_revoked_host_enrolled_again_under_a_new_name_keeps_its_record(
        enrol_node: Any) -> None:
    old = enrol_node("hz-a100-01", inventory=inventory(BOARD))
    now = timezone.now()
    for hours in (30, 20, 10):  # three re-tests it missed
        Retest.objects.create(node=old.node, due_at=now - timedelta(hours=hours),
                              status=Retest.Status.MISSED, reason="the node was offline")
    revocation.revoke(old.node, "revoked by provider")
    # Same GPU board, another NIC and another name: the same host.
    new = enrol_node("hz-fresh-01", inventory=inventory(BOARD, mac="b8:ce:f6:99:99:99"))
    assert new.node.predecessor_id == old.node.pk
    record = stability_board.figures([new.node.pk], ["network.tcp_throughput"])[new.node.pk]
    assert record["network.tcp_throughput"].missed == 3, record
    # Another host is not.
    other = enrol_node("hz-other", inventory=inventory(BOARD | {"uuid": "GPU-other",
                                                                "serial": "99"}, mac="b8:ce:f6:0:0:1"))
    assert Node.objects.get(pk=other.node.pk).predecessor_id is None


def test_new_gpu_boards_are_a_new_inventory_that_re_opens_certification(
        buyer: Any, enrol_node: Any, django_capture_on_commit_callbacks: Any) -> None:
    node = enrol_node("hz-h100-01", inventory=inventory(BOARD))
    now = timezone.now()
    cert = Certificate.objects.create(node=node.node, profile="single-node-training", tier="gold",
                                      document={}, signature="", issued_at=now,
                                      expires_at=now + timedelta(days=30))

    def result(boards: dict[str, Any]) -> None:
        job, _ = submission.submit(buyer.user, [node.node.pk], "noop")
        claim = lifecycle.claim(node.node, job.runs.get().pk)
        with django_capture_on_commit_callbacks(execute=True):
            lifecycle.finish(node.node, claim.run.pk, claim.attempt.id, True, [], "",
                             inventory(boards))

    result(BOARD)  # the enrolled board: nothing changes
    cert.refresh_from_db()
    assert cert.revoked_at is None
    swapped = BOARD | {"uuid": "GPU-0badc0de-0000-0000-0000-000000000001"}
    result(swapped)  # the same model, another board: the certificate vouched for the old one
    cert.refresh_from_db()
    assert cert.revoked_at is not None and "GPU boards changed" in cert.revoked_reason
    assert f"gpu-uuid:{swapped['uuid']}" in set(node.node.host_keys.values_list("key", flat=True))
