"""Spec "Pagination" on a real list: the merchant's API keys, through a test-only view."""

import base64

import pytest

from accounts.services import api_key_issue

pytestmark = pytest.mark.urls("tests.support.urls")


@pytest.fixture
def key_ids(merchant):
    """Seven keys in all (four from the account + three more), newest first."""
    for _ in range(3):
        api_key_issue(merchant=merchant, kind="secret", livemode=False)
    return list(merchant.api_keys.order_by("-id").values_list("id", flat=True))


def ids_of(response):
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["data"]]


def test_envelope_shape_and_newest_first(api, key_ids):
    body = api.get("/v1/test/keys").json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    assert body["object"] == "list" and body["has_more"] is False and body["next_cursor"] is None
    assert [item["id"] for item in body["data"]] == key_ids


def test_walking_next_cursor_visits_every_item_once(api, key_ids):
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"starting_after": cursor} if cursor else {})}
        body = api.get("/v1/test/keys", params).json()
        seen += [item["id"] for item in body["data"]]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        cursor = body["next_cursor"]
    assert seen == key_ids


def test_bare_id_works_as_a_cursor(api, key_ids):
    assert ids_of(api.get("/v1/test/keys", {"starting_after": key_ids[1]})) == key_ids[2:]
    assert ids_of(api.get("/v1/test/keys", {"ending_before": key_ids[3]})) == key_ids[:3]


def test_ending_before_pages_backwards(api, key_ids):
    body = api.get("/v1/test/keys", {"ending_before": key_ids[5], "limit": 2}).json()
    assert [item["id"] for item in body["data"]] == key_ids[3:5]
    assert body["has_more"] is True
    back = api.get("/v1/test/keys", {"ending_before": body["next_cursor"], "limit": 5}).json()
    assert [item["id"] for item in back["data"]] == key_ids[:3]
    assert back["has_more"] is False


def test_default_limit_is_25_and_max_100(api, merchant):
    for _ in range(26):
        api_key_issue(merchant=merchant, kind="publishable", livemode=True)
    body = api.get("/v1/test/keys").json()
    assert len(body["data"]) == 25 and body["has_more"] is True
    assert len(ids_of(api.get("/v1/test/keys", {"limit": 100}))) == 30


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "2.5", ""])
def test_limit_out_of_range_is_400(api, key_ids, limit):
    error = api.get("/v1/test/keys", {"limit": limit}).json()["error"]
    assert (error["code"], error["param"]) == ("invalid_parameter", "limit")


def test_both_cursors_is_400(api, key_ids):
    response = api.get("/v1/test/keys", {"starting_after": key_ids[0], "ending_before": key_ids[1]})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "validation_error"


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "pay_01J0000000000000000000000",
        "pay_" + "0" * 26,  # a well-formed id of another resource
        base64.urlsafe_b64encode(b"c1:nope").decode(),
        "%%%",
    ],
)
def test_malformed_cursor_is_400_never_a_first_page(api, key_ids, cursor):
    response = api.get("/v1/test/keys", {"starting_after": cursor})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "starting_after"


def test_list_never_shows_another_merchants_items(api, other_api, key_ids):
    theirs = ids_of(other_api.get("/v1/test/keys"))
    assert not set(theirs) & set(ids_of(api.get("/v1/test/keys")))
