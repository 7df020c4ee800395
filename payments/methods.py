"""The payment-method catalogue: pure data, one row per wire method name (55, the spec's
"catalogue is stated to hold 55 methods"). docs/methods.md lists the same rows, and a test
checks it against this module, so the two cannot drift.

A row says what a method is (family), which currencies it serves, how a payment with it flows,
and whether it is paid with a token (the card-like methods, which carry `method.card`).
Behaviour follows from these columns, never from a method's name.
"""

from dataclasses import dataclass
from enum import StrEnum


class Family(StrEnum):
    CARD = "card"
    WALLET = "wallet"
    BANK_REDIRECT = "bank_redirect"
    BANK_DEBIT = "bank_debit"
    VOUCHER = "voucher"
    REAL_TIME_BANK_TRANSFER = "real_time_bank_transfer"
    BNPL = "bnpl"


class Flow(StrEnum):
    IMMEDIATE = "immediate"  # answered in the call (cards, token wallets)
    REDIRECT = "redirect"  # requires_action: the payer is sent away and comes back
    ASYNCHRONOUS = "asynchronous"  # processing: settles later


@dataclass(frozen=True)
class Method:
    name: str  # wire name: payment_method.type and method.type
    family: Family
    flow: Flow
    currencies: frozenset[str] | None = None  # None: every supported currency
    token_type: str | None = None  # the token type it is paid with; None: no token, ever
    wallet: str | None = None  # method.wallet on the payment

    @property
    def card_like(self) -> bool:
        """Paid with a card token, so it carries method.card (spec "Payment object");
        everything else carries method.details instead."""
        return self.token_type is not None

    def serves(self, currency: str) -> bool:
        return self.currencies is None or currency in self.currencies


# The keys of `method.details` per family of the methods paid without a token
# (docs/methods.md "method.details").
DETAILS_FIELDS: dict[Family, tuple[str, ...]] = {
    Family.WALLET: ("payer_account", "reference"),
    Family.BANK_REDIRECT: ("bank", "account_last4", "reference"),
    Family.BANK_DEBIT: ("mandate", "account_last4", "reference"),
    Family.VOUCHER: ("voucher_number", "expires_at", "reference"),
    Family.REAL_TIME_BANK_TRANSFER: ("bank", "reference"),
    Family.BNPL: ("installments", "reference"),
}


