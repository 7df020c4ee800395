"""The nine magic test cards (decisions.md "The nine test cards") and the outcome data the
simulator answers with for each. A card's `plan` is the sequence of results the simulator
walks through, e.g. `requires_action>declined:do_not_honor` (see sandbox.simulator)."""

from dataclasses import dataclass

from payments.declines import DECLINES


@dataclass(frozen=True)
class TestCard:
    number: str
    brand: str
    outcome: str  # as listed: approved, requires_action, processing, declined, failed
    label: str
    plan: str
    avs_result: str  # what the issuer's address check answers for this card
    cvv_result: str
    risk_score: int
    decline_code: str | None = None

    def as_listed(self) -> dict:
        item = {
            "number": self.number,
            "brand": self.brand,
            "outcome": self.outcome,
            "label": self.label,
        }
        if self.decline_code:
            item["decline_code"] = self.decline_code
            item["decline_is_soft"] = DECLINES[self.decline_code].soft
        return item


CARDS: tuple[TestCard, ...] = (
    TestCard("4242424242424242", "visa", "approved", "Visa: approved", "approved", "Y", "M", 8),
    TestCard(
        "5555555555554444",
        "mastercard",
        "approved",
        "Mastercard: approved",
        "approved",
        "M",
        "M",
        24,
    ),
    TestCard(
        "4000000000003220",
        "visa",
        "requires_action",
        "3-D Secure challenge; Approve on the page gives approved",
        "requires_action>approved",
        "Y",
        "M",
        35,
    ),
    TestCard(
        "4000008400001629",
        "visa",
        "requires_action",
        "3-D Secure challenge; Approve on the page gives declined do_not_honor (hard)",
        "requires_action>declined:do_not_honor",
        "N",
        "M",
        64,
        decline_code="do_not_honor",
    ),
    TestCard(
        "4000000000000077",
        "visa",
        "processing",
        "Asynchronous: processing for 30 seconds, then captured",
        "processing>approved",
        "Z",
        "M",
        18,
    ),
    TestCard(
        "4000000000009995",
        "visa",
        "declined",
        "Declined: insufficient_funds (soft)",
        "declined:insufficient_funds",
        "Y",
        "M",
        30,
        decline_code="insufficient_funds",
    ),
    TestCard(
        "4000000000000002",
        "visa",
        "declined",
        "Declined: generic_decline (hard)",
        "declined:generic_decline",
        "A",
        "M",
        55,
        decline_code="generic_decline",
    ),
    TestCard(
        "4000000000009987",
        "visa",
        "declined",
        "Declined: lost_card (hard)",
        "declined:lost_card",
        "N",
        "N",
        91,
        decline_code="lost_card",
    ),
    TestCard(
        "4000000000000119",
        "visa",
        "failed",
        "Processing error: payment failed (422 payment_failed)",
        "failed",
        "U",
        "U",
        12,
    ),
)
CARDS_BY_NUMBER: dict[str, TestCard] = {card.number: card for card in CARDS}
# A token keeps the BIN and last four digits, never the number: enough to find its card again.
CARDS_BY_BIN_LAST4: dict[tuple[str, str], TestCard] = {
    (card.number[:6], card.number[-4:]): card for card in CARDS
}
