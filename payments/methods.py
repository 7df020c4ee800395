"""The payment-method catalogue: pure data, one row per wire method name.

The spec's catalogue holds 55 methods; v1 operates the card-like ones. A later issue adds rows
(family, currencies and flow are already columns), not code.
"""

from dataclasses import dataclass
from enum import StrEnum


class Flow(StrEnum):
    IMMEDIATE = "immediate"  # answered in the call (cards, wallets)
    REDIRECT = "redirect"  # the payer is sent away and comes back
    ASYNCHRONOUS = "asynchronous"  # settles later (payment stays processing)


@dataclass(frozen=True)
class Method:
    name: str  # wire name: payment_method.type and method.type
    family: str  # "card", "wallet", later "bank_redirect", "bank_debit", "bnpl", ...
    flow: Flow
    currencies: frozenset[str] | None = None  # None: every supported currency
    token_type: str | None = None  # the sandbox token type it is paid with; None: no token
    wallet: str | None = None  # method.wallet on the payment

    @property
    def card_like(self) -> bool:
        """Carries method.card (spec "Payment object")."""
        return self.family in ("card", "wallet")

    def serves(self, currency: str) -> bool:
        return self.currencies is None or currency in self.currencies


METHODS: dict[str, Method] = {
    method.name: method
    for method in (
        Method("card", family="card", flow=Flow.IMMEDIATE, token_type="card"),
        Method(
            "apple_pay",
            family="wallet",
            flow=Flow.IMMEDIATE,
            token_type="apple_pay",
            wallet="apple_pay",
        ),
        Method(
            "google_pay",
            family="wallet",
            flow=Flow.IMMEDIATE,
            token_type="google_pay",
            wallet="google_pay",
        ),
    )
}


def get_method(name: object) -> Method | None:
    return METHODS.get(name) if isinstance(name, str) else None
