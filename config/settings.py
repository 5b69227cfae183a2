"""Platform settings, read from the environment.

Defaults let a fresh checkout run the demo (local PostgreSQL and Redis, DEBUG on); with
``BENCH_ENV=production`` every secret must be given and unsafe modes refuse to start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str | None = None) -> str | None:
    """A setting from NAME, or from the file named by NAME_FILE (container secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        return Path(file_name).read_text().strip()
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


N = TypeVar("N", int, float)


def envnumber(name: str, default: N, parse: Callable[[str], N], what: str) -> N:
    value = env(name)
    if value is None or value == "":
        return default
    try:
        return parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}, got {value!r}") from None


def envint(name: str, default: int) -> int:
    return envnumber(name, default, int, "an integer")


def envfloat(name: str, default: float) -> float:
    return envnumber(name, default, float, "a number")


PRODUCTION = env("BENCH_ENV", "development") == "production"


def required_in_production(name: str, dev_default: str) -> str:
    value = env(name)
    if value:
        return value
    if PRODUCTION:
        raise ImproperlyConfigured(f"{name} must be set when BENCH_ENV=production")
    return dev_default


SECRET_KEY = required_in_production("SECRET_KEY", "dev-only-insecure-secret-key-change-me")
DEBUG = envbool("DEBUG", not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG must be off when BENCH_ENV=production (tracebacks and "
                               "settings would be shown to anyone)")
ALLOWED_HOSTS = (env("ALLOWED_HOSTS") or ("*" if not PRODUCTION else "")).split(",")
if PRODUCTION and (ALLOWED_HOSTS == [""] or "*" in ALLOWED_HOSTS):
    raise ImproperlyConfigured("set ALLOWED_HOSTS to the platform's host names (no '*') when "
                               "BENCH_ENV=production")
if PRODUCTION:
    # Behind the TLS proxy (platform/proxy/nginx.conf), which sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_CONTENT_TYPE_NOSNIFF = True
# /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, it is open in
# development and closed (403) in production.
METRICS_TOKEN = env("METRICS_TOKEN", "") or ""
# A run may keep a reference endpoint's iperf3 turn this long while other nodes wait
# (jobs.services.reference_slots); the default profile's tests take about two minutes.
REFERENCE_MAX_HOLD_SECONDS = int(env("REFERENCE_MAX_HOLD_SECONDS", "600") or 600)
# A network result is judged once the reference's agent has handed in its servers' records
# of the run's turns (it posts every REFERENCE_AGENT_INTERVAL_S, 0.5 s by default): waited for
# this long at most; an agent silent for longer than the second figure is down, not waited for.
REFERENCE_RECORDS_WAIT_S = envfloat("REFERENCE_RECORDS_WAIT_S", 5.0)
REFERENCE_AGENT_SILENT_S = envfloat("REFERENCE_AGENT_SILENT_S", 30.0)
# A reference's records are read only while the run that presents them is judged, so the
# sweeper deletes them after this long: far longer than any run (the full suite at its
# largest parameters is under 3 hours), and the table stays a few days of tests in size.
REFERENCE_RECORDS_KEEP_HOURS = envfloat("REFERENCE_RECORDS_KEEP_HOURS", 48.0)
# The samples table by month (jobs/services/partitions.py). The sweeper makes this month's
# partition and this many more ahead, so no insert waits on DDL and a stopped sweeper has
# two months before rows fall into the default partition (where nothing is lost either).
SAMPLES_PARTITIONS_AHEAD = envint("SAMPLES_PARTITIONS_AHEAD", 2)
# Raw samples are kept whole this many months after their month ends: a year of stability
# and history with every curve and condition, and a month more for the year's last re-test.
# Then each figure is kept for ever (value, spread, count, evidence) with only these keys of
# its metadata, the ones an old figure's history and job pages read: the link's peer, the
# interval its repetitions reached and the precision asked, the device it ran on, and the
# host's own figure beside the platform's (evidence.py's host_value).
SAMPLES_RAW_KEEP_MONTHS = envint("SAMPLES_RAW_KEEP_MONTHS", 13)
SAMPLES_ROLLED_UP_KEEPS = ("peer", "interval", "precision", "noisy", "device", "host_value")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "django_prometheus",
    "fleet",
    "hooks",
    "jobs",
    "board",
    "certification",
    "api",
    "web",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "api.middleware.BodySizeLimitMiddleware",
    "api.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# PostgreSQL is the only database: the claim and the submission are PostgreSQL statements
# (jobs/services/). The demo and the lab make their own database (lab/platform_stack.py).
DATABASE_URL = env("DATABASE_URL")
if not DATABASE_URL and PRODUCTION:
    raise ImproperlyConfigured("DATABASE_URL must be set when BENCH_ENV=production")
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL or "postgres://postgres@127.0.0.1:5432/bench",
        conn_max_age=envint("DB_CONN_MAX_AGE", 60),
        # A kept connection is checked before use, so service resumes by itself after
        # the database comes back.
        conn_health_checks=True,
    )
}
# No JIT compilation: the platform's queries are short reads, and PostgreSQL's cost estimate
# over the samples table's months passes jit_above_cost, so a 50 ms read of a board page's
# re-test figures paid 110 ms of compiling first (285 -> 46 ms at 10 million samples, #35).
_options = DATABASES["default"].setdefault("OPTIONS", {})
_options["options"] = f"{_options.get('options', '')} -c jit=off".strip()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en"
# A sign-in without a page to go back to ends on the buyer's own jobs, every sign-out on the
# board, both in the page's language (Django's default, /accounts/profile/, is no page here:
# it was a 404).
LOGIN_REDIRECT_URL = "jobs-page"
LOGOUT_REDIRECT_URL = "leaderboard-page"
# Chosen by the browser's Accept-Language, or the switch on every page.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "Asia/Shanghai"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.auth.UserTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.IsPlatformUser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # Per IP for enrolment (its token is the only credential) and sign-in (also per account
    # name: api/login_throttle.py), per user for the rest;
    # THROTTLE_RATES="submission=600/minute,enrolment=20/hour" overrides. 429 + Retry-After.
    "DEFAULT_THROTTLE_RATES": {
        "enrolment": "20/hour", "enrolment-token": "60/hour", "submission": "600/minute",
        "estimate": "120/minute", "webhook": "30/hour", "webhook-ping": "20/hour",
        "login": "10/minute", "login-account": "30/hour",
        # A node's test server asks once per buyer's token it is shown (the CLI probes a
        # node a few times a minute at most); made-up tokens beyond this get 429.
        "probe-claim": "30/minute",
        **{k.strip(): v.strip() for k, _, v in (item.partition("=") for item in
           (env("THROTTLE_RATES") or "").split(",") if item.strip())},
    },
}
# Throttle counters live in the cache: per web process unless CACHE_URL names a Redis.
CACHES = ({"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                       "LOCATION": env("CACHE_URL")}} if env("CACHE_URL") else
          {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}})
