from django.apps import AppConfig


class MinimalConfig(AppConfig):
    name = "bench.minimal"
    label = "minimal"
    default_auto_field = "django.db.models.BigAutoField"
