"""A NUL byte in a path id or a query parameter, on every route under /v1/, gets a 4xx in the
envelope: PostgreSQL cannot even be sent one (issue 12, "Hostile inputs")."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.api.test_never_500 import assert_enveloped

QUERY_PARAMETERS = ["type", "resource", "status", "currency", "reference", "customer"] + [
    "limit",
    "starting_after",
    "ending_before",
    "created[gte]",
]


def routes(patterns=None, prefix=""):
    """(route text, view class) of every path under the service's URLconf."""
    for entry in patterns if patterns is not None else get_resolver("config.urls").url_patterns:
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern) and hasattr(entry.callback, "view_class"):
            yield prefix + str(entry.pattern), entry.callback.view_class


def served_methods(view_class) -> list[str]:
    return [
        method.upper()
        for method in ("get", "post", "delete")
        if hasattr(view_class, method) and method in view_class.http_method_names
    ]


def with_nul_ids(route: str) -> str:
    """The route with every `<str:...>` parameter given a NUL byte (percent-encoded)."""
    parts = ["%00" if part.startswith("<") else part for part in route.split("/")]
    return "/" + "/".join(parts)


API_ROUTES = [(route, view) for route, view in routes() if route.startswith("v1/")]
NUL_PATHS = [
    pytest.param(method, with_nul_ids(route), id=f"{method} {route}")
    for route, view in API_ROUTES
    if "<" in route
    for method in served_methods(view)
]
NUL_QUERIES = [
    pytest.param(f"/{route}?{name}=%00", id=f"{route}?{name}")
    for route, view in API_ROUTES
    if "<" not in route and "GET" in served_methods(view)
    for name in QUERY_PARAMETERS
]


def test_the_routes_were_found():
    assert len(NUL_PATHS) >= 10 and len(NUL_QUERIES) >= 20


@pytest.mark.parametrize("method, path", NUL_PATHS)
def test_nul_in_a_path_id_is_a_4xx(api, method, path):
    response = api.generic(method, path, b"{}" if method == "POST" else b"")
    assert 400 <= assert_enveloped(response) < 500


@pytest.mark.parametrize("path", NUL_QUERIES)
def test_nul_in_a_query_parameter_is_a_4xx_or_ignored(api, path):
    assert_enveloped(api.get(path))
