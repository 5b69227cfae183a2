"""Node authentication: ``Authorization: Node <key>`` identifies one enrolled host;
``Authorization: Reference <key>`` one of the platform's reference agents.

A node key authenticates only node endpoints, a reference key only the reference's
records; user tokens are not accepted there, and the user endpoints take neither.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from api import tokens
from fleet.models import Node, ReferenceEndpoint
from fleet.services import reference_keys, secrets, trials

KEYWORD = "Node"
REFERENCE_KEYWORD = "Reference"
SEEN_EVERY = 5  # seconds


class Principal:
    """Stands in for request.user on a machine's endpoints; never a platform user."""

    is_authenticated = True
    is_anonymous = False


class NodePrincipal(Principal):
    def __init__(self, node: Node) -> None:
        self.node = node


class ReferencePrincipal(Principal):
    def __init__(self, endpoint: ReferenceEndpoint) -> None:
        self.endpoint = endpoint


def key_of(request: Request, scheme: str) -> str | None:
    """The key after ``Authorization: <scheme> ``; None for another scheme."""
    header = authentication.get_authorization_header(request).decode(errors="replace")
    given, _, key = header.partition(" ")
    return key.strip() if given == scheme else None


class NodeKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[NodePrincipal, Node] | None:
        key = key_of(request, KEYWORD)
        if key is None:
            return None
        prefix = secrets.split_api_key(key)
        node = Node.objects.filter(key_prefix=prefix).select_related("region").first() if prefix else None
        if node is None or not secrets.matches(key, node.key_hash):
            raise exceptions.AuthenticationFailed("invalid node key")
        if node.status != Node.Status.ACTIVE:
            raise exceptions.AuthenticationFailed("this node was revoked; enrol it again")
        if trials.ended(node):
            raise exceptions.AuthenticationFailed(
                f"this trial ended at {node.trial_ends_at:%Y-%m-%d %H:%M} UTC; ask for a new "
                "trial token (POST /api/v1/nodes/ID/trial-tokens)")
        now = timezone.now()
        # Every node request proves it is alive; a write at most every few seconds is enough.
        if node.last_seen_at is None or (now - node.last_seen_at).total_seconds() > SEEN_EVERY:
            Node.objects.filter(pk=node.pk).update(last_seen_at=now)
            node.last_seen_at = now
        return NodePrincipal(node), node

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


class ReferenceKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ReferencePrincipal, ReferenceEndpoint] | None:
        key = key_of(request, REFERENCE_KEYWORD)
        if key is None:
            return None
        endpoint = reference_keys.endpoint_for(key)
        if endpoint is None:
            raise exceptions.AuthenticationFailed("invalid reference key")
        return ReferencePrincipal(endpoint), endpoint

    def authenticate_header(self, request: Request) -> str:
        return REFERENCE_KEYWORD


class UserTokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``Authorization: Token <token>``, checked against the stored digests."""

    def authenticate_credentials(self, key: str) -> tuple[User, None]:
        user = tokens.user_for(key)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return user, None


class NodeKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "api.auth.NodeKeyAuthentication"
    name = "nodeKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Node <key>`: the key a host received at enrolment"}


class ReferenceKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "api.auth.ReferenceKeyAuthentication"
    name = "referenceKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Reference <key>`: a platform reference agent's key "
                               "(manage.py reference_endpoint --key-file)"}
