"""What Stripe says of a card and its checks, in the spec's terms (`method.card`, `outcome`):
read from the charge's `payment_method_details.card`, or from the payment method itself where
the charge does not carry them (docs/processors.md "What a live payment shows")."""

# Stripe's check results onto the single letters the simulator answers with.
CVC_RESULTS = {"pass": "M", "fail": "N", "unavailable": "U", "unchecked": "P"}
RISK_DECISIONS = {"normal": "accept", "elevated": "review", "highest": "reject"}
THREE_DS_STATUSES = {
    "authenticated": "authenticated",
    "attempt_acknowledged": "attempted",
    "failed": "failed",
    "not_supported": "not_supported",
    "processing_error": "failed",
    "exempted": "exempted",
}


def get_path(obj, *path):
    """obj[path0][path1]... or None where any step is missing (Stripe omits what it lacks)."""
    for key in path:
        if obj is None:
            return None
        obj = obj.get(key) if hasattr(obj, "get") else None
    return obj


def card_facts(card) -> dict:
    """`method.card` fields Stripe knows: brand, last4, expiry, country, funding, fingerprint.
    `card` is a charge's payment_method_details.card, or a payment method's card."""
    if card is None:
        return {}
    facts = {
        "brand": (card.get("brand") or "").lower() or None,
        "last4": card.get("last4"),
        "exp_month": card.get("exp_month"),
        "exp_year": card.get("exp_year"),
        "issuer_country": card.get("country"),
        "funding": card.get("funding"),
        "fingerprint": card.get("fingerprint"),
    }
    return {field: value for field, value in facts.items() if value is not None}


def avs_result(checks) -> str | None:
    """Address line and postal code checks as one AVS letter (Y both, A line only, Z postal
    only, N neither, U not checked)."""
    line, postal = (
        get_path(checks, "address_line1_check"),
        get_path(checks, "address_postal_code_check"),
    )
    if line is None and postal is None:
        return None
    match (line == "pass", postal == "pass"):
        case (True, True):
            return "Y"
        case (True, False):
            return "A"
        case (False, True):
            return "Z"
    return "N" if "fail" in (line, postal) else "U"


def three_ds(details) -> dict | None:
    if not details:
        return None
    result = details.get("result")
    return {
        "status": THREE_DS_STATUSES.get(result, result),
        "eci": details.get("electronic_commerce_indicator"),
        "version": details.get("version"),
    }


def card_outcome(charge, card) -> dict:
    """`outcome` fields from the charge (its Radar outcome) and the card's checks."""
    checks = get_path(card, "checks")
    cvc = get_path(checks, "cvc_check") or get_path(card, "cvc_check")
    outcome = {
        "avs_result": avs_result(checks),
        "cvv_result": CVC_RESULTS.get(cvc) if cvc else None,
        "three_ds": three_ds(get_path(card, "three_d_secure")),
        "risk_score": get_path(charge, "outcome", "risk_score"),
        "risk_decision": RISK_DECISIONS.get(get_path(charge, "outcome", "risk_level")),
    }
    return {field: value for field, value in outcome.items() if value is not None}
