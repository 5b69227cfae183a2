"""Refuse oversized bodies with 413 before anything reads them."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
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
            return JsonResponse(
                {"detail": f"request body of {length} bytes is over the "
                           f"{settings.RESULT_MAX_BYTES}-byte limit"}, status=413)
        return self.get_response(request)
