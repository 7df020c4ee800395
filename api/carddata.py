"""Finding raw card data in a request body, and redacting card-shaped strings from text.

The rules are written out in docs/request-safety.md ("Raw-card guard"); in short:
- a card number is written as card numbers are printed and typed: 13-19 digits in one
  group, or in the groups of a card layout (4-4-4-4, 4-4-4-4-3 and shorter last groups,
  4-6-5, 4-6-4) with one separator throughout (a space, a tab, 2-4 blanks, `-`, `.`, `/` or
  `_`), and it passes the Luhn check. Digits and separators are compared after NFKC
  (full-width digits, no-break spaces); a group glued to a letter or a digit belongs to a
  word or a longer number and is not part of one;
- an expiry is one object holding both an expiry-month and an expiry-year key, or one
  expiry key whose value reads as a month/year (`12/30`, `12-2030`, `1230`);
- a security code is a `cvc`-like key whose value is 3 or 4 ASCII digits.
Log redaction hides the same shapes, Luhn-valid or not (`redact`).

Every pass is linear in the body: bounded regular expressions (possessive, no nested
repetition) and a Python step per candidate, of which there are at most a few per digit run.
"""

import json
import re
import unicodedata
from dataclasses import dataclass

from api.errors import ValidationFailed

REDACTED = "[redacted]"
CARD_MIN_DIGITS = 13

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
# Every key above, once normalised, holds one of these words: a body whose text holds none
# (whatever separates their letters) has no expiry or security-code key to look for.
_KEY_HINT = re.compile(
    "|".join("[^a-z0-9]*+".join(word) for word in ("exp", "cv", "csc", "code", "verification"))
)

# Blocks holding every character whose NFKC form is one ASCII digit or separator (a test
# checks against all of Unicode): full-width forms, superscripts, no-break and thin spaces.
_COMPATIBILITY_BLOCKS = (
    range(0x00A0, 0x00BA),
    range(0x2000, 0x2090),
    range(0x2460, 0x24EB),
    range(0x3000, 0x3001),
    range(0xFE30, 0xFE70),
    range(0xFF00, 0xFF40),
    range(0x1D7CE, 0x1D800),
    range(0x1FBF0, 0x1FBFA),
)
_SEPARATORS = " \t-./_"


def _ascii_equivalents() -> dict[int, str]:
    table = {}
    for block in _COMPATIBILITY_BLOCKS:
        for code in block:
            form = unicodedata.normalize("NFKC", chr(code))
            if len(form) == 1 and form in "0123456789" + _SEPARATORS:
                table[code] = form
    return table


ASCII_EQUIVALENTS = _ascii_equivalents()


def _comparable(text: str) -> str:
    """The text with digits and separators in their ASCII form, one character for one, so a
    position in it is a position in `text`."""
    return text if text.isascii() else text.translate(ASCII_EQUIVALENTS)


_SEP = r"(?:[-./_]|[ \t]{1,4}+)"
_EDGE = r"(?![0-9A-Za-z])"  # a group ends where no digit or letter follows


def _layouts(n: int) -> str:
    """Card layouts with one separator throughout (named `s<n>`); `fifth<n>` is the short
    group after 4-4-4-4, which may be a security code rather than part of the number."""
    sep = rf"(?P=s{n})"
    fifth = rf"(?:{sep}(?P<fifth{n}>[0-9]{{1,3}}+){_EDGE})?"
    fours = rf"[0-9]{{4}}{sep}[0-9]{{4}}{sep}[0-9]{{1,4}}+{fifth}"
    return rf"[0-9]{{4}}(?P<s{n}>{_SEP})(?:{fours}|[0-9]{{6}}{sep}[0-9]{{4,5}}+)"


