from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from leaderboard import views as web

urlpatterns = [
    path("", web.leaderboard_page, name="leaderboard-page"),
    path("api/v1/", include("api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("admin/", admin.site.urls),
]
