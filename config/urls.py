from collections.abc import Callable

from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.contrib.auth.views import (
    LoginView,
    LogoutView,
    PasswordChangeDoneView,
    PasswordChangeView,
)
from django.http import HttpResponse
from django.urls import URLPattern, include, path
from drf_spectacular.views import SpectacularAPIView

from api import login_throttle
from api.views.metrics import metrics_view
from web.pages import board, certification, compare, estimate, job, node, provider, site


def pages(named: bool) -> list[URLPattern]:
    """The web pages. Under /zh-hans/ and /en/ (named: `{% url %}` links stay in the page's
    language) and, for links people already have, unprefixed in the browser's language."""
    def page(route: str, view: Callable[..., HttpResponse], name: str) -> URLPattern:
        return path(route, view, name=name) if named else path(route, view)
    return [
        page("", board.leaderboard_page, "leaderboard-page"),
        page("compare/", compare.compare_page, "compare-page"),
        page("estimate/", estimate.estimate_page, "estimate-page"),
        page("nodes/<int:node_id>/", node.node_page, "node-page"),
        page("providers/<int:provider_id>/", provider.provider_page, "provider-page"),
        page("jobs/", job.jobs_page, "jobs-page"),
        page("jobs/<int:job_id>/", job.job_page, "job-page"),
        page("sites/", site.sites_page, "sites-page"),
        page("sites/<int:site_id>/", site.site_page, "site-page"),
        page("certification/", certification.certification_page, "certification-page"),
    ]


urlpatterns = [
    *pages(named=False),
    path("i18n/", include("django.conf.urls.i18n")),
    # Sign-ins are throttled (api/login_throttle.py); these routes come before the ones
    # they stand in for.
    path("accounts/login/", login_throttle.throttled(LoginView.as_view())),
    path("admin/login/", login_throttle.throttled(admin.site.login)),
    path("accounts/logout/", LogoutView.as_view()),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    # Sign-in, sign-out and a password change in the page's language too
    # (/zh-hans/accounts/login/), named so that the header's links stay in it. A sign-in ends
    # on the buyer's jobs, a sign-out on the board (settings: LOGIN_REDIRECT_URL).
    *i18n_patterns(*pages(named=True),
                   path("accounts/login/", login_throttle.throttled(LoginView.as_view()),
                        name="login"),
                   path("accounts/logout/", LogoutView.as_view(), name="logout"),
                   path("accounts/password/",
                        login_throttle.throttled(
                            PasswordChangeView.as_view(template_name="web/password_change.html")),
                        name="password_change"),
                   path("accounts/password/done/",
                        PasswordChangeDoneView.as_view(
                            template_name="web/password_change_done.html"),
                        name="password_change_done")),
]
