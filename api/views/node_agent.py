"""Endpoints a node worker calls with its node key, for its own runs only."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from api.auth import NodeKeyAuthentication
from api.permissions import IsNode
from api.serializers import (
    BarrierRequestSerializer,
    BarrierStateSerializer,
    NodeSerializer,
    ReferenceSlotRequestSerializer,
    ReferenceSlotStateSerializer,
    RunProgressSerializer,
    RunResultSerializer,
    RunSpecSerializer,
)
from api.site_serializers import (
    ProbeClaimedSerializer,
    ProbeClaimSerializer,
    ProbeRecordSerializer,
)
from config.errors import Conflict, DomainError, Invalid, NotFound, Unprocessable
from contract import site_probe
from fleet.models import Node
from jobs.services import lifecycle, observability, reference_slots, site_probes

# What a refused result is counted as (bench_results_rejected_total), by kind of refusal.
REJECTIONS: dict[type[DomainError], str] = {NotFound: "not_this_nodes_run",
                                            Conflict: "stale_attempt", Invalid: "not_measured"}

_Ack = inline_serializer("Ack", {"status": serializers.CharField()})


class NodeView(APIView):
    authentication_classes = [NodeKeyAuthentication]
    permission_classes = [IsNode]

    @property
    def node(self) -> Node:
        assert isinstance(self.request.auth, Node)
        return self.request.auth


class NodeSelfView(NodeView):
    @extend_schema(responses={200: NodeSerializer})
    def get(self, request: Request) -> Response:
        return Response(NodeSerializer(self.node).data)


class HeartbeatView(NodeView):
    @extend_schema(request=None, responses={200: _Ack})
    def post(self, request: Request) -> Response:
        # Other node requests stamp last_seen_at at most every few seconds; this one always.
        Node.objects.filter(pk=self.node.pk).update(last_seen_at=timezone.now())
        return Response({"status": "ok"})


class ClaimView(NodeView):
    @extend_schema(request=None, responses={200: RunSpecSerializer})
    def post(self, request: Request, run_id: int) -> Response:
        claim = lifecycle.claim(self.node, run_id)
        # spec() is built of plain JSON types already; RunSpecSerializer documents it.
        return Response(claim.spec())


class ProgressView(NodeView):
    @extend_schema(request=RunProgressSerializer, responses={200: _Ack})
    def post(self, request: Request, run_id: int) -> Response:
        body = RunProgressSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lifecycle.renew(self.node, run_id, body.validated_data["attempt_id"],
                        body.validated_data["progress"])
        return Response({"status": "ok"})


class ResultView(NodeView):
    @extend_schema(request=RunResultSerializer, responses={200: _Ack})
    def post(self, request: Request, run_id: int) -> Response:
        body = RunResultSerializer(data=request.data)
        if not body.is_valid():
            observability.count_rejection("invalid")
            body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            stored = lifecycle.finish(self.node, run_id, uuid.UUID(str(data["attempt_id"])),
                                      data["status"] == "succeeded", data["samples"],
                                      data["error"], data["inventory"])
        except DomainError as exc:
            if not isinstance(exc, Unprocessable):  # counted by the rule they broke
                observability.count_rejection(REJECTIONS.get(type(exc), "other"))
            raise
        return Response({"status": "stored" if stored else "already stored"})


class BarrierView(NodeView):
    @extend_schema(request=BarrierRequestSerializer, responses={200: BarrierStateSerializer})
    def post(self, request: Request, run_id: int) -> Response:
        body = BarrierRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        state = lifecycle.barrier(self.node, run_id, body.validated_data["attempt_id"],
                                  body.validated_data["name"])
        return Response(state.as_dict())


class ReferenceSlotView(NodeView):
    """The one-test-at-a-time slot of a reference endpoint's iperf3 server (jobs.services.
    reference_slots): ask before each test, wait while another node's run holds it."""

    @extend_schema(request=ReferenceSlotRequestSerializer,
                   responses={200: ReferenceSlotStateSerializer})
    def post(self, request: Request, run_id: int) -> Response:
        body = ReferenceSlotRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if data["release"]:
            reference_slots.give_back(self.node, run_id, data["attempt_id"], data["peer"])
            return Response({"granted": False, "wait_s": 0.0})
        state = reference_slots.take(self.node, run_id, data["attempt_id"], data["peer"],
                                     data["seconds"])
        return Response(state.as_dict())


class PerNode(SimpleRateThrottle):
    """Counted per node, not per address: nodes behind one NAT (or on the lab's loopback)
    each have their own count."""

    scope = "probe-claim"

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": f"node-{request.auth.pk}"}


class ProbeClaimView(NodeView):
    """The node's test server takes a buyer's probe token: this node's, once, in time.

    Anyone who reaches a node's test server can make it ask here (a made-up token costs one
    claim), so a node's claims are throttled: a flood at one node's door reaches the
    platform at the claim rate, and refuses only that node's probes meanwhile."""

    throttle_classes = [PerNode]

    @extend_schema(request=ProbeClaimSerializer, responses={200: ProbeClaimedSerializer})
    def post(self, request: Request) -> Response:
        body = ProbeClaimSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        probe = site_probes.claim(self.node, body.validated_data["token"])
        return Response({"probe": probe.pk, "username": site_probe.iperf3_username(probe.pk)})


class ProbeRecordView(NodeView):
    """The node's own record of a buyer's session: the confirmation, not the figure."""

    @extend_schema(request=ProbeRecordSerializer, responses={200: _Ack})
    def post(self, request: Request, probe_id: int) -> Response:
        body = ProbeRecordSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        site_probes.record(self.node, probe_id, body.validated_data)
        return Response({"status": "ok"})
