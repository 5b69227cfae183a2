from django.apps import AppConfig


class HooksConfig(AppConfig):
    name = "hooks"
    default_auto_field = "django.db.models.BigAutoField"
