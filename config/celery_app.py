"""The platform's Celery app (trusted side: dispatch and sweeper).

Named celery_app so it cannot shadow the celery package. GPU hosts never load this: their
worker app is built in workers/host/node_app.py from the credentials they got at enrolment.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["jobs", "certification", "hooks"])
