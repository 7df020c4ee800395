"""`/v1/webhook-endpoints` (spec "Webhook endpoint object", "Endpoints > Webhook endpoints")."""

import re
from hashlib import sha256

import pytest
from cryptography.fernet import Fernet
from django.utils import timezone

from api.models import IdempotencyRecord
from tests.api.test_conventions import error_of
from tests.webhooks.urls import public_url
from webhooks.crypto import decrypt_secret
from webhooks.models import WebhookEndpoint

URL = "https://93.184.215.14/hooks"
SECRET = re.compile(r"^svc_whsec_[0-9A-Za-z]{32}$")
ENDPOINT_FIELDS = {
    "id",
    "object",
    "url",
    "description",
    "enabled_events",
    "status",
    "paused_at",
    "ordered_delivery",
    "secret_last4",
    "previous_secret_expires_at",
    "livemode",
    "created",
    "health",  # ours, additive (docs/webhooks.md "Endpoint health and recovery")
}


def create(api, **body):
    return api.post("/v1/webhook-endpoints", {"url": public_url(), **body}, format="json")


ERROR_TYPE_BY_STATUS = {
    400: "validation_error",
    403: "authorization_error",
    404: "not_found_error",
    422: "processing_error",
}


def error_code(response, status):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["type"] == ERROR_TYPE_BY_STATUS[status]
    return error["code"]


def test_create_returns_the_secret_once_and_stores_it_encrypted(api):
    response = create(api, url=URL, description="orders", enabled_events=["payment.*"])
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
    assert set(body) == ENDPOINT_FIELDS | {"secret"}
    stored = WebhookEndpoint.objects.get(pk=body["id"])
    assert body["secret"] not in stored.secret_encrypted
    assert decrypt_secret(stored.secret_encrypted) == body["secret"]
    fetched = api.get(f"/v1/webhook-endpoints/{body['id']}").json()
    assert set(fetched) == ENDPOINT_FIELDS and fetched["secret_last4"] == body["secret_last4"]


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
        ("https://93.184.215.14:0/", "invalid_url"),  # issue 35: port 0 was taken as 443
        ("https://no-such-host.invalid/", "unresolvable_host"),
    ],
)
def test_url_guard_codes_through_the_api(api, url, code):
    response = create(api, url=url)
    assert error_code(response, 400) == code
    assert response.json()["error"]["param"] == "url"


def test_an_internal_name_and_an_unknown_one_get_the_spec_s_two_codes(api):
    """Accepted, issue 35 (docs/webhooks.md "The URL guard"): the two codes tell a merchant
    whether the service's resolver knows a name internally; never the address or its kind."""
    internal = create(api, url="https://localhost/hooks")
    unknown = create(api, url="https://no-such-host.invalid/hooks")
    assert error_code(internal, 400) == "private_address"
    assert error_code(unknown, 400) == "unresolvable_host"
    assert internal.json()["error"]["param"] == unknown.json()["error"]["param"] == "url"
    told = internal.json()["error"]["message"]
    assert not any(detail in told for detail in ("127.0.0.1", "::1", "loopback", "localhost"))
    assert not WebhookEndpoint.objects.exists()


def test_sixteen_enabled_endpoints_per_environment(api, live_api):
    for _ in range(16):
        assert create(api).status_code == 201
    assert error_code(create(api), 422) == "endpoint_limit_reached"
    assert create(live_api).status_code == 201  # the other environment has its own 16
    victim = api.get("/v1/webhook-endpoints", {"limit": 1}).json()["data"][0]["id"]
    api.delete(f"/v1/webhook-endpoints/{victim}")
    assert create(api).status_code == 201


def test_endpoints_may_share_a_url_as_the_spec_allows(api):
    """Issue 35's finding accepted (docs/webhooks.md "Decisions"): the spec refuses an
    endpoint for its URL rules and the 16th only, so one URL may be several endpoints'; each
    gets its own delivery, at most 16 per mode."""
    assert create(api, url=URL).status_code == 201
    assert create(api, url=URL).status_code == 201


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


def test_the_list_pages_like_every_list(api):
    ids = [create(api).json()["id"] for _ in range(3)]
    page = api.get("/v1/webhook-endpoints", {"limit": 2}).json()
    assert set(page) == {"object", "data", "has_more", "next_cursor"}
    assert (page["object"], page["has_more"]) == ("list", True)
    rest = api.get("/v1/webhook-endpoints", {"starting_after": page["next_cursor"]}).json()
    assert [e["id"] for e in page["data"] + rest["data"]] == ids[::-1]
    assert (rest["has_more"], rest["next_cursor"]) == (False, None)
    for params, param in [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"starting_after": "not-a-cursor"}, "starting_after"),
        ({"starting_after": ids[0], "ending_before": ids[1]}, None),
    ]:
        response = api.get("/v1/webhook-endpoints", params)
        assert error_code(response, 400) == "invalid_parameter"
        if param:
            assert response.json()["error"]["param"] == param


def test_a_replayed_create_is_the_same_endpoint(api):
    first = api.post(
        "/v1/webhook-endpoints", {"url": URL}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    again = api.post(
        "/v1/webhook-endpoints", {"url": URL}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert (again.status_code, again.content) == (201, first.content)
    assert again["Idempotent-Replayed"] == "true"
    assert WebhookEndpoint.objects.count() == 1


@pytest.mark.parametrize("action", ["create", "roll-secret"])
def test_a_response_showing_the_secret_is_kept_for_replay_encrypted(api, action):
    path = "/v1/webhook-endpoints"
    if action == "roll-secret":
        path = f"{path}/{create(api).json()['id']}/roll-secret"
    first = api.post(path, {"url": URL}, format="json", HTTP_IDEMPOTENCY_KEY="k-secret")
    secret = first.json()["secret"]
    (stored,) = IdempotencyRecord.objects.filter(key_hash=sha256(b"k-secret").hexdigest())
    assert secret.encode() not in bytes(stored.body) and b"svc_whsec_" not in bytes(stored.body)
    again = api.post(path, {"url": URL}, format="json", HTTP_IDEMPOTENCY_KEY="k-secret")
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert again.json()["secret"] == secret  # the replay shows it again, byte for byte


def test_a_replay_whose_stored_response_no_key_decrypts_says_so(api, settings, caplog):
    """The key it was encrypted with dropped from WEBHOOK_ENCRYPTION_KEYS (or, with them
    unset, DJANGO_SECRET_KEY changed): the replay cannot show the response, and running the
    create again would make a second endpoint."""
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-rotated"}
    assert (
        api.post("/v1/webhook-endpoints", {"url": URL}, format="json", **headers).status_code == 201
    )
    settings.WEBHOOK_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    again = api.post("/v1/webhook-endpoints", {"url": URL}, format="json", **headers)
    error = error_of(again, 500, "api_error", "internal_error")
    assert "can no longer be read" in error["message"]
    assert "retrying with this key will not help" in error["message"]
    assert WebhookEndpoint.objects.count() == 1
    assert any("unreadable" in record.getMessage() for record in caplog.records)


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
