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
repetition), and one Luhn check of all the candidates (at most a few per digit run) together,
a few C-level operations on all their digits rather than a Python step per candidate.
"""

import json
import re
import unicodedata
from dataclasses import dataclass
from itertools import compress, repeat
from operator import itemgetter

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

# Card layouts with one separator throughout (`s`). `fifth` is the short group after
# 4-4-4-4, which may be a security code rather than part of the number: `number` is the
# window without it (`fours` marks the 4-4-4-4 layouts, the only ones it may follow).
_LAYOUT = (
    rf"(?P<number>[0-9]{{4}}(?P<s>{_SEP})(?:"
    rf"[0-9]{{4}}(?P=s)[0-9]{{4}}(?P=s)[0-9]{{1,4}}+(?P<fours>)|[0-9]{{6}}(?P=s)[0-9]{{4,5}}+))"
    rf"(?(fours)(?:(?P=s)(?P<fifth>[0-9]{{1,3}}+){_EDGE}|))"
)

# A run of digit groups may hold numbers beside the card ("qty 2 4242 4242 4242 4242",
# "4242 4242 4242 4242 1230 123"): layouts are tried at the start of a run and at its end,
# which keeps the candidates to a few per run however long it is. (`run_starts` marks a
# layout at the start of its run; one that starts anywhere else must end the run.)
_RUN_STARTS_HERE = r"(?<![0-9][-./_\t ])(?<![0-9][ \t]{2})(?<![0-9][ \t]{3})(?<![0-9][ \t]{4})"
_RUN_ENDS_HERE = r"(?![-./_][0-9])(?![ \t]{1,4}+[0-9])"
# Each match takes the character before its window, which is no digit or letter: a pattern
# that starts with a character class is searched for by a C loop that skips every other
# character, where a lookbehind starts a match attempt at every position. Windows start at
# different positions, so no two need the same character (the text gets one in front:
# `_searchable`).
CARD_SHAPED = re.compile(
    rf"""[^0-9A-Za-z](?=[0-9]{{4}})  # cheap tests first: most positions fail here
    (?=(?P<card>
        [0-9]{{13,19}}+{_EDGE}
      | (?:{_RUN_STARTS_HERE}(?P<run_starts>)|){_LAYOUT}{_EDGE}(?(run_starts)|{_RUN_ENDS_HERE})
    ))""",
    re.VERBOSE,
)
_CARD, _NUMBER, _FIFTH = (
    itemgetter(CARD_SHAPED.groupindex[name] - 1) for name in ("card", "number", "fifth")
)


def _searchable(text: str) -> str:
    """The text as CARD_SHAPED reads it: `_comparable`, after a character that is no digit
    or letter, so a window at the start has one before it too. Positions shift by one."""
    return "\n" + _comparable(text)


_SEPARATOR_BYTES = _SEPARATORS.encode("ascii")


def _digits_of(candidates: list[str]) -> list[bytes]:
    """Each candidate's digits, its separators dropped: in one pass over all of them."""
    if not candidates:
        return []
    joined = "\n".join(candidates).encode("ascii")  # ASCII: CARD_SHAPED matches ASCII only
    return joined.translate(None, _SEPARATOR_BYTES).split(b"\n")


_DIGIT_VALUES = bytes.maketrans(b"0123456789", bytes(range(10)))
_DOUBLED_VALUES = bytes.maketrans(b"0123456789", bytes([0, 2, 4, 6, 8, 1, 3, 5, 7, 9]))
_ENDS_IN_ZERO = bytes(total % 10 == 0 for total in range(256))


def _luhn_sums(numbers: bytes, width: int) -> bytes:
    """The Luhn sum of each of the `width`-digit numbers (`width` even) written end to end in
    `numbers`, one byte each, in a few C-level steps however many numbers there are. With
    an even width the digits at even offsets are the doubled ones (every second one from the
    right). Each doubled digit is added to the plain one after it, a byte per pair, and each
    number's pairs are summed by multiplying by 1 + 256 + 256**2 + ...: a byte of the
    product is the sum of `width / 2` neighbouring pairs, at most 14 * 18 = 252 for up to 28
    digits, so no carry crosses into another byte."""
    half, size = width // 2, len(numbers) // 2
    pairs = int.from_bytes(numbers[0::2].translate(_DOUBLED_VALUES), "little")
    pairs += int.from_bytes(numbers[1::2].translate(_DIGIT_VALUES), "little")
    sliding = pairs * int.from_bytes(b"\x01" * half, "little")
    last_pairs = slice(half - 1, size, half)  # a number's sum is at its last pair's byte
    return sliding.to_bytes(size + half, "little")[last_pairs]


def _luhn_flags(numbers: list[bytes]) -> bytes:
    """For each of these ASCII digit strings (1 to 28 digits each), 1 if it passes the Luhn
    check, else 0: all checked together, each padded with zeros in front (which add nothing
    to its sum) to one even width."""
    if not numbers:
        return b""
    width = max(map(len, numbers))
    width += width % 2
    padded = b"".join(map(bytes.zfill, numbers, repeat(width)))
    return _luhn_sums(padded, width).translate(_ENDS_IN_ZERO)


