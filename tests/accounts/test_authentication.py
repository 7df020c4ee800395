"""Every row of spec "Authentication" 5 and 6, through HTTP."""

import datetime

import pytest
from django.test import override_settings
from django.utils import timezone

from accounts import keys
from accounts.models import ApiKey
from accounts.services import api_key_revoke
from tests.conftest import key_client

pytestmark = pytest.mark.urls("tests.support.urls")


def assert_error(response, status, type_, code):
    body = response.json()["error"]
    assert response.status_code == status, response.content
    assert (body["type"], body["code"]) == (type_, code)
    assert body["request_id"] == response["X-Request-Id"]


def test_missing_key_is_401(anonymous_api):
    response = anonymous_api.get("/v1/test/keys")
    assert_error(response, 401, "authentication_error", "api_key_missing")


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer ", "svc_sk_test_x"])
def test_malformed_authorization_header_is_401(anonymous_api, header):
    response = anonymous_api.get("/v1/test/keys", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


@pytest.mark.parametrize(
    "token",
    [
        "svc_sk_test_short",
        "svc_sk_test_" + "A" * 21,
        "svc_xx_test_" + "A" * 20,
        "svc_sk_prod_" + "A" * 20,
        "sk_test_" + "A" * 24,
    ],
)
def test_malformed_key_is_401(anonymous_api, db, token):
    response = key_client(token).get("/v1/test/keys")
    assert_error(response, 401, "authentication_error", "invalid_api_key")


def test_unknown_well_formed_key_is_401(db):
    unknown = keys.generate_key("secret", livemode=False)
    response = key_client(unknown).get("/v1/test/keys")
    assert_error(response, 401, "authentication_error", "invalid_api_key")


def test_revoked_key_is_401(api, new_merchant):
    api_key_revoke(api_key=new_merchant.keys["test"]["secret"].api_key)
    assert_error(api.get("/v1/test/keys"), 401, "authentication_error", "api_key_revoked")


def test_expired_key_is_401(api, new_merchant):
    ApiKey.objects.filter(pk=new_merchant.keys["test"]["secret"].api_key.pk).update(
        expires_at=timezone.now() - datetime.timedelta(seconds=1)
    )
    assert_error(api.get("/v1/test/keys"), 401, "authentication_error", "api_key_expired")


def test_key_expiring_later_still_works(api, new_merchant):
    ApiKey.objects.filter(pk=new_merchant.keys["test"]["secret"].api_key.pk).update(
        expires_at=timezone.now() + datetime.timedelta(days=1)
    )
    assert api.get("/v1/test/keys").status_code == 200


@pytest.mark.parametrize("fixture", ["publishable_api", "live_publishable_api"])
def test_publishable_key_on_secret_endpoint_is_403(request, fixture):
    client = request.getfixturevalue(fixture)
    assert_error(client.get("/v1/test/keys"), 403, "authorization_error", "secret_key_required")


def test_publishable_key_on_publishable_endpoint_is_allowed(publishable_api):
    assert publishable_api.get("/v1/test/publishable").status_code == 200


@pytest.mark.parametrize("fixture", ["live_api", "live_publishable_api"])
def test_live_key_on_test_only_endpoint_is_403_test_mode_required(request, fixture):
    client = request.getfixturevalue(fixture)
    assert_error(
        client.get("/v1/test/test-mode-only"), 403, "authorization_error", "test_mode_required"
    )


@pytest.mark.parametrize("fixture", ["api", "publishable_api"])
def test_test_keys_reach_test_only_endpoint(request, fixture):
    assert request.getfixturevalue(fixture).get("/v1/test/test-mode-only").status_code == 200


def test_live_secret_key_authenticates_in_live_mode(live_api):
    response = live_api.post("/v1/test/echo", {"amount": 5, "currency": "eur"}, format="json")
    assert response.status_code == 201
    assert response.json()["livemode"] is True


def test_other_merchants_resource_is_404_like_a_missing_one(api, other_new_merchant):
    theirs = other_new_merchant.keys["test"]["secret"].api_key.id
    missing = "key_" + "0" * 26
    for key_id in (theirs, missing):
        response = api.get(f"/v1/test/keys/{key_id}")
        assert_error(response, 404, "not_found_error", "resource_not_found")
    assert (
        api.get(f"/v1/test/keys/{theirs}").json()["error"]["message"]
        == api.get(f"/v1/test/keys/{missing}").json()["error"]["message"]
    )


def test_only_a_peppered_hash_is_stored(new_merchant):
    issued = new_merchant.keys["test"]["secret"]
    stored = ApiKey.objects.get(pk=issued.api_key.pk)
    assert issued.secret not in str(stored.__dict__)
    assert stored.key_hash == keys.hash_key(issued.secret, "test-only-pepper")
    assert stored.last4 == issued.secret[-4:]


def test_pepper_rotation_keeps_old_keys_working_and_rehashes_them(api, new_merchant):
    issued = new_merchant.keys["test"]["secret"]
    with override_settings(
        API_KEY_PEPPER="new-pepper",
        API_KEY_PEPPER_VERSION=2,
        API_KEY_OLD_PEPPERS={"1": "test-only-pepper"},
    ):
        assert api.get("/v1/test/keys").status_code == 200
        stored = ApiKey.objects.get(pk=issued.api_key.pk)
        assert (stored.pepper_version, stored.key_hash) == (
            2,
            keys.hash_key(issued.secret, "new-pepper"),
        )
    with override_settings(API_KEY_PEPPER="new-pepper", API_KEY_PEPPER_VERSION=2):
        assert api.get("/v1/test/keys").status_code == 200


def test_use_is_recorded_at_most_once_a_minute(api, new_merchant, time_machine):
    key_id = new_merchant.keys["test"]["secret"].api_key.pk
    time_machine.move_to("2026-11-21T10:00:00Z", tick=False)
    api.get("/v1/test/keys")
    first = ApiKey.objects.get(pk=key_id).last_used_at
    time_machine.move_to("2026-11-21T10:00:30Z", tick=False)
    api.get("/v1/test/keys")
    assert ApiKey.objects.get(pk=key_id).last_used_at == first
    time_machine.move_to("2026-11-21T10:01:30Z", tick=False)
    api.get("/v1/test/keys")
    assert ApiKey.objects.get(pk=key_id).last_used_at > first
