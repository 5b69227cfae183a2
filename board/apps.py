from django.apps import AppConfig


class BoardConfig(AppConfig):
    name = "board"
    # The label the app had as "leaderboard": its tables (leaderboard_latestresult) and its
    # migration history keep that name, so a deployed database needs no renaming.
    label = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from board import page_cache
        from jobs.signals import job_finished, run_stored

        run_stored.connect(_project)
        job_finished.connect(_record_multi_node)
        page_cache.connect()


def _project(run: object, samples: object, succeeded: bool, **_: object) -> None:
    # The board counts ranked runs only (published profiles, no overrides).
    if succeeded and getattr(run, "ranked", False):
        from board.latest import record_latest

        record_latest(run, samples)  # type: ignore[arg-type]


def _record_multi_node(job_id: int, **_: object) -> None:
    # A multi-node job's links and cluster, once its last run is in (jobs sends this then:
    # after a run, a cancel, or the sweeper's queue timeout).
    from board.multi_node import record

    record(job_id, finished=True)
