"""Secrets, hosts, and HTTPS behind the TLS-terminating proxy (docs/production.md,
docs/deployment.md)."""

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import DEBUG, env


def _required_unless_debug(name: str, dev_value: str) -> str:
    """Production refuses to start on a missing secret; DEBUG gets a dev-only value."""
    value = env.str(name, default="")
    if value:
        return value
    if DEBUG:
        return dev_value
    raise ImproperlyConfigured(
        f"{name} must be set when DEBUG is off (set DEBUG=true for local development only)."
    )


SECRET_KEY = _required_unless_debug("DJANGO_SECRET_KEY", "dev-only-secret-key-not-for-production")
# Rotation: previous keys, still accepted for what they signed (docs/production.md "Rotating").
SECRET_KEY_FALLBACKS = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])
API_KEY_PEPPER = _required_unless_debug("API_KEY_PEPPER", "dev-only-pepper-not-for-production")
# Pepper rotation: new keys are hashed with API_KEY_PEPPER under API_KEY_PEPPER_VERSION; keys
# hashed under an older pepper keep working while it is listed here as "version=value,...".
API_KEY_PEPPER_VERSION = env.int("API_KEY_PEPPER_VERSION", default=1)
API_KEY_OLD_PEPPERS = env.dict("API_KEY_OLD_PEPPERS", default={})

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
PORT = env.int("PORT", default=8000)
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")

# --- HTTPS and the TLS-terminating proxy in front (docs/deployment.md) -------------------------
_public = urlsplit(PUBLIC_BASE_URL)
if _public.scheme not in ("http", "https") or not _public.netloc:
    raise ImproperlyConfigured(
        "PUBLIC_BASE_URL must be an http(s) URL, e.g. https://pay.example.com"
    )
PUBLIC_HTTPS = _public.scheme == "https"
# Opt-in: the header the proxy sets to "https" (and never passes on from a client), e.g.
# X-Forwarded-Proto. Unset, every request counts as plain HTTP, whatever a client claims.
_proxy_header = env.str("SECURE_PROXY_SSL_HEADER", default="")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https") if _proxy_header else None
)
# The public origin is trusted whatever Host and scheme the proxy hands on (the challenge
# page's form POST carries it as Origin).
CSRF_TRUSTED_ORIGINS = [f"{_public.scheme}://{_public.netloc}"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = PUBLIC_HTTPS
# On by default only when Django can tell an HTTPS request: without the proxy header every
# request would be redirected, the redirected one too.
SECURE_SSL_REDIRECT = env.bool(
    "SECURE_SSL_REDIRECT", default=PUBLIC_HTTPS and SECURE_PROXY_SSL_HEADER is not None
)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if PUBLIC_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
