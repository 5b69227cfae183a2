from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobs.signals import run_stored

        run_stored.connect(_project)


def _project(run: object, samples: object, succeeded: bool, **_: object) -> None:
    # The board counts ranked runs only (published profiles, no overrides).
    if succeeded and getattr(run, "ranked", False):
        from leaderboard.services.latest import record_latest

        record_latest(run, samples)  # type: ignore[arg-type]
