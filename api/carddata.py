"""Finding raw card data in a request body, and redacting card-shaped strings from text.

The rules are written out in docs/request-safety.md ("Raw-card guard"); in short:
- a card number is 13-19 ASCII digits, single spaces or dashes allowed between them (one
  kind throughout), that passes the Luhn check; a digit group glued to an ASCII letter
  belongs to a word or a hex id and is not part of one;
- an expiry is one object holding both an expiry-month and an expiry-year key, or one
  expiry key whose value reads as a month/year (`12/30`, `12-2030`, `1230`);
- a security code is a `cvc`-like key whose value is 3 or 4 ASCII digits.
Only ASCII `[0-9]` counts as a digit, never `\\d`, which also matches other scripts' digits.
"""

import json
import re
from dataclasses import dataclass

from api.errors import ValidationFailed

# Digit groups joined by single spaces or dashes: "4242 4242-4242 4242".
DIGIT_RUN = re.compile(r"[0-9]+(?:[ -][0-9]+)*")
ASCII_LETTER = re.compile(r"[A-Za-z]")
CARD_MIN_DIGITS, CARD_MAX_DIGITS = 13, 19
REDACTED = "[redacted]"

EXPIRY_MONTH_KEYS = frozenset({"expmonth", "expirymonth", "expirationmonth", "cardexpmonth"})
EXPIRY_YEAR_KEYS = frozenset({"expyear", "expiryyear", "expirationyear", "cardexpyear"})
EXPIRY_KEYS = frozenset(
    {"exp", "expiry", "expiration", "expdate", "expirydate", "expirationdate", "cardexpiry"}
)
SECURITY_CODE_KEYS = frozenset(
    {"cvc", "cvv", "cvc2", "cvv2", "cvn", "csc", "securitycode", "cardsecuritycode", "cardcvc"}
    | {"cardcvv", "cardcode", "cardverificationcode", "cardverificationvalue"}
)
EXPIRY_VALUE = re.compile(r"(0?[1-9]|1[0-2]) ?[/-] ?([0-9]{2}|[0-9]{4})|(0[1-9]|1[0-2])[0-9]{2}")
SECURITY_CODE_VALUE = re.compile(r"[0-9]{3,4}")


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _glued(text: str, index: int) -> bool:
    return 0 <= index < len(text) and bool(ASCII_LETTER.match(text[index]))


def _groups_and_separators(text: str, run: re.Match) -> tuple[list[str], list[str]]:
    """The run's digit groups and the separators between them, less an edge group glued to
    a letter (`ab1234`, `1234cd`): that one belongs to a word or a hex id."""
    parts = re.split(r"([ -])", run.group())
    groups, separators = parts[0::2], parts[1::2]
    if _glued(text, run.start() - 1):
        groups, separators = groups[1:], separators[1:]
    if groups and _glued(text, run.end()):
        groups, separators = groups[:-1], separators[:-1]
    return groups, separators


def _has_card_window(groups: list[str], separators: list[str]) -> bool:
    """Any whole consecutive groups, written with one separator throughout, holding 13-19
    digits that pass Luhn. A card number stays one beside other numbers ("qty 2 4242 4242
    4242 4242"), while "INV-2026-0001 834521" (dashes, then a space) is not one."""
    for start in range(len(groups)):
        digits = ""
        for end in range(start, len(groups)):
            if end > start + 1 and separators[end - 1] != separators[start]:
                break
            digits += groups[end]
            if len(digits) > CARD_MAX_DIGITS:
                break
            if len(digits) >= CARD_MIN_DIGITS and luhn_valid(digits):
                return True
    return False


def contains_card_number(text: str) -> bool:
    if len(text) < CARD_MIN_DIGITS:
        return False
    return any(
        _has_card_window(*_groups_and_separators(text, run))
        for run in DIGIT_RUN.finditer(text)
        if len(run.group()) >= CARD_MIN_DIGITS  # most runs are short: skip them cheaply
    )


