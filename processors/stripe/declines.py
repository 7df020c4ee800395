"""Stripe's decline codes onto the spec's (docs/processors.md "Declines"): each Stripe code
names the decline of ours whose meaning it shares; whether a retry may succeed
(`decline_is_soft`) and the ISO 8583 response code then come from payments.declines, so a live
decline reads exactly like the simulator's. A code not listed here is `generic_decline`, hard.

Stripe reports a card decline either as the error's `decline_code` (with code `card_declined`)
or, for a few, as the error's own `code` (`expired_card`, `incorrect_cvc`, ...): both are
looked up here."""

from payments.declines import DECLINES, Decline

STRIPE_DECLINES: dict[str, str] = {
    # authentication
    "authentication_required": "sca_required",
    "offline_pin_required": "sca_required",
    "online_or_offline_pin_required": "sca_required",
    "payment_intent_authentication_failure": "sca_required",
    # worth retrying later
    "approve_with_id": "try_again_later",
    "issuer_not_available": "issuer_unavailable",
    "processing_error": "try_again_later",
    "reenter_transaction": "try_again_later",
    "try_again_later": "try_again_later",
    "card_decline_rate_limit_exceeded": "try_again_later",
    "insufficient_funds": "insufficient_funds",
    "withdrawal_count_limit_exceeded": "insufficient_funds",
    "card_velocity_exceeded": "insufficient_funds",
    # the issuer says no
    "call_issuer": "do_not_honor",
    "do_not_honor": "do_not_honor",
    "do_not_try_again": "do_not_honor",
    "no_action_taken": "do_not_honor",
    "pin_try_exceeded": "do_not_honor",
    "revocation_of_all_authorizations": "do_not_honor",
    "revocation_of_authorization": "do_not_honor",
    "stop_payment_order": "do_not_honor",
    "generic_decline": "generic_decline",
    "card_declined": "generic_decline",
    "duplicate_transaction": "generic_decline",
    "incorrect_pin": "generic_decline",
    "invalid_pin": "generic_decline",
    "incorrect_zip": "generic_decline",
    "invalid_expiry_month": "generic_decline",
    "invalid_expiry_year": "generic_decline",
    "testmode_decline": "generic_decline",
    "expired_card": "expired_card",
    "incorrect_cvc": "incorrect_cvc",
    "invalid_cvc": "incorrect_cvc",
    "incorrect_number": "invalid_account",
    "invalid_number": "invalid_account",
    "invalid_account": "invalid_account",
    "new_account_information_available": "invalid_account",
    "lost_card": "lost_card",
    "pickup_card": "lost_card",
    "stolen_card": "stolen_card",
    "restricted_card": "restricted_card",
    "card_not_supported": "transaction_not_allowed",
    "currency_not_supported": "transaction_not_allowed",
    "invalid_amount": "transaction_not_allowed",
    "not_permitted": "transaction_not_allowed",
    "service_not_allowed": "transaction_not_allowed",
    "transaction_not_allowed": "transaction_not_allowed",
    "fraudulent": "fraud_suspected",
    "merchant_blacklist": "fraud_suspected",
    "security_violation": "fraud_suspected",
}


def decline_of(error: dict | None) -> Decline:
    """Ours for a Stripe error object (`last_payment_error`): its decline_code first, then
    its code; unknown or absent: generic_decline (hard)."""
    error = error or {}
    for stripe_code in (error.get("decline_code"), error.get("code")):
        if stripe_code in STRIPE_DECLINES:
            return DECLINES[STRIPE_DECLINES[stripe_code]]
    return DECLINES["generic_decline"]
