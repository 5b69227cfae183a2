"""What a domain service raises when it refuses a request: the kind of refusal, never an HTTP
status. `api/errors.py` maps each kind to its status once, for every endpoint.

They live beside the settings because every app (fleet, jobs, board, certification)
raises them and none may import another app's exceptions against the dependency order.
"""

from __future__ import annotations


class DomainError(Exception):
    """A refusal with a message for the person who asked; ``field`` names the input at fault,
    ``code`` is a stable word a client may branch on, ``retry_after`` seconds when waiting
    helps."""

    default_field: str | None = None  # a subclass's usual culprit

    def __init__(self, message: str, *, field: str | None = None, code: str = "",
                 errors: dict[str, str] | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        field = field if field is not None else self.default_field
        self.field = field
        self.code = code
        self.errors = errors if errors is not None else ({field: message} if field else None)
        self.retry_after = retry_after


class Invalid(DomainError):
    """The request asks for what cannot be (an unknown suite, a bad address)."""


class Forbidden(DomainError):
    """Well-formed, but not this caller's to ask (another provider's nodes)."""


class NotFound(DomainError):
    """No such thing for this caller (another node's run reads the same as a missing one)."""


class Conflict(DomainError):
    """The state it acts on has moved on (a run leased by another attempt, a used token)."""


class Unprocessable(DomainError):
    """Understood and refused on its merits (a result that breaks a consistency rule)."""


class TooMany(DomainError):
    """Over a bound that protects everyone else (queued runs, a reference held too long)."""
