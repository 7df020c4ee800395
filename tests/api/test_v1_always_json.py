"""Every answer under /v1/ is the JSON envelope, in DEBUG too and for every method: unknown and
reserved paths are 404 `unrecognized_request_url`, never Django's HTML debug 404 or CSRF page
(docs/request-safety.md "Browser pages and CSRF")."""

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

METHODS = ("get", "post", "put", "patch", "delete")
PATHS = ("/v1/no-such-thing", "/v1/customers", "/v1/refunds", "/v1/payouts/po_1", "/v1/", "/v1")


def csrf_enforcing_client(secret: str | None = None) -> Client:
    """What curl or a merchant's server is to Django: no CSRF cookie, no token (the test client
    skips the CSRF check unless told not to)."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    return Client(enforce_csrf_checks=True, headers=headers)


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", PATHS)
def test_unknown_and_reserved_paths_are_a_404_envelope(new_merchant, settings, debug, method, path):
    settings.DEBUG = debug
    client = csrf_enforcing_client(new_merchant.keys["test"]["secret"].secret)
    body = {} if method == "get" else {"data": '{"amount": 1}', "content_type": "application/json"}
    response = getattr(client, method)(path, **body)
    assert response.status_code == 404, response.content[:200]
    assert response["Content-Type"] == "application/json; charset=utf-8"
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("not_found_error", "unrecognized_request_url")
    assert error["request_id"] == response["X-Request-Id"]


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
def test_a_keyless_post_to_an_unknown_path_is_a_404_envelope(db, settings, debug):
    settings.DEBUG = debug
    response = csrf_enforcing_client().post("/v1/customers", {"name": "x"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "unrecognized_request_url"


def v1_patterns(patterns, prefix=""):
    """(route, view) of every URL pattern under v1/, resolvers included."""
    for pattern in patterns:
        route = prefix + str(pattern.pattern).lstrip("^")
        if isinstance(pattern, URLResolver):
            yield from v1_patterns(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and route.startswith("v1"):
            yield route, pattern.callback


def test_every_v1_view_is_exempt_from_csrf():
    """The API authenticates with bearer keys, never cookies: a cross-site form cannot act with
    a merchant's key, so CSRF protects nothing there and only turned 404s into HTML 403s."""
    views = list(v1_patterns(get_resolver().url_patterns))
    assert len(views) > 10
    assert [route for route, view in views if not getattr(view, "csrf_exempt", False)] == []


def test_the_admin_still_enforces_csrf(db):
    response = Client(enforce_csrf_checks=True).post(
        "/admin/login/", {"username": "support", "password": "a long and unlikely passphrase"}
    )
    assert response.status_code == 403
    assert b"CSRF" in response.content


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
@pytest.mark.parametrize("path", ["/v1/payments", "/v1/no-such-thing"])
def test_a_host_outside_allowed_hosts_is_a_400_envelope(new_merchant, settings, debug, path):
    settings.DEBUG = debug
    client = csrf_enforcing_client(new_merchant.keys["test"]["secret"].secret)
    response = client.get(path, headers={"Host": "attacker.example"})
    assert response.status_code == 400, response.content[:200]
    assert response["Content-Type"] == "application/json; charset=utf-8"
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "validation_error",
        "invalid_host",
        "Host",
    )
    assert error["request_id"] == response["X-Request-Id"]


def test_a_host_outside_allowed_hosts_outside_v1_is_left_to_django(db):
    response = Client().get("/admin/", headers={"Host": "attacker.example"})
    assert response.status_code == 400
    assert not response["Content-Type"].startswith("application/json")