SPECTACULAR_SETTINGS = {
    "TITLE": "GPU node benchmarking API",
    "DESCRIPTION": "Benchmark rented GPU servers' network, storage and training paths; "
    "compare providers and regions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Two "evidence" fields: the board's class a query asks for, and a figure's rung.
    "ENUM_NAME_OVERRIDES": {
        "EvidenceClassEnum": ["verified", "measured", "any"],
        "EvidenceRungEnum": ["platform-verified", "buyer-measured", "host-reported"],
        "StabilityVerdictEnum": ["stable", "varies-by-hour", "varies", "not-enough-data"],
    },
}

# --- Broker -----------------------------------------------------------------------------
# REDIS_URL is the platform's own (admin) connection. Nodes get their own Redis user, made
# at enrolment, unless NODE_BROKER_ACL is off (a demo Redis without passwords).
REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0") or ""
# The broker address as a GPU host must dial it (the platform may reach Redis privately).
NODE_BROKER_URL = env("NODE_BROKER_URL") or REDIS_URL


def envmap(name: str) -> dict[str, str]:
    """``NAME=a=URL,b=URL``: named URLs, in order (the first is where new names go first)."""
    value = env(name) or ""
    named: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in value.split(","))):
        key, sep, url = entry.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,31}", key) or "://" not in url:
            raise ImproperlyConfigured(
                f"{name}: {entry[:60]!r} is not NAME=redis://host:port/db (NAME: up to 32 of "
                "a-z, 0-9 and -), e.g. {name}=a=redis://default:PW@10.0.0.5:6379/0")
        if key in named:
            raise ImproperlyConfigured(f"{name}: {key!r} is named twice")
        named[key] = url
    return named


