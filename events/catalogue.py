"""The event-type catalogue (spec "Events > Event types") and subscription patterns.

Reserved families are listed too, so `dispute.*` is a valid pattern today and keeps matching
when those resources become operable. A family pattern matches every type of the family,
including types added later.
"""

EVENT_TYPES_BY_FAMILY: dict[str, tuple[str, ...]] = {
    "payment": (
        "payment.created",
        "payment.requires_action",
        "payment.processing",
        "payment.authorized",
        "payment.captured",
        "payment.partially_captured",
        "payment.capture_failed",
        "payment.declined",
        "payment.failed",
        "payment.canceled",
        "payment.expired",
    ),
    "refund": ("refund.created", "refund.succeeded", "refund.failed"),
    "checkout_session": ("checkout_session.completed", "checkout_session.expired"),
    "dispute": (
        "dispute.created",
        "dispute.evidence_required",
        "dispute.won",
        "dispute.lost",
        "dispute.closed",
    ),
    "payout": ("payout.created", "payout.paid", "payout.failed"),
    "customer": (
        "customer.created",
        "customer.payment_method.attached",
        "customer.payment_method.detached",
    ),
    "payment_link": ("payment_link.created",),
}
EVENT_TYPES: frozenset[str] = frozenset(
    t for types in EVENT_TYPES_BY_FAMILY.values() for t in types
)
FAMILIES: frozenset[str] = frozenset(EVENT_TYPES_BY_FAMILY)


def family_of(event_type: str) -> str:
    return event_type.split(".", 1)[0]


# The families whose events the service sends; the others are reserved: a subscription may name
# them, and the API's documentation says they are not sent (issue 38: it listed them silently).
EMITTED_FAMILIES = frozenset({"payment", "refund"})
EVENT_TYPE_CHOICES = [
    (t, t if family_of(t) in EMITTED_FAMILIES else f"{t} (reserved: not sent yet)")
    for t in sorted(EVENT_TYPES)
]


def is_valid_pattern(pattern: object) -> bool:
    """`*`, `<family>.*`, or an exact type of a known family (a type the family may gain later
    is accepted, so a subscription can be made before the type ships)."""
    if not isinstance(pattern, str):
        return False
    if pattern == "*":
        return True
    family, dot, rest = pattern.partition(".")
    return family in FAMILIES and bool(dot) and bool(rest) and (rest == "*" or "*" not in rest)


def matches(pattern: str, event_type: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return family_of(event_type) == pattern[:-2]
    return pattern == event_type


def matches_any(patterns, event_type: str) -> bool:
    return any(matches(pattern, event_type) for pattern in patterns)
