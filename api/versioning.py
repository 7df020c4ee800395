"""Date-versioned API (spec "Versioning"): the key pins a version, `Service-Version` overrides
it per request, and an unsupported value falls back to the key's version without failing."""

from django.conf import settings

VERSION_HEADER = "HTTP_SERVICE_VERSION"


def version_in_force(request, pinned: str) -> str:
    requested = request.META.get(VERSION_HEADER, "").strip()
    if requested in settings.SUPPORTED_API_VERSIONS:
        return requested
    return pinned if pinned in settings.SUPPORTED_API_VERSIONS else settings.API_VERSION