# (wire name, family, flow, currencies: space-separated ISO 4217 codes, or "*" for every
# supported currency). Each currency is one of api/currencies.py (a test checks).
# fmt: off
ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("card", "card", "immediate", "*"),
    ("apple_pay", "wallet", "immediate", "*"),
    ("google_pay", "wallet", "immediate", "*"),
    ("paypal", "wallet", "redirect",
     "aud brl cad chf czk dkk eur gbp hkd huf ils jpy mxn myr nok nzd php pln sek sgd thb twd usd"),
    ("alipay", "wallet", "redirect", "aud cad cny eur gbp hkd jpy myr nzd sgd usd"),
    ("wechat_pay", "wallet", "redirect", "aud cad chf cny dkk eur gbp hkd jpy nok sek sgd usd"),
    ("grabpay", "wallet", "redirect", "myr sgd"),
    ("gcash", "wallet", "redirect", "php"),
    ("kakao_pay", "wallet", "redirect", "krw"),
    ("paypay", "wallet", "redirect", "jpy"),
    ("mobilepay", "wallet", "redirect", "dkk eur nok sek"),
    ("vipps", "wallet", "redirect", "nok"),
    ("swish", "wallet", "redirect", "sek"),
    ("twint", "wallet", "redirect", "chf"),
    ("mb_way", "wallet", "redirect", "eur"),
    ("satispay", "wallet", "redirect", "eur"),
    ("revolut_pay", "wallet", "redirect", "chf czk dkk eur gbp huf nok pln ron sek usd"),
    ("cash_app_pay", "wallet", "redirect", "usd"),
    ("ideal", "bank_redirect", "redirect", "eur"),
    ("bancontact", "bank_redirect", "redirect", "eur"),
    ("eps", "bank_redirect", "redirect", "eur"),
    ("przelewy24", "bank_redirect", "redirect", "eur pln"),
    ("blik", "bank_redirect", "redirect", "pln"),
    ("sofort", "bank_redirect", "redirect", "chf eur gbp pln"),
    ("mybank", "bank_redirect", "redirect", "eur"),
    ("trustly", "bank_redirect", "redirect", "dkk eur gbp nok pln sek"),
    ("fpx", "bank_redirect", "redirect", "myr"),
    ("sepa_debit", "bank_debit", "asynchronous", "eur"),
    ("ach_debit", "bank_debit", "asynchronous", "usd"),
    ("bacs_debit", "bank_debit", "asynchronous", "gbp"),
    ("becs_debit", "bank_debit", "asynchronous", "aud"),
    ("acss_debit", "bank_debit", "asynchronous", "cad"),
    ("nz_bank_account", "bank_debit", "asynchronous", "nzd"),
    ("boleto", "voucher", "asynchronous", "brl"),
    ("oxxo", "voucher", "asynchronous", "mxn"),
    ("konbini", "voucher", "asynchronous", "jpy"),
    ("multibanco", "voucher", "asynchronous", "eur"),
    ("paysafecard", "voucher", "asynchronous",
     "aud cad chf czk dkk eur gbp huf nok nzd pln ron sek usd"),
    ("pix", "real_time_bank_transfer", "redirect", "brl"),
    ("upi", "real_time_bank_transfer", "redirect", "inr"),
    ("promptpay", "real_time_bank_transfer", "redirect", "thb"),
    ("paynow", "real_time_bank_transfer", "redirect", "sgd"),
    ("duitnow", "real_time_bank_transfer", "redirect", "myr"),
    ("qris", "real_time_bank_transfer", "redirect", "idr"),
    ("pay_by_bank", "real_time_bank_transfer", "redirect", "eur gbp"),
    ("bizum", "real_time_bank_transfer", "redirect", "eur"),
    ("spei", "real_time_bank_transfer", "asynchronous", "mxn"),
    ("klarna", "bnpl", "redirect", "aud cad chf czk dkk eur gbp nok nzd pln ron sek usd"),
    ("afterpay_clearpay", "bnpl", "redirect", "aud cad gbp nzd usd"),
    ("affirm", "bnpl", "redirect", "cad usd"),
    ("zip", "bnpl", "redirect", "aud nzd usd"),
    ("riverty", "bnpl", "redirect", "chf dkk eur nok sek"),
    ("atome", "bnpl", "redirect", "hkd idr myr php sgd thb"),
    ("scalapay", "bnpl", "redirect", "eur"),
    ("tabby", "bnpl", "redirect", "aed sar"),
)
# fmt: on
# The methods paid with a token: the token type, and `method.wallet` on the payment.
TOKEN_PAID: dict[str, tuple[str, str | None]] = {
    "card": ("card", None),
    "apple_pay": ("apple_pay", "apple_pay"),
    "google_pay": ("google_pay", "google_pay"),
}


def _method(name: str, family: str, flow: str, currencies: str) -> Method:
    token_type, wallet = TOKEN_PAID.get(name, (None, None))
    served = None if currencies == "*" else frozenset(currencies.split())
    return Method(name, Family(family), Flow(flow), served, token_type=token_type, wallet=wallet)


METHODS: dict[str, Method] = {row[0]: _method(*row) for row in ROWS}


def find_method(name: object) -> Method | None:
    """The catalogue's method of that name, or None: for validating what a client sent."""
    return METHODS.get(name) if isinstance(name, str) else None


def get_method(name: str) -> Method:
    """The method a stored payment or route names; one outside the catalogue is a bug or a
    corrupt row, said plainly rather than as an AttributeError on None later."""
    method = find_method(name)
    if method is None:
        raise LookupError(f"{name!r} is not a payment method of the catalogue (payments.methods)")
    return method
