"""Who offers which GPU hosts, where, and how those hosts prove who they are."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from contract.run_spec import PeerSpec


class Region(models.Model):
    """A city-level region; procurement compares provinces and cities."""

    code = models.SlugField(unique=True)  # e.g. "hangzhou"
    province = models.CharField(max_length=64)  # e.g. "Zhejiang"
    city = models.CharField(max_length=64)

    def __str__(self) -> str:
        return f"{self.province}/{self.city}"


class ReferenceEndpoint(models.Model):
    """A platform-run peer in a region: an `iperf3 -s`, and a TCP echo server for TCP RTT.

    An endpoint may be dedicated to one node (a path only that node uses, as the lab's
    latency relays are); a node with dedicated endpoints measures against those only.
    """

    region = models.ForeignKey(Region, on_delete=models.CASCADE, related_name="endpoints")
    name = models.SlugField()
    host = models.CharField(max_length=255)
    iperf3_port = models.PositiveIntegerField(default=5201)
    echo_port = models.PositiveIntegerField(null=True, blank=True)
    # Where the platform reads this endpoint's own iperf3 log (iperf3 -s -J --logfile), to
    # check what hosts report against what the reference measured; empty: not readable.
    report_log = models.CharField(max_length=500, blank=True)
    # Its echo server's own record of each run's round trips (echo-server --log), keyed by
    # the run's token; empty: TCP RTT to it stays host-reported.
    echo_log = models.CharField(max_length=500, blank=True)
    node = models.ForeignKey("Node", null=True, blank=True, on_delete=models.CASCADE,
                             related_name="dedicated_endpoints")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["region", "name"], name="unique_endpoint_per_region")
        ]

    def as_peer(self) -> PeerSpec:
        return {"name": f"reference:{self.region.code}:{self.name}", "host": self.host,
                "iperf3_port": self.iperf3_port, "echo_port": self.echo_port}

    @staticmethod
    def for_node(node: Node) -> list[ReferenceEndpoint]:
        # One query for both kinds; the node's dedicated endpoints win over its region's.
        endpoints = list(ReferenceEndpoint.objects.select_related("region").filter(
            models.Q(node=node) | models.Q(region_id=node.region_id, node__isnull=True))
            .order_by("id"))
        dedicated = [e for e in endpoints if e.node_id == node.pk]
        return dedicated or endpoints


class Provider(models.Model):
    class Kind(models.TextChoices):
        LOCAL_DC = "local_dc", "local data centre"
        CLOUD = "cloud", "cloud"

    name = models.CharField(max_length=128, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CLOUD)
    owners = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="providers")

    def __str__(self) -> str:
        return self.name


class EnrolmentToken(models.Model):
    """A one-time secret a provider hands to a new host; stored as a hash only."""

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="tokens")
    region = models.ForeignKey(Region, on_delete=models.PROTECT)
    node_name = models.CharField(max_length=128)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    node = models.OneToOneField("Node", null=True, blank=True, on_delete=models.SET_NULL)


class Node(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        REVOKED = "revoked"

    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="nodes")
    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="nodes")
    name = models.CharField(max_length=128)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # The node's API key: a short public prefix to find the row, and a hash of the whole key.
    key_prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    broker_user = models.CharField(max_length=64, blank=True)
    # Which of NODE_BROKERS holds its user and queue: chosen at enrolment, never moved (its
    # host dials that one).
    broker = models.CharField(max_length=32, default="default", db_index=True)
    # Set when the sweeper switched the node's Redis user off for going over its budget.
    broker_suspended_reason = models.CharField(max_length=255, blank=True)
    enrolled_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=255, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    # What the host reported about itself (CPU, memory, NICs, GPUs, tool versions).
    inventory = models.JSONField(default=dict, blank=True)
    # Link speeds (Mbit/s) of its NICs as it reported them once, at enrolment: a later
    # result cannot raise the ceiling its throughput figures are checked against.
    enrolled_nic_mbps = models.JSONField(default=list, blank=True)
    # The address other nodes reach it at (its iperf3 server, DDP rendezvous); optional.
    address = models.CharField(max_length=255, blank=True)
    iperf3_port = models.PositiveIntegerField(default=5201)
    # What the provider charges for it, per month, for price-performance.
    monthly_price_cny = models.PositiveIntegerField(null=True, blank=True)
    # From the inventory it last reported: "none" on a host without an NVIDIA GPU.
    gpu_model = models.CharField(max_length=128, blank=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "name"], name="unique_node_name_per_provider")
        ]

    def __str__(self) -> str:
        return f"{self.provider.name}/{self.name}"

    @staticmethod
    def gpu_model_of(inventory: dict[str, object]) -> str:
        gpu = inventory.get("gpu")
        if not isinstance(gpu, dict) or not gpu.get("available"):
            return "none"
        devices = gpu.get("devices") or []
        names = sorted({str(d.get("name")) for d in devices if isinstance(d, dict)})
        return ", ".join(names)[:128] or "unknown"

    @staticmethod
    def nic_speeds_of(inventory: dict[str, object]) -> list[int]:
        nics = inventory.get("nics")
        if not isinstance(nics, list):
            return []
        speeds = (n.get("speed_mbps") for n in nics if isinstance(n, dict))
        return sorted(int(s) for s in speeds
                      if isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0)

    @property
    def online(self) -> bool:
        """Seen within NODE_OFFLINE_AFTER_SECONDS (its worker heartbeats more often)."""
        if self.last_seen_at is None:
            return False
        age = (timezone.now() - self.last_seen_at).total_seconds()
        return age <= settings.NODE_OFFLINE_AFTER_SECONDS


class RetestPause(models.Model):
    """A provider's pause of the platform's scheduled re-tests of one node (maintenance).

    Kept, not deleted, when it ends: how long and at which hours a node was paused is part of
    its stability figure (a node that pauses at its busy hours must not look stable).
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="retest_pauses")
    start = models.DateTimeField()
    end = models.DateTimeField()  # the provider may end it early (resume): end is moved back
    reason = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        indexes = [models.Index(fields=["node", "end"])]
