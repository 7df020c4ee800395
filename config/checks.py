"""`manage.py check --deploy` warnings about the wiring's own settings (docs/deployment.md)."""

from django.conf import settings
from django.core.checks import Tags, register
from django.core.checks import Warning as CheckWarning


@register(Tags.security, deploy=True)
def metrics_token_check(app_configs, **kwargs) -> list[CheckWarning]:
    """/metrics says how many payments, declines and refunds each mode had, and which
    merchants' webhooks fail: open to whoever reaches it unless a token is set (issue 38)."""
    if settings.METRICS_TOKEN:
        return []
    return [
        CheckWarning(
            "METRICS_TOKEN is not set, so /metrics answers anyone who reaches it, over plain "
            "HTTP too, with the node's payment, decline and webhook counts.",
            hint="Set METRICS_TOKEN and give the scraper `Authorization: Bearer <token>` "
            '(docs/deployment.md "Behind a proxy"), even where a proxy keeps /metrics private.',
            id="config.W001",
        )
    ]


@register(Tags.security, deploy=True)
def allowed_hosts_wildcard_check(app_configs, **kwargs) -> list[CheckWarning]:
    # Django's own deploy checks pass `*`: any Host header is then accepted, so requests for
    # names this service is not (cache poisoning, a password-reset link built from the Host)
    # reach it.
    if "*" not in settings.ALLOWED_HOSTS:
        return []
    return [
        CheckWarning(
            "ALLOWED_HOSTS contains '*': every Host header is accepted.",
            hint="List the public host names (e.g. ALLOWED_HOSTS=pay.example.com) and, if a "
            "proxy rewrites Host, its internal name (docs/deployment.md).",
            id="config.W002",
        )
    ]