# More than one Redis for the nodes' queues (a Redis serves 10,000 clients at most, and a
# host holds several): NODE_BROKERS=a=ADMIN_URL,b=ADMIN_URL, each node assigned one at
# enrolment for good. NODE_BROKER_PUBLIC_URLS=a=URL,... is how hosts dial each (default: as
# the platform does). Unset: one broker, "default", at REDIS_URL / NODE_BROKER_URL. Nodes
# enrolled before a second broker was added are on "default": keep that name when adding.
NODE_BROKERS = envmap("NODE_BROKERS")
NODE_BROKER_PUBLIC_URLS = envmap("NODE_BROKER_PUBLIC_URLS")
if set(NODE_BROKER_PUBLIC_URLS) - set(NODE_BROKERS):
    raise ImproperlyConfigured(
        f"NODE_BROKER_PUBLIC_URLS names {sorted(set(NODE_BROKER_PUBLIC_URLS) - set(NODE_BROKERS))},"
        " which NODE_BROKERS does not list")
_redis_has_password = bool(urlsplit(REDIS_URL).password)
NODE_BROKER_ACL = envbool("NODE_BROKER_ACL", _redis_has_password)
if PRODUCTION and not NODE_BROKER_ACL:
    raise ImproperlyConfigured(
        "NODE_BROKER_ACL is off: every node could read every queue. Give Redis a password "
        "(REDIS_URL=redis://default:PASSWORD@host:6379/0) and set NODE_BROKER_ACL=true."
    )
