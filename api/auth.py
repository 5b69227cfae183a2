"""Node authentication: ``Authorization: Node <key>`` identifies one enrolled host.

A node key authenticates only node endpoints; user tokens are not accepted there, and
the user endpoints do not accept node keys.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from api import tokens
from fleet.models import Node
from fleet.services import secrets

KEYWORD = "Node"
SEEN_EVERY = 5  # seconds


class NodePrincipal:
    """Stands in for request.user on node endpoints; never a platform user."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, node: Node) -> None:
        self.node = node


class NodeKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[NodePrincipal, Node] | None:
        header = authentication.get_authorization_header(request).decode(errors="replace")
        scheme, _, key = header.partition(" ")
        if scheme != KEYWORD:
            return None
        prefix = secrets.split_api_key(key.strip())
        node = Node.objects.filter(key_prefix=prefix).select_related("region").first() if prefix else None
        if node is None or not secrets.matches(key.strip(), node.key_hash):
            raise exceptions.AuthenticationFailed("invalid node key")
        if node.status != Node.Status.ACTIVE:
            raise exceptions.AuthenticationFailed("this node was revoked; enrol it again")
        now = timezone.now()
        # Every node request proves it is alive; a write at most every few seconds is enough.
        if node.last_seen_at is None or (now - node.last_seen_at).total_seconds() > SEEN_EVERY:
            Node.objects.filter(pk=node.pk).update(last_seen_at=now)
            node.last_seen_at = now
        return NodePrincipal(node), node

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


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
