"""Decline codes exactly as the spec's table (spec "Errors > Decline codes")."""

from payments.declines import DECLINES

SPEC_SOFT = {"insufficient_funds", "issuer_unavailable", "try_again_later", "sca_required"}
SPEC_HARD = {
    "do_not_honor", "generic_decline", "expired_card", "incorrect_cvc", "invalid_account",
    "lost_card", "stolen_card", "restricted_card", "transaction_not_allowed", "fraud_suspected",
}  # fmt: skip


def test_every_spec_code_with_its_class():
    assert {code for code, d in DECLINES.items() if d.soft} == SPEC_SOFT
    assert {code for code, d in DECLINES.items() if not d.soft} == SPEC_HARD


def test_no_decline_answers_the_approved_code():
    assert all(d.response_code != "00" for d in DECLINES.values())
