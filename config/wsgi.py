import gc
import io
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from config import draining

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def _read_at_most(stream, size: int) -> bytes:
    parts, left = [], size
    while left > 0:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def reading_chunked_bodies(django_application):
    """Django reads a request without Content-Length as having no body, so one sent with
    `Transfer-Encoding: chunked` reached the views empty (issue 12). Such a body is read here,
    up to one byte past DATA_UPLOAD_MAX_MEMORY_SIZE and never more, and handed on with its
    length: within the limit it is read like any other, past it the length tells Django's
    own check to refuse it (400 `request_too_large`, docs/request-safety.md)."""

    def application(environ, start_response):
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not environ.get("CONTENT_LENGTH"):
            body = _read_at_most(environ["wsgi.input"], settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
            environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        return django_application(environ, start_response)

    return application


application = reading_chunked_bodies(get_wsgi_application())
# What loading made (~150,000 objects: modules, classes, settings, URL patterns) lives as long as
# the process: kept out of the collector's full collections, which scanned it all again every
# ~1,500 creates (86 ms each: 1.7% of a create's CPU; docs/payments.md "Counted in
# instructions").
gc.freeze()
# A worker that gets SIGTERM stops serving and answers /readyz 503 (config/draining.py).
draining.watch_for_shutdown()
