from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from accounts.models import ApiKey, Merchant
        from api.revision import bump_on_change

        # Any saved or deleted key or merchant drops every process's cached lookups.
        for model in (ApiKey, Merchant):
            post_save.connect(bump_on_change, sender=model)
            post_delete.connect(bump_on_change, sender=model)
