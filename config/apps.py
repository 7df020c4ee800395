from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """`config` as an app for what wiring the house records: the beat tasks' last runs
    (config/beatruns.py), which every node's readiness and metrics read; and, once Django is
    set up, the leaner reads of its thread state and settings every request makes
    (config/threadstate.py, config/fastsettings.py)."""

    name = "config"
    label = "config"
    verbose_name = "Operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from config import (
            beatruns,  # noqa: F401  (connects the Celery signals it records from)
            checks,  # noqa: F401  (registers the deploy checks)
        )
        from config.fastsettings import read_settings_without_the_proxy_check
        from config.threadstate import keep_thread_state_in_thread_locals

        keep_thread_state_in_thread_locals()
        read_settings_without_the_proxy_check()
