from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_load_profiles, sender=self)


def _load_profiles(**_: object) -> None:
    # The published certification profiles are data in the repo: keep the database in step.
    from leaderboard.services.certification import load_profiles

    load_profiles()
