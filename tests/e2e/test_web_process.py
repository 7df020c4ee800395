"""The real web process (granian + WSGI + middleware) answers in the envelope over HTTP."""

import re

import pytest
import requests

from accounts.services import merchant_create
from tests.e2e.processes import web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_real_server_answers_reserved_path_and_bad_key_in_the_envelope():
    created = merchant_create(name="E2E", email="e2e@example.test")
    secret = created.keys["test"]["secret"].secret
    with web_server() as base_url:
        reserved = requests.get(
            f"{base_url}/v1/customers", timeout=10, headers={"Authorization": f"Bearer {secret}"}
        )
        assert reserved.status_code == 404
        assert reserved.headers["Content-Type"] == "application/json; charset=utf-8"
        assert re.match(r"^req_[0-9A-Z]{26}$", reserved.headers["X-Request-Id"])
        error = reserved.json()["error"]
        assert (error["type"], error["request_id"]) == (
            "not_found_error",
            reserved.headers["X-Request-Id"],
        )
        admin = requests.get(f"{base_url}/admin/login/", timeout=10)
        assert admin.status_code == 200 and "Django" in admin.text
        static = requests.get(f"{base_url}/static/admin/css/base.css", timeout=10)
        assert static.status_code == 200
