"""`manage.py check --deploy` warnings about webhook settings."""

from django.core.checks import Tags, register
from django.core.checks import Warning as CheckWarning

from webhooks.crypto import keys_derived_from_secret_key


@register(Tags.security, deploy=True)
def encryption_keys_check(app_configs, **kwargs) -> list[CheckWarning]:
    if not keys_derived_from_secret_key():
        return []
    return [
        CheckWarning(
            "WEBHOOK_ENCRYPTION_KEYS is not set, so webhook signing secrets are encrypted with "
            "a key derived from DJANGO_SECRET_KEY: changing that key makes every stored "
            "secret unreadable, and each delivery then fails until the endpoint's secret is "
            "rolled.",
            hint='Set WEBHOOK_ENCRYPTION_KEYS to a Fernet key (docs/webhooks.md "Endpoints"); '
            "keep the derived key after it, "
            "webhooks.crypto.derived_key(DJANGO_SECRET_KEY), until every secret is rolled.",
            id="webhooks.W001",
        )
    ]
