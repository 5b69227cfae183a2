"""Who may call what: platform users (procurement, providers) versus enrolled nodes."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, User
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.auth import NodePrincipal, ReferencePrincipal
from fleet.models import Node, ReferenceEndpoint


class IsPlatformUser(BasePermission):
    message = "authenticate with your API token: 'Authorization: Token <token>'"

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return isinstance(user, AbstractBaseUser) and bool(user.is_authenticated) and user.is_active


class IsReference(BasePermission):
    message = "this endpoint takes a reference agent's key: 'Authorization: Reference <key>'"

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, ReferencePrincipal) and isinstance(
            request.auth, ReferenceEndpoint)


class IsNode(BasePermission):
    message = "node endpoints take a node key: 'Authorization: Node <key>'"

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, NodePrincipal) and isinstance(request.auth, Node)


def current_user(request: Request) -> User:
    """The platform user behind a request that IsPlatformUser already let through."""
    assert isinstance(request.user, User)
    return request.user
