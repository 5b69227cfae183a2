"""Who offers which GPU hosts, where, and how those hosts prove who they are."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Upper
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
    # The reference's agent (`benchctl reference-agent`, on the reference's own host) hands
    # in what its iperf3 and echo servers recorded over the API with this key; the web tier
    # reads no file of the reference's. Empty: no agent, every figure to it host-reported.
    key_digest = models.CharField(max_length=64, blank=True)
    # Unix time up to which the agent has handed in every record its servers wrote (its
    # last post): a result is judged once the records of the run's turns are in.
    records_through = models.FloatField(null=True, blank=True)
    # The public half of the RSA key its iperf3 server authenticates turns with (PEM), set
    # by its agent; empty: the server takes tests without a credential.
    iperf3_public_key = models.TextField(blank=True)
    node = models.ForeignKey("Node", null=True, blank=True, on_delete=models.CASCADE,
                             related_name="dedicated_endpoints")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["region", "name"], name="unique_endpoint_per_region")
        ]

    def as_peer(self) -> PeerSpec:
        return {"name": f"reference:{self.region.code}:{self.name}", "host": self.host,
                "iperf3_port": self.iperf3_port, "echo_port": self.echo_port}

    def server_id(self) -> int:
        """The iperf3 server this endpoint is on: the first endpoint with its host and port.
        Endpoints on one server (a node's own relayed echo path beside its region's
        reference) share its turns and its records. Read once per instance: a result's
        review asks for it per presented test."""
        cached = self.__dict__.get("_server_id")
        if cached is None:
            first = (ReferenceEndpoint.objects.filter(host=self.host, iperf3_port=self.iperf3_port)
                     .order_by("pk").values_list("pk", flat=True).first())
            cached = self.__dict__["_server_id"] = int(first if first is not None else self.pk)
        return int(cached)

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
    # A buyer's trial token (trials.create_token): the host it enrols is the buyer's agent on
    # an instance of this node they rent, its key the buyer's alone, until trial_ends_at.
    trial_of = models.ForeignKey("Node", null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="+")
    trial_ends_at = models.DateTimeField(null=True, blank=True)


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
    # Its block devices (name, rotational) as it listed them at enrolment: what its storage
    # IOPS are bounded by (contract/storage_devices.py); a later result cannot add disks.
    enrolled_disks = models.JSONField(default=list, blank=True)
    # The address other nodes reach it at (its iperf3 server, DDP rendezvous); optional.
    address = models.CharField(max_length=255, blank=True)
    # The source address the platform saw the host enrol from. With ``address``, the only
    # addresses a reference's record of a test may come from to count as this node's.
    observed_address = models.GenericIPAddressField(null=True, blank=True)
    iperf3_port = models.PositiveIntegerField(default=5201)
    # The node this host was enrolled as before (fleet.services.identity), if any.
    predecessor = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="successors")
    # A buyer's trial agent (fleet.services.trials): its runs measure ``trial_of`` and are
    # buyer-measured; only ``trial_buyer`` may ask for them, and its key ends with the trial.
    trial_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="trial_agents")
    trial_buyer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.CASCADE, related_name="trial_agents")
    trial_ends_at = models.DateTimeField(null=True, blank=True)
    # What the provider charges for it, per month, for price-performance.
    monthly_price_cny = models.PositiveIntegerField(null=True, blank=True)
    # From the inventory it last reported: "none" on a host without an NVIDIA GPU.
    gpu_model = models.CharField(max_length=128, blank=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "name"], name="unique_node_name_per_provider")
        ]
        # The board filters on gpu_model case-blind (UPPER(gpu_model) = UPPER(%s)). Without
        # statistics on that expression the planner guessed 5 of 1,000 nodes would match,
        # joined every node to its row and sorted them: 9 ms of a board request where
        # walking the value index and stopping at the page's end takes 1.5 ms (#35).
        indexes = [models.Index(Upper("gpu_model"), name="node_gpu_model_upper")]

    def __str__(self) -> str:
        return f"{self.provider.name}/{self.name}"

    @property
    def claims_gpu(self) -> bool:
        """Whether the host enrolled an NVIDIA GPU ("none" when its inventory had none)."""
        return Node.is_gpu_model(self.gpu_model)

    @staticmethod
    def is_gpu_model(model: str | None) -> bool:
        """A GPU model as enrolled, not the marks of none ("" before models were recorded)."""
        return (model or "") not in ("", "none")

    @staticmethod
    def gpu_model_of(inventory: dict[str, object]) -> str:
        gpu = inventory.get("gpu")
        if not isinstance(gpu, dict) or not gpu.get("available"):
            return "none"
        devices = gpu.get("devices") or []
        names = sorted({str(d.get("name")) for d in devices if isinstance(d, dict)})
        return ", ".join(names)[:128] or "unknown"

    @staticmethod
    def disks_of(inventory: dict[str, object]) -> list[dict[str, object]]:
        disks = inventory.get("disks")
        return [{"name": str(d.get("name", ""))[:64], "rotational": bool(d.get("rotational"))}
                for d in (disks if isinstance(disks, list) else [])[:256] if isinstance(d, dict)]

    @staticmethod
    def nic_speeds_of(inventory: dict[str, object]) -> list[int]:
        nics = inventory.get("nics")
        if not isinstance(nics, list):
            return []
        speeds = (n.get("speed_mbps") for n in nics if isinstance(n, dict))
        return sorted(int(s) for s in speeds
                      if isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0)

    @property
    def is_trial_agent(self) -> bool:
        return self.trial_of_id is not None

    @property
    def measured_node_id(self) -> int:
        """The node its figures belong to on the board: a trial agent measures its node."""
        return int(self.trial_of_id or self.pk)

    def known_addresses(self) -> set[str]:
        """Where this node's tests towards a reference may come from (enrolled, observed)."""
        return {a for a in (self.address, self.observed_address) if a}

    @property
    def online(self) -> bool:
        """Seen within NODE_OFFLINE_AFTER_SECONDS (its worker heartbeats more often)."""
        if self.last_seen_at is None:
            return False
        age = (timezone.now() - self.last_seen_at).total_seconds()
        return age <= settings.NODE_OFFLINE_AFTER_SECONDS


class HostKey(models.Model):
    """One hardware key of an enrolled host (a GPU UUID or serial, a burned-in MAC)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="host_keys")
    key = models.CharField(max_length=128, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "key"], name="one_key_per_node")]


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
