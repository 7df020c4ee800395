"""The admin can be served by a process of its own (issue 20 item 1, docs/back-office.md "Its
own process"): SERVE=api answers the API without the admin, SERVE=admin the admin alone, the
default both; the same code, another root URLconf."""

import pytest
import requests
from django.test import Client

from accounts.services import merchant_create
from tests.e2e.processes import web_server
from tests.test_settings import import_settings


@pytest.fixture
def serve(settings):
    def choose(urlconf: str):
        settings.ROOT_URLCONF = urlconf  # pytest-django clears the URL caches

    return choose


def test_api_only_has_no_admin(serve, api, client):
    serve("config.urls_api")
    assert api.get("/v1/payments").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    for path in ("/admin/", "/admin/login/"):
        response = client.get(path)
        assert response.status_code == 404 and response.json()["error"]["type"]
    assert client.post("/admin/login/", {"username": "a", "password": "b"}).status_code == 404
    home = client.get("/").content.decode()
    assert 'href="/admin/"' not in home and "process of its own" in home


def test_admin_only_has_no_api(serve, api, staff_client):
    serve("config.urls_admin")
    assert Client().get("/admin/login/").status_code == 200
    assert staff_client.get("/admin/payments/payment/").status_code == 200
    assert api.get("/v1/payments").status_code == 404
    assert Client().get("/openapi.json").status_code == 404


def test_the_default_serves_both(serve, api, staff_client):
    serve("config.urls")
    assert api.get("/v1/payments").status_code == 200
    assert staff_client.get("/admin/payments/payment/").status_code == 200


def urlconf_of(**env):
    return import_settings(
        code="import config.settings as s; print(s.ROOT_URLCONF)", DEBUG="true", **env
    )


@pytest.mark.parametrize(
    ("serve_value", "urlconf"),
    [("all", "config.urls"), ("api", "config.urls_api"), ("admin", "config.urls_admin")],
)
def test_serve_chooses_the_root_urlconf(serve_value, urlconf):
    result = urlconf_of(SERVE=serve_value)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == urlconf


def test_an_unknown_serve_value_refuses_to_start():
    result = urlconf_of(SERVE="everything")
    assert result.returncode != 0 and "SERVE must be one of" in result.stderr


@pytest.mark.e2e
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_real_processes_one_api_one_admin():
    secret = merchant_create(name="Split", email="split@example.test").keys["test"]["secret"]
    bearer = {"Authorization": f"Bearer {secret.secret}"}
    with web_server(SERVE="api") as api_origin, web_server(SERVE="admin") as admin_origin:
        assert requests.get(f"{api_origin}/v1/payments", headers=bearer, timeout=10).ok
        assert requests.get(f"{api_origin}/admin/login/", timeout=10).status_code == 404
        assert requests.get(f"{admin_origin}/admin/login/", timeout=10).status_code == 200
        assert (
            requests.get(f"{admin_origin}/v1/payments", headers=bearer, timeout=10).status_code
            == 404
        )
