"""GET /v1/sandbox/test-cards: the nine cards and every override key."""

import pytest

from sandbox import overrides
from tests.payments.support import error_of


def test_nine_cards_with_their_outcomes(publishable_api):
    response = publishable_api.get("/v1/sandbox/test-cards")
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list" and body["has_more"] is False and body["next_cursor"] is None
    cards = {card["number"]: card for card in body["data"]}
    assert len(cards) == 9
    assert cards["4242424242424242"] == {
        "number": "4242424242424242",
        "brand": "visa",
        "outcome": "approved",
        "label": "Visa: approved",
    }
    assert cards["4000000000009995"]["decline_code"] == "insufficient_funds"
    assert cards["4000000000009995"]["decline_is_soft"] is True
    assert cards["4000000000009987"]["decline_is_soft"] is False
    assert cards["4000008400001629"]["outcome"] == "requires_action"
    assert cards["4000008400001629"]["decline_code"] == "do_not_honor"
    assert {card["outcome"] for card in cards.values()} == {
        "approved",
        "requires_action",
        "processing",
        "declined",
        "failed",
    }
    assert all(
        "decline_code" not in card for card in cards.values() if card["outcome"] == "approved"
    )


def test_every_override_key_is_described(api):
    described = api.get("/v1/sandbox/test-cards").json()["metadata_overrides"]
    keys = [
        value
        for name, value in vars(overrides).items()
        if name.isupper() and isinstance(value, str) and value.startswith("_svc_test_")
    ]
    assert set(described) == set(keys) and len(keys) == 6
    assert all(isinstance(text, str) and text for text in described.values())


def test_live_key_is_refused(live_api):
    error_of(
        live_api.get("/v1/sandbox/test-cards"), 403, "authorization_error", "test_mode_required"
    )


def test_the_list_pages_like_every_list(api):
    """Spec "Common rules" 4 and "Pagination": `limit` and cursors hold on the test-card list
    too (they were ignored: `limit=2` answered all nine with `has_more` false)."""
    every = [card["number"] for card in api.get("/v1/sandbox/test-cards").json()["data"]]
    seen, cursor = [], None
    while True:
        params = {"limit": 4, **({"starting_after": cursor} if cursor else {})}
        body = api.get("/v1/sandbox/test-cards", params).json()
        assert len(body["data"]) <= 4 and "metadata_overrides" in body
        seen += [card["number"] for card in body["data"]]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        cursor = body["next_cursor"]
    assert seen == every and len(seen) == 9
    # `cursor` names the eighth card (the last of the second page): the two before it.
    back = api.get("/v1/sandbox/test-cards", {"ending_before": cursor, "limit": 2}).json()
    assert [card["number"] for card in back["data"]] == every[5:7] and back["has_more"] is True


@pytest.mark.parametrize(
    "params, param",
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"starting_after": "garbage"}, "starting_after"),
        ({"starting_after": "4242424242424242"}, "starting_after"),
        ({"ending_before": "pay_01J00000000000000000000000"}, "ending_before"),
    ],
)
def test_bad_page_parameters_are_400(api, params, param):
    response = api.get("/v1/sandbox/test-cards", params)
    assert error_of(response, 400, "validation_error", "invalid_parameter")["param"] == param
