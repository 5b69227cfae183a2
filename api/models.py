"""Users' API tokens, stored as hashes (as node keys and enrolment tokens are).

A database dump or a read-only SQL injection must not hand out working credentials: the
token is shown once, when it is issued (`manage.py api_token`), and only its SHA-256
digest is kept, with a short prefix so its owner can tell tokens apart.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.prefix}... ({self.user})"
