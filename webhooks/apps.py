from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from webhooks import checks  # noqa: F401  (registers the deploy checks)
