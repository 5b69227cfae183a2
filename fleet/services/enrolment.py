"""Enrolment: a provider's one-time token becomes a node with its own credentials."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, Invalid, NotFound
from fleet.models import EnrolmentToken, HostKey, Node, Provider, Region
from fleet.services import broker, identity, secrets, trials


def create_token(provider: Provider, region: Region, node_name: str,
                 user: User) -> tuple[EnrolmentToken, str]:
    """A new enrolment token; the plain token is returned here and never again."""
    if Node.objects.filter(provider=provider, name=node_name).exists():
        raise Conflict(f"provider already has a node named {node_name!r}")
    plain = secrets.new_secret()
    token = EnrolmentToken.objects.create(
        provider=provider, region=region, node_name=node_name,
        token_hash=secrets.digest(plain), created_by=user,
        expires_at=timezone.now() + timedelta(hours=settings.ENROLMENT_TOKEN_TTL_HOURS),
    )
    return token, plain


@dataclass(frozen=True)
class Credentials:
    node: Node
    api_key: str
    broker_url: str

    def as_config(self) -> dict[str, Any]:
        """What the host stores in its config file (mode 0600)."""
        return {
            "node_id": self.node.pk,
            "node_name": self.node.name,
            "api_url": settings.PUBLIC_API_URL,
            "api_key": self.api_key,
            "broker_url": self.broker_url,
            "broker_transport_options": broker.node_transport_options(self.node.pk),
            "queue": settings.NODE_QUEUE,
            "broker_acl": settings.NODE_BROKER_ACL,
            "heartbeat_seconds": settings.NODE_HEARTBEAT_SECONDS,
            "address": self.node.address,
            "iperf3_port": self.node.iperf3_port,
            "trial_of": self.node.trial_of_id,
            "trial_ends_at": self.node.trial_ends_at.isoformat() if self.node.trial_ends_at else "",
        }


def address_error(address: str) -> str | None:
    """Why other nodes' probes must not be pointed at this address; None when fine.

    Peers ping, tracepath and iperf3 the address a node declares: it must be a literal IP
    (never a name or an option-like string handed to a tool), and not one that turns the
    fleet into a scanner of someone else's network (link-local, multicast, unspecified).
    Loopback only where the whole fleet is one machine (ALLOW_LOOPBACK_ADDRESSES).
    """
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"{address[:64]!r} is not an IP address; give the host's own address (e.g. 10.0.0.5)"
    if ip.is_link_local or ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        return f"{address} is link-local, multicast, unspecified or reserved: not a host address"
    if ip.is_loopback and not settings.ALLOW_LOOPBACK_ADDRESSES:
        return f"{address} is loopback: other nodes cannot reach it"
    return None


def observed(address: str | None) -> str | None:
    """The source address a request came from, when it is one (else None)."""
    try:
        return str(ipaddress.ip_address((address or "").strip()))
    except ValueError:
        return None


def _seen_before(host_keys: set[str]) -> Node | None:
    """The node this hardware was last enrolled as (revoked or not): the new node is the
    same host, and its record (stability, revocations) is this host's under its new name."""
    if not host_keys:
        return None
    return (Node.objects.filter(host_keys__key__in=host_keys).distinct().order_by("-pk")
            .first())


def _check_kind(plain_token: str, trial: bool, inventory: dict[str, Any]) -> EnrolmentToken | None:
    """Before the token is spent: a trial token only with --trial (and the other way), and
    a trial only on the node's own hardware. Returns the token when it is a trial's."""
    token = (EnrolmentToken.objects.filter(token_hash=secrets.digest(plain_token))
             .select_related("trial_of").first())
    if token is None:
        return None  # redeem says "unknown"
    if token.trial_of is not None and not trial:
        raise Invalid("this is a buyer's trial token: enrol with benchctl enroll --trial")
    if token.trial_of is None and trial:
        raise Invalid("this is a provider's enrolment token, not a trial's: enrol without --trial")
    if token.trial_of is not None:
        trials.check_instance(token.trial_of, inventory)
        return token
    return None


def redeem(plain_token: str, address: str = "", inventory: dict[str, Any] | None = None,
           iperf3_port: int = 5201, observed_address: str | None = None,
           trial: bool = False) -> Credentials:
    problem = address_error(address)
    if problem:  # before the token is spent: the host can enrol again with a good address
        raise Invalid(f"address: {problem}")
    trial_token = _check_kind(plain_token, trial, inventory or {})
    # A trial agent is the node's own instance, not a new host: no keys, no predecessor.
    host_keys = set() if trial_token else identity.keys(inventory or {})
    seen = _seen_before(host_keys)
    now = timezone.now()
    with transaction.atomic():
        # Conditional UPDATE: of two hosts racing with one token, exactly one gets the row.
        claimed = EnrolmentToken.objects.filter(
            token_hash=secrets.digest(plain_token), used_at__isnull=True, expires_at__gt=now
        ).update(used_at=now)
        token = EnrolmentToken.objects.filter(token_hash=secrets.digest(plain_token)).first()
        if token is None:
            raise NotFound("unknown enrolment token")
        if not claimed:
            if token.used_at is not None:
                raise Conflict("this enrolment token was already used; ask the "
                               "provider for a new one")
            raise Conflict("this enrolment token has expired; ask the provider for a new one")
        api_key, prefix, key_hash = secrets.new_api_key()
        node = Node.objects.create(
            provider=token.provider, region=token.region, name=token.node_name,
            key_prefix=prefix, key_hash=key_hash, address=address, inventory=inventory or {},
            observed_address=observed(observed_address),
            iperf3_port=iperf3_port, enrolled_nic_mbps=Node.nic_speeds_of(inventory or {}),
            enrolled_disks=Node.disks_of(inventory or {}),
            # The GPU it claims from the start: a result posted without an inventory is judged
            # against this model's peaks (consistency.within_gpu_peak), not a CPU's.
            gpu_model=Node.gpu_model_of(inventory or {}),
            broker=broker.assign(), predecessor=seen,
            trial_of=token.trial_of, trial_buyer=token.created_by if token.trial_of else None,
            trial_ends_at=token.trial_ends_at,
        )
        HostKey.objects.bulk_create([HostKey(node=node, key=k) for k in sorted(host_keys)])
        token.node = node
        token.save(update_fields=["node"])
        password = None
        if settings.NODE_BROKER_ACL:
            password = secrets.new_secret()
            # Inside the transaction: if Redis refuses, no node row is left half-made.
            node.broker_user = broker.create_node_user(node.pk, password, node.broker)
            node.save(update_fields=["broker_user"])
    return Credentials(node=node, api_key=api_key,
                       broker_url=broker.node_broker_url(node.pk, password, node.broker))
