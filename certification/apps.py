from django.apps import AppConfig


class CertificationConfig(AppConfig):
    name = "certification"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from fleet.signals import node_revoked
        from jobs.signals import hardware_changed, job_finished

        post_migrate.connect(_load_profiles, sender=self)
        node_revoked.connect(_revoke_certificates)
        hardware_changed.connect(_reopen_certification)
        job_finished.connect(_judge)


def _judge(job_id: int, requested_by: str, **_: object) -> None:
    # Only the platform requests certification jobs: other jobs cost no query here.
    from jobs.models import Run

    if requested_by == Run.RequestedBy.PLATFORM:
        from certification.services.issuing import on_job_finished

        on_job_finished(job_id)


def _revoke_certificates(node: object, reason: str, **_: object) -> None:
    from certification.services.issuing import revoke_node

    revoke_node(node, reason)  # type: ignore[arg-type]


def _reopen_certification(node: object, reason: str, **_: object) -> None:
    # A certificate vouches for the boards it measured: new boards need a new one.
    from certification.services.issuing import revoke_all

    revoke_all(node, f"re-opened: {reason}")  # type: ignore[arg-type]


def _load_profiles(**_: object) -> None:
    # The published certification profiles are data in the repo: keep the database in step.
    from certification.services.profiles import load_profiles

    load_profiles()
