"""Supported currencies and their ISO 4217 minor-unit exponents (spec "Common conventions":
32 with exponent 2, 16 with 0, 7 with 3)."""

from decimal import Decimal

EXPONENT_2 = (
    "aed",
    "aud",
    "bgn",
    "brl",
    "cad",
    "chf",
    "cny",
    "czk",
    "dkk",
    "egp",
    "eur",
    "gbp",
    "hkd",
    "huf",
    "idr",
    "ils",
    "inr",
    "mxn",
    "myr",
    "nok",
    "nzd",
    "php",
    "pln",
    "ron",
    "sar",
    "sek",
    "sgd",
    "thb",
    "try",
    "twd",
    "usd",
    "zar",
)
EXPONENT_0 = (
    "bif",
    "clp",
    "djf",
    "gnf",
    "isk",
    "jpy",
    "kmf",
    "krw",
    "pyg",
    "rwf",
    "ugx",
    "vnd",
    "vuv",
    "xaf",
    "xof",
    "xpf",
)
EXPONENT_3 = ("bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd")

CURRENCY_EXPONENTS: dict[str, int] = {
    **{code: 2 for code in EXPONENT_2},
    **{code: 0 for code in EXPONENT_0},
    **{code: 3 for code in EXPONENT_3},
}


def normalise_currency(value: object) -> str | None:
    """Lowercase code if supported (uppercase accepted in requests), else None."""
    if not isinstance(value, str):
        return None
    code = value.strip().lower()
    return code if code in CURRENCY_EXPONENTS else None


def format_amount(minor_units: int, currency: str) -> str:
    """12000, "eur" -> "120.00 EUR": how a person reads an amount (the API keeps minor units)."""
    exponent = CURRENCY_EXPONENTS.get(currency, 0)
    return f"{Decimal(minor_units).scaleb(-exponent):,.{exponent}f} {currency.upper()}"


class AmountNotReadable(ValueError):
    """A typed amount that is not one in the currency's major units; the message says why."""


def parse_amount(typed: str, currency: str) -> int:
    """ "5.99", "eur" -> 599: what a person types (major units, a point for decimals, at most
    the currency's exponent of them) in the minor units the API keeps. "5,99" is refused
    rather than guessed: a decimal comma and a thousands separator look the same."""
    exponent, code = CURRENCY_EXPONENTS.get(currency, 0), currency.upper()
    text = typed.strip()
    example = f"{Decimal(1234567).scaleb(-exponent):.{exponent}f}"
    if not text or any(c not in "0123456789." for c in text) or text.count(".") > 1:
        raise AmountNotReadable(
            f"Type the amount in {code} with digits and a point for decimals, like {example} "
            "(no thousands separators, no sign)."
        )
    amount = Decimal(text)
    if -amount.as_tuple().exponent > exponent:
        allowed = f"at most {exponent} decimals" if exponent else "no decimals"
        raise AmountNotReadable(f"{code} amounts have {allowed}: {text} has more.")
    return int(amount.scaleb(exponent))
