"""POST /v1/sandbox/advance/:id resolves a processing payment now."""

from tests.payments.support import APPROVED, ASYNC, created, error_of, event_types


def test_advance_resolves_processing_now(api):
    payment = created(api, ASYNC)
    response = api.post(f"/v1/sandbox/advance/{payment['id']}")
    assert response.status_code == 200
    assert response.json()["status"] == "captured"
    assert event_types(payment["id"])[-1] == "payment.captured"


def test_advance_with_manual_capture_authorizes(api):
    payment = created(api, ASYNC, capture_method="manual")
    assert api.post(f"/v1/sandbox/advance/{payment['id']}").json()["status"] == "authorized"


def test_any_other_status_is_not_advanceable(api):
    payment = created(api, APPROVED)
    error = error_of(
        api.post(f"/v1/sandbox/advance/{payment['id']}"),
        422,
        "processing_error",
        "payment_not_advanceable",
    )
    assert "captured" in error["message"]


def test_advance_is_test_mode_only_and_scoped(api, live_api, other_api):
    payment = created(api, ASYNC)
    error_of(
        live_api.post(f"/v1/sandbox/advance/{payment['id']}"),
        403,
        "authorization_error",
        "test_mode_required",
    )
    error_of(
        other_api.post(f"/v1/sandbox/advance/{payment['id']}"),
        404,
        "not_found_error",
        "resource_not_found",
    )


def test_publishable_key_cannot_advance(api, publishable_api):
    payment = created(api, ASYNC)
    response = publishable_api.post(f"/v1/sandbox/advance/{payment['id']}")
    error_of(response, 403, "authorization_error", "secret_key_required")


def test_advance_refuses_a_body_that_is_not_json_and_leaves_the_payment_processing(api):
    payment = created(api, ASYNC)
    response = api.generic(
        "POST", f"/v1/sandbox/advance/{payment['id']}", b"{", content_type="application/json"
    )
    error_of(response, 400, "validation_error", "invalid_json")
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "processing"