def _redacted_run(run: re.Match) -> str:
    digits = sum(char != " " and char != "-" for char in run.group())
    return REDACTED if digits >= CARD_MIN_DIGITS else run.group()


def redact(text: str) -> str:
    """Text with every run of 13 or more digits (card-shaped, Luhn or not) replaced: logs
    lose nothing useful, and a number that only looks like a card is hidden too."""
    return DIGIT_RUN.sub(_redacted_run, text)


@dataclass(frozen=True)
class CardDataFound:
    what: str  # "card number", "card expiry", "security code"
    param: str | None  # dotted path of the field, None when the body is not JSON


class _Object(list):
    """A decoded JSON object as its (key, value) pairs, duplicates kept: a card number in a
    key that a later duplicate overrides is still in the body."""


def _decode(text: str):
    """JSON with number literals kept as their text, so `4242...` as a number is scanned
    like a string; None when the body is not JSON (the raw scan still runs)."""
    try:
        return json.loads(
            text, object_pairs_hook=_Object, parse_int=str, parse_float=str, parse_constant=str
        )
    except ValueError:
        return None


def _normalised(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _filled(value) -> bool:
    return value is not None and value != ""


def _card_field_in_object(pairs: _Object, path: tuple) -> CardDataFound | None:
    """Expiry and security-code rules, which are about key names."""
    named = [(_normalised(key), key, value) for key, value in pairs]
    months = [key for name, key, value in named if name in EXPIRY_MONTH_KEYS and _filled(value)]
    if months and any(name in EXPIRY_YEAR_KEYS and _filled(value) for name, _, value in named):
        return CardDataFound("card expiry", _dotted(path + (months[0],)))
    for name, key, value in named:
        as_text = value.strip() if isinstance(value, str) else None
        if as_text is None:
            continue
        if name in EXPIRY_KEYS and EXPIRY_VALUE.fullmatch(as_text):
            return CardDataFound("card expiry", _dotted(path + (key,)))
        if name in SECURITY_CODE_KEYS and SECURITY_CODE_VALUE.fullmatch(as_text):
            return CardDataFound("security code", _dotted(path + (key,)))
    return None


def _dotted(path: tuple) -> str | None:
    return ".".join(str(part) for part in path) or None


def _scan(node, path: tuple) -> CardDataFound | None:
    if isinstance(node, _Object):
        found = _card_field_in_object(node, path)
        if found:
            return found
        for key, value in node:
            if contains_card_number(key):
                return CardDataFound("card number", _dotted(path))  # never echo the key
            found = _scan(value, path + (key,))
            if found:
                return found
        return None
    if isinstance(node, list):
        for index, value in enumerate(node):
            found = _scan(value, path + (index,))
            if found:
                return found
        return None
    if isinstance(node, str) and contains_card_number(node):
        return CardDataFound("card number", _dotted(path))
    return None


def find_card_data(raw: bytes) -> CardDataFound | None:
    """The first card number, expiry or security code in a request body, or None.

    Both passes run: the decoded values catch a number written as `\\u0034\\u0032...`
    escapes, and the raw text catches one in a body that is not JSON at all.
    """
    text = raw.decode("utf-8", errors="replace")
    try:
        document = _decode(text)
        found = _scan(document, ()) if document is not None else None
    except RecursionError:
        found = None  # nested too deep to walk: the raw scan below still runs
    if found is None and contains_card_number(text):
        found = CardDataFound("card number", None)
    return found


def refuse_raw_card_data(raw: bytes) -> None:
    """400 `raw_card_data_not_allowed` naming the field (spec "Common rules" 2)."""
    found = find_card_data(raw)
    if found is not None:
        raise ValidationFailed(
            f"Request bodies must not contain raw card data (found a {found.what}). Collect "
            "card details with the tokenizer and send the token instead.",
            code="raw_card_data_not_allowed",
            param=found.param,
        )