# A run of digit groups may hold numbers beside the card ("qty 2 4242 4242 4242 4242",
# "4242 4242 4242 4242 1230 123"): layouts are tried at the start of a run and at its end,
# which keeps the candidates to a few per run however long it is.
_RUN_STARTS_HERE = r"(?<![0-9][-./_\t ])(?<![0-9][ \t]{2})(?<![0-9][ \t]{3})(?<![0-9][ \t]{4})"
_RUN_ENDS_HERE = r"(?![-./_][0-9])(?![ \t]{1,4}+[0-9])"
CARD_SHAPED = re.compile(
    rf"""(?<![0-9A-Za-z])(?=[0-9]{{4}})  # cheap tests first: most positions fail here
    (?=(?P<card>
        [0-9]{{13,19}}+{_EDGE}
      | {_RUN_STARTS_HERE}{_layouts(1)}{_EDGE}
      | {_layouts(2)}{_EDGE}{_RUN_ENDS_HERE}
    ))""",
    re.VERBOSE,
)


def _numbers_in(
    card: str, lead_separator: str, lead_fifth: str, trail_separator: str, trail_fifth: str
) -> tuple[str, ...]:
    """The digits of a card-shaped window (a CARD_SHAPED match's groups) and, when it ends
    in a short fifth group, the digits without it too."""
    separator, fifth = lead_separator or trail_separator, lead_fifth or trail_fifth
    digits = card.replace(separator, "") if separator else card
    return (digits, digits[: -len(fifth)]) if fifth else (digits,)


_DOUBLED = bytes.maketrans(b"0123456789", b"0246813579")  # 2d, less 9 when over 9


def luhn_valid(digits: str) -> bool:
    encoded = digits.encode("ascii")
    doubled = encoded[-2::-2].translate(_DOUBLED)
    return (sum(encoded[-1::-2]) + sum(doubled) - 48 * len(encoded)) % 10 == 0


def contains_card_number(text: str) -> bool:
    if len(text) < CARD_MIN_DIGITS:
        return False
    windows = CARD_SHAPED.findall(_comparable(text))  # overlapping ones included
    return any(luhn_valid(number) for window in windows for number in _numbers_in(*window))


def redact(text: str) -> str:
    """Text with every card-shaped window replaced, Luhn-valid or not: logs lose nothing
    useful, and a number that only looks like a card (a mistyped one) is hidden too."""
    pieces, kept_until = [], 0
    for window in CARD_SHAPED.finditer(_comparable(text)):
        start, end = window.span("card")
        if start >= kept_until:
            pieces += [text[kept_until:start], REDACTED]
        kept_until = max(kept_until, end)  # an overlapping window widens the redaction
    return "".join(pieces) + text[kept_until:] if pieces else text


@dataclass(frozen=True)
class CardDataFound:
    what: str  # "card number", "card expiry", "security code"
    param: str | None  # dotted path of the field, None when the body is not JSON


class _Object(list):
    """A decoded JSON object as its (key, value) pairs, duplicates kept: a card number in a
    key that a later duplicate overrides is still in the body."""


def _decode(text: str):
    """JSON with number literals kept as their text, so `4242...` as a number is scanned
    like a string; None when the body is not JSON."""
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


def _scannable(text: str) -> str:
    """The text as sent and, when it holds escapes, its JSON strings decoded (each once, in
    one C pass, duplicate keys kept): so `\\u0034\\u0032...` is seen as the digits it is."""
    if "\\" not in text:
        return text
    try:
        document = json.loads(text, object_pairs_hook=list)
        decoded = json.dumps(document, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text
    return text + "\n" + decoded.replace("\\t", "\t")  # a tab, escaped again by dumps


def find_card_data(raw: bytes) -> CardDataFound | None:
    """The first card number, expiry or security code in a request body, or None.

    One linear pass over the text (and its decoded strings) settles most bodies: nothing
    card-shaped and no key an expiry or security code could be under. Only a body with
    either is decoded and walked, to name the field; one that is not JSON (or too deeply
    nested to walk) is refused with no field named.
    """
    text = raw.decode("utf-8", errors="replace")
    scannable = _scannable(text)
    card_in_text = contains_card_number(scannable)
    if not card_in_text and not _KEY_HINT.search(scannable.lower()):
        return None
    try:
        document = _decode(text)
        if document is not None:
            return _scan(document, ())
    except RecursionError:
        pass  # nested too deep to walk: what the text scan found stands
    return CardDataFound("card number", None) if card_in_text else None


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
