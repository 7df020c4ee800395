from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from api.revision import bump_on_change
        from webhooks import checks  # noqa: F401  (registers the deploy checks)
        from webhooks.models import WebhookEndpoint

        # Any saved or deleted endpoint drops every process's cached endpoint lists.
        post_save.connect(bump_on_change, sender=WebhookEndpoint)
        post_delete.connect(bump_on_change, sender=WebhookEndpoint)
