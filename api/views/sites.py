"""A buyer's sites and the probes from them (`benchctl probe`): the owner's alone."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import current_user
from api.site_serializers import (
    IssuedProbesSerializer,
    ProbeRequestSerializer,
    ProbeResultSerializer,
    ProbeSerializer,
    SiteDetailSerializer,
    SiteRequestSerializer,
    SiteSerializer,
)
from board import site_figures
from contract import site_probe
from jobs.services import site_probes


class SiteListView(APIView):
    @extend_schema(responses={200: SiteSerializer(many=True)})
    def get(self, request: Request) -> Response:
        return Response(SiteSerializer(site_probes.sites_of(current_user(request)), many=True).data)

    @extend_schema(request=SiteRequestSerializer, responses={201: SiteSerializer})
    def post(self, request: Request) -> Response:
        body = SiteRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        site = site_probes.create_site(current_user(request), **body.validated_data)
        return Response(SiteSerializer(site).data, status=status.HTTP_201_CREATED)


class SiteView(APIView):
    @extend_schema(responses={200: SiteDetailSerializer})
    def get(self, request: Request, site_id: int) -> Response:
        site = site_probes.site_of(current_user(request), site_id)
        data = SiteSerializer(site).data | {"figures": site_figures.figures(site)}
        return Response(SiteDetailSerializer(data).data)


class SiteProbesView(APIView):
    @extend_schema(request=ProbeRequestSerializer, responses={201: IssuedProbesSerializer})
    def post(self, request: Request, site_id: int) -> Response:
        site = site_probes.site_of(current_user(request), site_id)
        body = ProbeRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        issued = site_probes.issue(site, body.validated_data.get("nodes"),
                                   body.validated_data.get("region"))
        probes = [{"probe": i.probe.pk, "node": i.probe.node_id, "node_name": i.probe.node.name,
                   "host": i.probe.node.address,
                   "port": site_probe.gate_port(i.probe.node.iperf3_port), "token": i.token,
                   "username": site_probe.iperf3_username(i.probe.pk),
                   "expires_at": i.probe.expires_at,
                   "round_trips": int(site_probe.BOUNDS["round_trips"]),
                   "iperf3_seconds": int(site_probe.BOUNDS["iperf3_seconds"])} for i in issued]
        return Response(IssuedProbesSerializer({"site": site.pk, "probes": probes}).data,
                        status=status.HTTP_201_CREATED)


class ProbeResultView(APIView):
    @extend_schema(request=ProbeResultSerializer, responses={200: ProbeSerializer})
    def post(self, request: Request, probe_id: int) -> Response:
        body = ProbeResultSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        probe = site_probes.results(current_user(request), probe_id, body.validated_data)
        return Response(ProbeSerializer(probe).data)

    @extend_schema(request=None, responses={200: ProbeSerializer})
    def get(self, request: Request, probe_id: int) -> Response:
        probe = site_probes.buyer_probe(current_user(request), probe_id)
        return Response(ProbeSerializer(probe).data)
