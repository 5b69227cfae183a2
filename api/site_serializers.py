"""A buyer's sites and the probes from them: requests and answers (/api/v1/sites, /probes,
and the node's side under /api/v1/node/probes)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from contract.site_probe import BOUNDS


def ids() -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=2**31 - 1)  # PostgreSQL's integer


class SiteRequestSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=128, help_text='e.g. "Hangzhou office"')
    city = serializers.CharField(max_length=64, help_text="a city of contract/places.py, in "
                                                          "English or Chinese (Hangzhou, 杭州)")


class SiteFigureSerializer(serializers.Serializer[Any]):
    """The site's latest measurement of one node (board/site_figures.py)."""

    node = serializers.IntegerField()
    node_name = serializers.CharField()
    region = serializers.CharField()
    rtt_ms = serializers.FloatField(allow_null=True, help_text="median TCP round trip, as "
                                    "the buyer's CLI timed it")
    rtt_p95_ms = serializers.FloatField(allow_null=True)
    upload_gbps = serializers.FloatField(allow_null=True, help_text="site to node")
    download_gbps = serializers.FloatField(allow_null=True, help_text="node to site")
    hop_count = serializers.IntegerField(allow_null=True)
    confirmed = serializers.BooleanField(help_text="the node's own record names the tests")
    measured_at = serializers.DateTimeField()


class SiteSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    city = serializers.CharField()
    created_at = serializers.DateTimeField()


class SiteDetailSerializer(SiteSerializer):
    figures = SiteFigureSerializer(many=True)


class ProbeRequestSerializer(serializers.Serializer[Any]):
    nodes = serializers.ListField(child=ids(), required=False, allow_empty=False,
                                  max_length=int(BOUNDS["nodes_per_request"]))
    region = serializers.SlugField(required=False, help_text="every active node of a region")


class IssuedProbeSerializer(serializers.Serializer[Any]):
    probe = serializers.IntegerField()
    node = serializers.IntegerField()
    node_name = serializers.CharField()
    host = serializers.CharField(help_text="the node's enrolled address")
    port = serializers.IntegerField(help_text="its test server's port")
    token = serializers.CharField(help_text="opens that node's test server once; shown once")
    username = serializers.CharField(help_text="the iperf3 user of the session (its password "
                                               "is the token)")
    expires_at = serializers.DateTimeField()
    round_trips = serializers.IntegerField()
    iperf3_seconds = serializers.IntegerField()


class IssuedProbesSerializer(serializers.Serializer[Any]):
    site = serializers.IntegerField()
    probes = IssuedProbeSerializer(many=True)


class HopSerializer(serializers.Serializer[Any]):
    ttl = serializers.IntegerField(min_value=0, max_value=255)
    host = serializers.CharField(max_length=255, allow_null=True)
    rtt_ms = serializers.FloatField(min_value=0, max_value=60_000, allow_null=True)
    no_reply = serializers.BooleanField()


class ProbeResultSerializer(serializers.Serializer[Any]):
    """What the buyer's CLI measured: the figures stored."""

    rtts_ms = serializers.ListField(child=serializers.FloatField(min_value=0, max_value=60_000),
                                    max_length=int(BOUNDS["max_round_trips"]), default=list)
    upload_gbps = serializers.FloatField(min_value=0, max_value=1000, allow_null=True,
                                         default=None)
    download_gbps = serializers.FloatField(min_value=0, max_value=1000, allow_null=True,
                                           default=None)
    cookies = serializers.ListField(child=serializers.CharField(max_length=64), max_length=8,
                                    default=list)
    hops = serializers.ListField(child=HopSerializer(), default=list, max_length=64)
    hop_count = serializers.IntegerField(min_value=0, max_value=255, allow_null=True,
                                         default=None)


class ProbeSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    site = serializers.IntegerField(source="site_id")
    node = serializers.IntegerField(source="node_id")
    rtt_ms = serializers.FloatField(allow_null=True)
    upload_gbps = serializers.FloatField(allow_null=True)
    download_gbps = serializers.FloatField(allow_null=True)
    hop_count = serializers.IntegerField(allow_null=True)
    confirmed = serializers.BooleanField()
    measured_at = serializers.DateTimeField(allow_null=True)


class ProbeClaimSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(max_length=128)


class ProbeClaimedSerializer(serializers.Serializer[Any]):
    probe = serializers.IntegerField()
    username = serializers.CharField()


class ServedTestSerializer(serializers.Serializer[Any]):
    cookie = serializers.CharField(max_length=64)
    reverse = serializers.BooleanField()
    gbps = serializers.FloatField(min_value=0, max_value=1000)


class ProbeRecordSerializer(serializers.Serializer[Any]):
    """The node's own record of a session: its claim, kept to confirm the buyer's figures."""

    client = serializers.CharField(max_length=64, help_text="the buyer's address, as the "
                                                            "node's test server saw it")
    rtts_ms = serializers.ListField(child=serializers.FloatField(min_value=0, max_value=60_000),
                                    max_length=int(BOUNDS["max_round_trips"]) + 1, default=list)
    served = serializers.ListField(child=ServedTestSerializer(), default=list, max_length=8)
