"""`/v1/webhook-endpoints` (spec "Webhook endpoint object", "Endpoints > Webhook endpoints")."""

import re

import pytest
from django.utils import timezone

from webhooks.crypto import decrypt_secret
from webhooks.models import WebhookEndpoint

URL = "https://93.184.215.14/hooks"
SECRET = re.compile(r"^svc_whsec_[0-9A-Za-z]{32}$")


def create(api, **body):
    return api.post("/v1/webhook-endpoints", {"url": URL, **body}, format="json")


def error_code(response, status):
    assert response.status_code == status, response.content
    return response.json()["error"]["code"]


def test_create_returns_the_secret_once_and_stores_it_encrypted(api):
    response = create(api, description="orders", enabled_events=["payment.*"])
    assert response.status_code == 201
    body = response.json()
    assert SECRET.match(body["secret"])
    assert body["secret_last4"] == body["secret"][-4:]
    assert body["id"].startswith("whe_") and body["object"] == "webhook_endpoint"
    assert (body["url"], body["description"], body["enabled_events"]) == (
        URL,
        "orders",
        ["payment.*"],
    )
    assert (body["status"], body["livemode"], body["previous_secret_expires_at"]) == (
        "enabled",
        False,
        None,
    )
    stored = WebhookEndpoint.objects.get(pk=body["id"])
    assert body["secret"] not in stored.secret_encrypted
    assert decrypt_secret(stored.secret_encrypted) == body["secret"]
    fetched = api.get(f"/v1/webhook-endpoints/{body['id']}").json()
    assert "secret" not in fetched and fetched["secret_last4"] == body["secret_last4"]


def test_defaults_and_duplicate_patterns(api):
    assert create(api).json()["enabled_events"] == ["*"]
    body = create(api, enabled_events=["refund.*", "refund.*", "payment.future_type"]).json()
    assert body["enabled_events"] == ["refund.*", "payment.future_type"]
    assert create(api).json()["description"] is None


@pytest.mark.parametrize(
    "body, param",
    [
        ({"enabled_events": ["nope.*"]}, "enabled_events"),
        ({"enabled_events": ["payment.cap*"]}, "enabled_events"),
        ({"enabled_events": []}, "enabled_events"),
        ({"enabled_events": "payment.*"}, "enabled_events"),
        ({"enabled_events": ["payment.*"] * 65}, "enabled_events"),
        ({"description": "d" * 201}, "description"),
        ({"description": 42}, "description"),  # a string or null, never coerced
        ({"description": ["orders"]}, "description"),
        ({"url": None}, "url"),
    ],
)
def test_invalid_parameters(api, body, param):
    response = create(api, **body)
    assert error_code(response, 400) == "invalid_parameter"
    assert response.json()["error"]["param"] == param


def test_description_is_kept_as_sent(api):
    assert create(api, description="  orders  ").json()["description"] == "  orders  "
    assert create(api, description="").json()["description"] == ""


def test_limits_at_their_edges_are_accepted(api):
    patterns = ["payment.*"] + [f"payment.t{i}" for i in range(63)]
    assert create(api, description="d" * 200, enabled_events=patterns).status_code == 201


@pytest.mark.parametrize(
    "url, code",
    [
        ("http://93.184.215.14/", "https_required"),
        ("https://127.0.0.1/", "private_address"),
        ("https://u:p@93.184.215.14/", "invalid_url"),
        ("https://no-such-host.invalid/", "unresolvable_host"),
    ],
)
def test_url_guard_codes_through_the_api(api, url, code):
    response = create(api, url=url)
    assert error_code(response, 400) == code
    assert response.json()["error"]["param"] == "url"


def test_sixteen_enabled_endpoints_per_environment(api, live_api):
    for _ in range(16):
        assert create(api).status_code == 201
    assert error_code(create(api), 422) == "endpoint_limit_reached"
    assert create(live_api).status_code == 201  # the other environment has its own 16
    victim = api.get("/v1/webhook-endpoints", {"limit": 1}).json()["data"][0]["id"]
    api.delete(f"/v1/webhook-endpoints/{victim}")
    assert create(api).status_code == 201


def test_list_is_per_mode_newest_first_and_hides_deleted(api, live_api):
    first, second = create(api).json(), create(api).json()
    live = create(live_api).json()
    listed = api.get("/v1/webhook-endpoints").json()
    assert [e["id"] for e in listed["data"]] == [second["id"], first["id"]]
    assert all("secret" not in e for e in listed["data"])
    assert listed["has_more"] is False
    deleted = api.delete(f"/v1/webhook-endpoints/{first['id']}")
    assert deleted.status_code == 200
    assert deleted.json() == {"id": first["id"], "object": "webhook_endpoint", "deleted": True}
    assert [e["id"] for e in api.get("/v1/webhook-endpoints").json()["data"]] == [second["id"]]
    assert error_code(api.get(f"/v1/webhook-endpoints/{first['id']}"), 404) == (
        "resource_not_found"
    )
    assert error_code(api.delete(f"/v1/webhook-endpoints/{first['id']}"), 404)
    assert error_code(api.get(f"/v1/webhook-endpoints/{live['id']}"), 404)
    assert WebhookEndpoint.objects.get(pk=first["id"]).status == "disabled"


def test_another_merchant_gets_404(api, other_api):
    endpoint = create(api).json()
    for response in (
        other_api.get(f"/v1/webhook-endpoints/{endpoint['id']}"),
        other_api.delete(f"/v1/webhook-endpoints/{endpoint['id']}"),
        other_api.post(f"/v1/webhook-endpoints/{endpoint['id']}/roll-secret"),
    ):
        assert error_code(response, 404) == "resource_not_found"
    assert other_api.get("/v1/webhook-endpoints").json()["data"] == []


def test_roll_secret_keeps_the_old_one_for_24_hours(api):
    created = create(api).json()
    before = timezone.now()
    response = api.post(f"/v1/webhook-endpoints/{created['id']}/roll-secret")
    assert response.status_code == 200
    rolled = response.json()
    assert SECRET.match(rolled["secret"]) and rolled["secret"] != created["secret"]
    assert rolled["secret_last4"] == rolled["secret"][-4:]
    expires = timezone.datetime.fromisoformat(rolled["previous_secret_expires_at"])
    assert 24 * 3600 - 2 <= (expires - before).total_seconds() <= 24 * 3600 + 2
    stored = WebhookEndpoint.objects.get(pk=created["id"])
    assert decrypt_secret(stored.previous_secret_encrypted) == created["secret"]
    assert "secret" not in api.get(f"/v1/webhook-endpoints/{created['id']}").json()
    assert error_code(api.get(f"/v1/webhook-endpoints/{created['id']}/roll-secret"), 404)


def test_publishable_key_is_refused(publishable_api):
    assert error_code(create(publishable_api), 403) == "secret_key_required"
