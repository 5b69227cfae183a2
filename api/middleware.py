"""Request guards: oversized bodies get 413 before anything reads them; a database that
went away is a 503 with a message on every page, not a traceback."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse


class BodySizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.RESULT_MAX_BYTES:
            if request.path.startswith("/api/v1/node/"):
                from jobs.services.observability import count_rejection

                count_rejection("too_large")
            return JsonResponse(
                {"detail": f"request body of {length} bytes is over the "
                           f"{settings.RESULT_MAX_BYTES}-byte limit"}, status=413)
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """The API's exception handler covers DRF views; this covers the web pages."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, (OperationalError, InterfaceError)):
            return JsonResponse({"detail": "the database is unavailable; retry in a few seconds"},
                                status=503, headers={"Retry-After": "5"})
        return None
