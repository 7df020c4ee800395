from django.apps import AppConfig
from django.core.signals import request_finished, request_started


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "API conventions"

    def ready(self):
        from api import revision

        # The configuration revision is read once per request (api/revision.py).
        request_started.connect(revision.request_started)
        request_finished.connect(revision.request_finished)
