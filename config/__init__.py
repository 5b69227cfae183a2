"""Django project: settings from the environment, URLs, the platform's Celery app."""
