"""Settings of the minimal baseline app (perf/minimal)."""

import os

import dj_database_url

SECRET_KEY = "bench-minimal-not-secret"  # noqa: S105 - a local benchmark baseline
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "rest_framework",
                  "perf.minimal"]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "perf.minimal.urls"
# The platform's connection policy: kept connections, checked before use.
DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60,
                                              conn_health_checks=True)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
REST_FRAMEWORK: dict[str, object] = {"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": [],
                  "UNAUTHENTICATED_USER": None}
CELERY_BROKER_URL = os.environ["REDIS_URL"]