# Per-node kombu transport options. visibility_timeout must exceed the longest probe's
# hard limit, or a long probe is delivered twice; leases in PostgreSQL are the final word.
NODE_VISIBILITY_TIMEOUT = envint("NODE_VISIBILITY_TIMEOUT", 3600)
# How often each idle worker scans its unacked runs for ones older than the visibility
# timeout: three commands per scan and host, so not every few seconds (10,000 hosts).
NODE_UNACKED_RESTORE_INTERVAL = envint("NODE_UNACKED_RESTORE_INTERVAL", 60)
NODE_UNACKED_MUTEX_EXPIRE = envint("NODE_UNACKED_MUTEX_EXPIRE", 30)
NODE_QUEUE = "runs"
# A node's share of the broker (noeviction: one host filling it stops every publish). Over
# either, the sweeper switches its Redis user off, frees its keys and fails its open runs.
NODE_BROKER_MAX_BYTES = envint("NODE_BROKER_MAX_BYTES", 16 * 2**20)
NODE_BROKER_MAX_CONNECTIONS = envint("NODE_BROKER_MAX_CONNECTIONS", 16)
# Redis ACLs cannot cap one node's memory: bound what we queue for it instead.
NODE_MAX_QUEUED_RUNS = envint("NODE_MAX_QUEUED_RUNS", 200)
# Loopback node addresses: only where every node is on one machine (the lab, the tests).
ALLOW_LOOPBACK_ADDRESSES = envbool("ALLOW_LOOPBACK_ADDRESSES", not PRODUCTION)
# One buyer cannot fill another's path to a node: it may hold at most half a node's queue.
USER_MAX_QUEUED_RUNS_PER_NODE = envint("USER_MAX_QUEUED_RUNS_PER_NODE", NODE_MAX_QUEUED_RUNS // 2)

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = "platform"
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
SWEEP_INTERVAL_SECONDS = envint("SWEEP_INTERVAL_SECONDS", 10)
CELERY_BEAT_SCHEDULE = {
    "sweep-runs": {"task": "jobs.sweep", "schedule": float(SWEEP_INTERVAL_SECONDS)},
}

# --- Jobs -------------------------------------------------------------------------------
# A claimed run's lease; the node renews it by heartbeat while the probe runs.
RUN_LEASE_SECONDS = envint("RUN_LEASE_SECONDS", 60)
RUN_MAX_ATTEMPTS = envint("RUN_MAX_ATTEMPTS", 3)
# A queued run its node has not started in this long fails, with the reason.
RUN_QUEUE_TIMEOUT_SECONDS = envint("RUN_QUEUE_TIMEOUT_SECONDS", 24 * 3600)
# An online node that has left its queued runs untouched this long lost their messages:
# the sweeper publishes them again.
RUN_REDISPATCH_SECONDS = envint("RUN_REDISPATCH_SECONDS", 120)
# A job whose last run is in but whose job_finished has not run this long after (its on-commit
# hook runs within milliseconds of the commit) lost it with its process: the sweeper sends it.
JOB_FINISHED_LOST_AFTER_SECONDS = envint("JOB_FINISHED_LOST_AFTER_SECONDS", 60)
# Node workers heartbeat this often; a node missing NODE_OFFLINE_AFTER seconds is offline.
NODE_HEARTBEAT_SECONDS = envint("NODE_HEARTBEAT_SECONDS", 30)
NODE_OFFLINE_AFTER_SECONDS = envint("NODE_OFFLINE_AFTER_SECONDS", 90)
ENROLMENT_TOKEN_TTL_HOURS = envint("ENROLMENT_TOKEN_TTL_HOURS", 24)
# Buyers' trials (fleet.services.trials): how long one may last (a week: the seeds' "rent it
# for a short trial" is days, not months) and how many tokens a buyer may ask for a day.
TRIAL_MAX_HOURS = envint("TRIAL_MAX_HOURS", 168)
TRIAL_DEFAULT_HOURS = envint("TRIAL_DEFAULT_HOURS", 24)
TRIAL_TOKENS_PER_DAY = envint("TRIAL_TOKENS_PER_DAY", 5)
RESULT_MAX_BYTES = envint("RESULT_MAX_BYTES", 1_000_000)
DATA_UPLOAD_MAX_MEMORY_SIZE = RESULT_MAX_BYTES
# The URL nodes use to reach this API (given to them at enrolment).
PUBLIC_API_URL = env("PUBLIC_API_URL", "http://127.0.0.1:8000") or ""

# --- Leaderboard ------------------------------------------------------------------------
LEADERBOARD_STALE_DAYS = envint("LEADERBOARD_STALE_DAYS", 30)
# A board value is the median of a node's last LEADERBOARD_RUNS ranked runs within the window.
LEADERBOARD_RUNS = envint("LEADERBOARD_RUNS", 5)
LEADERBOARD_WINDOW_DAYS = envint("LEADERBOARD_WINDOW_DAYS", 30)
# A board page (the API's JSON) is served from memory until the board changes (a result,
# a node, a re-test, a pause, a certificate: board/page_cache.py), or for at most this many
# seconds: what time alone changes (a node going offline, a figure going stale) shows within
# it. 0: every request computes its page.
BOARD_PAGE_SECONDS = envint("BOARD_PAGE_SECONDS", 15)
# Nodes per page of the HTML board, as the API's page: 200 rows spent two fifths of a
# 10,000-node board's 234 ms rendering them (#35); the rest are a "next" link away.
BOARD_HTML_ROWS = envint("BOARD_HTML_ROWS", 100)
# Weights of the training readiness score's parts (board/score.py), e.g.
# SCORE_WEIGHTS="bandwidth=3,latency=2,gpu_utilisation=0".
SCORE_WEIGHTS = {
    k.strip(): float(v) for k, _, v in
    (item.partition("=") for item in (env("SCORE_WEIGHTS") or "").split(",") if item.strip())
}

# Scheduled re-tests (jobs/services/retests.py): how many per node per local day, at random
# hours; the suite and profile they run; how long one waits for a buyer's job to end.
RETEST_PER_DAY = envint("RETEST_PER_DAY", 4)
RETEST_TICK_SECONDS = envint("RETEST_TICK_SECONDS", 60)
# A re-test is a buyer's most common request (the full suite, quick profile), so that the
# host cannot tell it from one; the "retest" suite and profile remain for old records.
RETEST_SUITE = env("RETEST_SUITE", "full") or "full"
RETEST_PROFILE = env("RETEST_PROFILE", "quick") or "quick"
RETEST_DEFER_SECONDS = envint("RETEST_DEFER_SECONDS", 1200)
RETEST_MAX_DEFERRALS = envint("RETEST_MAX_DEFERRALS", 6)
# A re-test due longer ago than this when the scheduler gets to it is skipped, not run.
RETEST_STALE_SECONDS = envint("RETEST_STALE_SECONDS", 3600)
# A re-test that failed while its reference was down is planned again this many seconds
# later (drawn at random between the two): not at once, the reference may still be down.
RETEST_AGAIN_AFTER_SECONDS = (1800, 7200)
# Longest pause a provider may ask for at once, and the window stability is judged over.
RETEST_MAX_PAUSE_HOURS = envint("RETEST_MAX_PAUSE_HOURS", 72)
STABILITY_WINDOW_DAYS = envint("STABILITY_WINDOW_DAYS", 7)
# A node is "new" on the board until its host has a week of the platform's re-tests.
NEW_NODE_DAYS = envint("NEW_NODE_DAYS", 7)
CELERY_BEAT_SCHEDULE["retests"] = {"task": "jobs.retests", "schedule": float(RETEST_TICK_SECONDS)}

# --- Webhooks (hooks/) -------------------------------------------------------------------
# The platform dials a webhook's URL from inside its own network: loopback and private
# targets only where every receiver is on the platform's machine or network (development,
# the tests), never in production (hooks/services/targets.py).
WEBHOOK_ALLOW_PRIVATE_TARGETS = envbool("WEBHOOK_ALLOW_PRIVATE_TARGETS", not PRODUCTION)
# A delivery's body tells a buyer's jobs and nodes: not in clear text over the internet.
WEBHOOK_REQUIRE_HTTPS = envbool("WEBHOOK_REQUIRE_HTTPS", PRODUCTION)
# Each webhook costs a request per public event (every certificate issued or revoked).
WEBHOOK_MAX_PER_USER = envint("WEBHOOK_MAX_PER_USER", 10)
# A buyer's delivery log keeps a month: enough to look into last week's missed event.
WEBHOOK_LOG_KEEP_DAYS = envint("WEBHOOK_LOG_KEEP_DAYS", 30)
# Due retries, and deliveries a lost message or a dead worker left (hooks.tasks.sweep).
CELERY_BEAT_SCHEDULE["webhooks"] = {"task": "hooks.sweep", "schedule": float(SWEEP_INTERVAL_SECONDS)}

# --- Certification ----------------------------------------------------------------------
CERT_SIGNING_KEY_FILE = env("CERT_SIGNING_KEY_FILE") or str(BASE_DIR / "var" / "cert-signing-key.pem")
CERT_VALID_DAYS = envint("CERT_VALID_DAYS", 30)
CERT_RENEW_DAYS_BEFORE = envint("CERT_RENEW_DAYS_BEFORE", 5)
# The job profile of certification runs ("default": the field's usual durations).
# A provider's certification requests per node a day (the platform's renewals not counted).
CERTIFICATION_REQUESTS_PER_DAY = envint("CERTIFICATION_REQUESTS_PER_DAY", 3)
CERTIFICATION_JOB_PROFILE = env("CERTIFICATION_JOB_PROFILE", "default") or "default"
CELERY_BEAT_SCHEDULE["renew-certificates"] = {"task": "certification.renew_certificates",
                                              "schedule": 3600.0}

# JSON lines in production (LOG_FORMAT=json), with job/run ids; plain text by default.
LOG_FORMAT = env("LOG_FORMAT", "json" if PRODUCTION else "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.logs.JsonFormatter"},
                   "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
}
