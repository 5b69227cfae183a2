from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from fleet.signals import node_revoking

        node_revoking.connect(_fail_open_runs)


def _fail_open_runs(node: object, **_: object) -> None:
    from jobs.services.lifecycle import fail_open_runs

    fail_open_runs(node, "node revoked")  # type: ignore[arg-type]
