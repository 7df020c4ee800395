from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """`config` as an app only for what wiring the house records: the beat tasks' last runs
    (config/beatruns.py), which every node's readiness and metrics read."""

    name = "config"
    label = "config"
    verbose_name = "Operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from config import (
            beatruns,  # noqa: F401  (connects the Celery signals it records from)
            checks,  # noqa: F401  (registers the deploy checks)
        )
        from config.threadstate import keep_thread_state_in_thread_locals

        keep_thread_state_in_thread_locals()
