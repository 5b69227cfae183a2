"""Sign-in attempts are throttled, per client address and per account name.

The web sign-in (`/accounts/login/`), the admin's and the password change are Django views, outside DRF's
throttles; without a limit a password can be guessed as fast as the server answers. Per
address stops one client; per account name stops many addresses guessing one account.
Rates: THROTTLE_RATES' ``login`` and ``login-account`` (settings). 429 + Retry-After.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils.translation import gettext as _
from rest_framework.throttling import SimpleRateThrottle


class _LoginThrottle(SimpleRateThrottle):
    def ident(self, request: HttpRequest) -> str:
        raise NotImplementedError

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.ident(request)}


class PerAddress(_LoginThrottle):
    scope = "login"

    def ident(self, request: HttpRequest) -> str:
        return str(self.get_ident(cast(Any, request)))  # it reads only request.META


class PerAccount(_LoginThrottle):
    scope = "login-account"

    def ident(self, request: HttpRequest) -> str:
        # A sign-in names the account in its form; a password change is the signed-in one's
        # (its old password is what a stolen session would guess).
        name = request.POST.get("username") or request.user.get_username()
        return str(name)[:150].strip().lower()


def throttled(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """``view`` with its POSTs (the attempts) counted; GETs show the form as before."""

    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method == "POST":
            for throttle in (PerAddress(), PerAccount()):
                if not throttle.allow_request(cast(Any, request), cast(Any, None)):
                    wait = math.ceil(throttle.wait() or 1)
                    response = HttpResponse(
                        _("Too many sign-in attempts; try again in %(seconds)d s.")
                        % {"seconds": wait}, status=429, content_type="text/plain; charset=utf-8")
                    response["Retry-After"] = str(wait)
                    return response
        return view(request, *args, **kwargs)

    return wrapper
