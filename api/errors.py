"""One error shape for every endpoint: ``{"detail": ..., "errors": {field: message}}``.

The domain's refusals (config.errors) get their HTTP status here and nowhere else. A
database that has gone away is a 503 with a message, never a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError
from rest_framework import status
from rest_framework.exceptions import NotAuthenticated, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from config import errors as domain

log = logging.getLogger(__name__)

STATUS: dict[type[domain.DomainError], int] = {
    domain.Invalid: status.HTTP_400_BAD_REQUEST,
    domain.Forbidden: status.HTTP_403_FORBIDDEN,
    domain.NotFound: status.HTTP_404_NOT_FOUND,
    domain.Conflict: status.HTTP_409_CONFLICT,
    domain.Unprocessable: status.HTTP_422_UNPROCESSABLE_ENTITY,
    domain.TooMany: status.HTTP_429_TOO_MANY_REQUESTS,
}


def status_of(exc: domain.DomainError) -> int:
    return next(code for kind, code in STATUS.items() if isinstance(exc, kind))


def domain_response(exc: domain.DomainError) -> Response:
    response = error(str(exc), status_of(exc), exc.errors, code=exc.code,
                     retry_after=exc.retry_after)
    if isinstance(exc, domain.TooMany) and exc.retry_after is not None:
        response["Retry-After"] = str(max(1, round(exc.retry_after)))
    return response


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, domain.DomainError):
        return domain_response(exc)
    if isinstance(exc, (OperationalError, InterfaceError)):
        log.error("database unavailable: %s", exc)
        return Response({"detail": "the database is unavailable; retry in a few seconds"},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"})
    if isinstance(exc, DatabaseError):
        log.exception("database error")
        return Response({"detail": "database error; nothing was changed"},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE)
    response = drf_handler(exc, context)
    if isinstance(exc, ValidationError) and response is not None:
        # DRF answers {"field": [...]}; docs/api.md promises one shape for every error.
        response.data = validation_body(response.data)
    if isinstance(exc, NotAuthenticated) and response is not None:
        response.data = {"detail": "authentication required: send 'Authorization: Token "
                                   "<your API token>' (nodes: 'Authorization: Node <key>')"}
    return response


def _first(message: Any) -> str:
    while isinstance(message, (list, dict)) and message:
        message = next(iter(message.values())) if isinstance(message, dict) else message[0]
    return str(message)


def validation_body(data: Any) -> dict[str, Any]:
    errors = data if isinstance(data, dict) else {"non_field_errors": data}
    summary = "; ".join(f"{field}: {_first(message)}" for field, message in errors.items())
    return {"detail": f"invalid request: {summary}"[:2000], "errors": errors}


def error(message: str, status_code: int, errors: dict[str, Any] | None = None,
          **extra: Any) -> Response:
    body: dict[str, Any] = {"detail": message}
    if errors:
        body["errors"] = errors
    body.update({k: v for k, v in extra.items() if v not in (None, "")})
    return Response(body, status=status_code)