def luhn_valid(digits: str) -> bool:
    """Whether a number of 1 to 28 ASCII digits passes the Luhn check."""
    return _luhn_flags([digits.encode("ascii")]) == b"\x01"


def contains_card_number(text: str) -> bool:
    if len(text) < CARD_MIN_DIGITS:
        return False
    windows = CARD_SHAPED.findall(_searchable(text))  # overlapping ones included
    if not windows:
        return False
    candidates = list(map(_CARD, windows))
    candidates += compress(map(_NUMBER, windows), map(_FIFTH, windows))  # and without a fifth
    return 1 in _luhn_flags(_digits_of(candidates))


def redact(text: str) -> str:
    """Text with every card-shaped window replaced, Luhn-valid or not: logs lose nothing
    useful, and a number that only looks like a card (a mistyped one) is hidden too."""
    pieces, kept_until = [], 0
    for window in CARD_SHAPED.finditer(_searchable(text)):
        start, end = window.start("card") - 1, window.end("card") - 1  # `_searchable` shifts
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


def _walk(node, path: tuple, passed: list | None) -> CardDataFound | None:
    """The first expiry or security code (key-name rules) in document order. When `passed`
    is a list, every key and string the walk passes before it is appended to it with the
    path that would name it (a key names its object: the error never echoes the key), for
    `_first_card_number_in`; otherwise values that are not objects or lists are skipped (no
    key in them), inline: a list of 100,000 numbers costs no call per number."""
    if isinstance(node, _Object):
        found = _card_field_in_object(node, path)
        if found:
            return found
        for key, value in node:
            if passed is not None:
                passed.append((path, key))
            elif not isinstance(value, _CONTAINERS):
                continue
            found = _walk(value, path + (key,), passed)
            if found:
                return found
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if passed is None and not isinstance(value, _CONTAINERS):
                continue
            found = _walk(value, path + (index,), passed)
            if found:
                return found
    elif passed is not None and isinstance(node, str):
        passed.append((path, node))
    return None


_CONTAINERS = (_Object, list)


# The strings a walk passed are scanned this many at a time, joined by line breaks (no card
# number spans one), and only the first group that holds a card one string at a time: about
# one scan of their text in all, where one scan per string cost ~70 ms for 10,000 strings.
_STRINGS_PER_SCAN = 256


def _first_card_number_in(passed: list[tuple[tuple, str]]) -> CardDataFound | None:
    """The first of these (path, text) whose text holds a card number."""
    for begin in range(0, len(passed), _STRINGS_PER_SCAN):
        group = passed[begin : begin + _STRINGS_PER_SCAN]
        if contains_card_number("\n".join(map(itemgetter(1), group))):
            for path, text in group:
                if contains_card_number(text):
                    return CardDataFound("card number", _dotted(path))
    return None


def _named(document, card_in_text: bool) -> CardDataFound | None:
    """The first card data in the decoded body, in document order; its strings are looked
    at only when the text scan found a card number (otherwise none holds one)."""
    if not card_in_text:
        return _walk(document, (), None)
    passed: list[tuple[tuple, str]] = []
    found = _walk(document, (), passed)  # the first expiry or code, and what came before it
    return _first_card_number_in(passed) or found


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
    return text + "\n" + _unescaped(decoded)


# What `json.dumps(ensure_ascii=False)` escapes again in a decoded string: a quote, a
# backslash and the control characters. Left escaped, `hello\n4242 4242 4242 4242` reads as
# `n4242...`, a group glued to a letter, and the card is missed (issue 12).
_REESCAPED = re.compile(r'\\(?:u00[0-9a-fA-F]{2}|[\\"bfnr])')


def _unescaped(dumped: str) -> str:
    """Every re-escape but a tab's as a line break (a boundary, and no separator: digit
    groups on separate lines are not a card), a tab's as the tab it is (a separator). One
    C-level pass each: the first consumes escaped backslashes, so the `\\t` left after it
    are tabs."""
    return _REESCAPED.sub("\n", dumped).replace("\\t", "\t")


def find_card_data(raw: bytes) -> CardDataFound | None:
    """The first card number, expiry or security code in a request body, or None.

    One linear pass over the text (and its decoded strings) settles most bodies: nothing
    card-shaped and no key an expiry or security code could be under. Only a body with
    either is decoded and walked, to name the field (its strings checked one by one only
    when the text holds a card number); one that is not JSON (or too deeply nested to walk)
    is refused with no field named.
    """
    text = raw.decode("utf-8", errors="replace")
    scannable = _scannable(text)
    card_in_text = contains_card_number(scannable)
    if not card_in_text and not _KEY_HINT.search(scannable.lower()):
        return None
    try:
        document = _decode(text)
        if document is not None:
            return _named(document, card_in_text)
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
