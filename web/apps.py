from django.apps import AppConfig


class WebConfig(AppConfig):
    """The site's pages: the only app that reads board, certification and jobs together."""

    name = "web"
