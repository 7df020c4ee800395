"""Decline codes (spec "Errors > Decline codes"): whether a retry is safe, and the ISO 8583
response code an issuer answers with."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Decline:
    code: str
    soft: bool
    response_code: str


DECLINES: dict[str, Decline] = {
    d.code: d
    for d in (
        Decline("insufficient_funds", True, "51"),
        Decline("issuer_unavailable", True, "91"),
        Decline("try_again_later", True, "19"),
        Decline("sca_required", True, "1A"),
        Decline("do_not_honor", False, "05"),
        Decline("generic_decline", False, "05"),
        Decline("expired_card", False, "54"),
        Decline("incorrect_cvc", False, "N7"),
        Decline("invalid_account", False, "14"),
        Decline("lost_card", False, "41"),
        Decline("stolen_card", False, "43"),
        Decline("restricted_card", False, "62"),
        Decline("transaction_not_allowed", False, "57"),
        Decline("fraud_suspected", False, "59"),
    )
}
APPROVED_RESPONSE_CODE = "00"
SYSTEM_ERROR_RESPONSE_CODE = "96"  # "system malfunction": neither approved nor declined
