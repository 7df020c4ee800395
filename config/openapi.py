"""/openapi.json, /openapi.yaml and /docs/ (docs/openapi.md "Served"): public, so each must
cost nothing. The description depends only on the code, so each process generates it once, on
first use (0.2-0.4 s, under a lock so that a crowd of first requests waits for one build), and
then answers every request with the same bytes: no content negotiation (an `Accept` the
document does not match still gets it), an ETag and a Cache-Control so that a client or a proxy
asks again for nothing."""

import functools
import hashlib
import threading
from typing import NamedTuple

from django.http import HttpResponse
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.utils.cache import get_conditional_response
from django.views.decorators.http import require_safe
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.settings import spectacular_settings

# A client may keep a copy this long, then revalidates it with the ETag (a deploy changes it).
CACHE_CONTROL = "public, max-age=300"


class Document(NamedTuple):
    body: bytes
    content_type: str
    etag: str


def _document(body: bytes, content_type: str) -> Document:
    return Document(body, content_type, f'"{hashlib.sha256(body).hexdigest()[:32]}"')


_building = threading.Lock()


@functools.cache
def _schema() -> dict:
    # As `manage.py spectacular` generates it (make openapi): no request, public.
    generator = spectacular_settings.DEFAULT_GENERATOR_CLASS()
    return generator.get_schema(request=None, public=True)


@functools.cache
def _json() -> Document:
    return _document(OpenApiJsonRenderer().render(_schema()), "application/vnd.oai.openapi+json")


@functools.cache
def _yaml() -> Document:
    return _document(OpenApiYamlRenderer().render(_schema()), "application/vnd.oai.openapi")


@functools.cache
def _redoc() -> Document:
    # drf-spectacular's Redoc page, with its context (title, bundle, where the description is).
    page = render_to_string(
        "docs/redoc.html",
        {
            "title": spectacular_settings.TITLE,
            "redoc_standalone": static("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
            "schema_url": reverse("openapi-json"),
            "settings": None,
        },
    )
    return _document(page.encode(), "text/html; charset=utf-8")


def forget() -> None:
    """Drops what this process built (tests)."""
    for built in (_schema, _json, _yaml, _redoc):
        built.cache_clear()


def _served(build):
    @require_safe
    def view(request):
        with _building:
            document = build()
        answer = get_conditional_response(request, etag=document.etag)
        if answer is None:
            answer = HttpResponse(document.body, content_type=document.content_type)
        answer["ETag"], answer["Cache-Control"] = document.etag, CACHE_CONTROL
        return answer

    return view


openapi_json = _served(_json)
openapi_yaml = _served(_yaml)
redoc = _served(_redoc)
