"""`manage.py check --deploy` warnings about the API-key settings."""

from django.conf import settings
from django.core.checks import Tags, register
from django.core.checks import Warning as CheckWarning

MIN_PEPPER_LENGTH = 32  # characters; token_urlsafe(32) gives 43


@register(Tags.security, deploy=True)
def pepper_length_check(app_configs, **kwargs) -> list[CheckWarning]:
    if len(settings.API_KEY_PEPPER) >= MIN_PEPPER_LENGTH:
        return []
    return [
        CheckWarning(
            f"API_KEY_PEPPER has {len(settings.API_KEY_PEPPER)} characters: the pepper is "
            "what keeps a leaked copy of the database's API-key hashes from being checked "
            "offline, and a short one can be guessed.",
            hint=f"Set API_KEY_PEPPER to at least {MIN_PEPPER_LENGTH} random characters, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))', rotating as "
            'docs/api-conventions.md "Keys" says (API_KEY_OLD_PEPPERS).',
            id="accounts.W001",
        )
    ]
