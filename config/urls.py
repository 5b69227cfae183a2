from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from api import login_throttle
from api.views.metrics import metrics_view
from leaderboard import views as web

urlpatterns = [
    path("", web.leaderboard_page, name="leaderboard-page"),
    path("nodes/<int:node_id>/", web.node_page, name="node-page"),
    path("providers/<int:provider_id>/", web.provider_page, name="provider-page"),
    path("jobs/<int:job_id>/", web.job_page, name="job-page"),
    path("certification/", web.certification_page, name="certification-page"),
    path("i18n/", include("django.conf.urls.i18n")),
    # Sign-ins are throttled (api/login_throttle.py); these routes come before the ones
    # they stand in for.
    path("accounts/login/", login_throttle.throttled(LoginView.as_view()), name="login"),
    path("admin/login/", login_throttle.throttled(admin.site.login)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
]
