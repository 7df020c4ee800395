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
# 4-4-4-4, which may be a security code rather than part of the number: the window holds a
# card number also when it passes without it (`fours` marks the 4-4-4-4 layouts, the only
# ones it may follow).
_LAYOUT = (
    rf"[0-9]{{4}}(?P<s>{_SEP})(?:"
    rf"[0-9]{{4}}(?P=s)[0-9]{{4}}(?P=s)[0-9]{{1,4}}+(?P<fours>)|[0-9]{{6}}(?P=s)[0-9]{{4,5}}+)"
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
_CARD_GROUP, _FIFTH_GROUP = CARD_SHAPED.groupindex["card"], CARD_SHAPED.groupindex["fifth"]
_CARD, _FIFTH = itemgetter(_CARD_GROUP), itemgetter(_FIFTH_GROUP)  # of a match


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


def first_card_number_at(text: str) -> int | None:
    """Where the first card number in `text` starts, or None: one scan, its windows' positions
    kept, so a caller can tell which part of the text holds it without scanning again."""
    if len(text) < CARD_MIN_DIGITS:
        return None
    windows = list(CARD_SHAPED.finditer(_searchable(text)))  # overlapping ones included
    if not windows:
        return None
    digits = _digits_of(list(map(_CARD, windows)))
    valid = _luhn_flags(digits)
    # A window whose short fifth group may be a security code holds a card number also when
    # the window without that group passes: checked together, after the whole windows.
    fifths = list(map(_FIFTH, windows))
    shortened = [index for index, fifth in enumerate(fifths) if fifth]
    without = [digits[index][: -len(fifths[index])] for index in shortened]
    valid_without = _luhn_flags(without)
    firsts = [valid.find(1)]
    if 1 in valid_without:
        firsts.append(shortened[valid_without.find(1)])
    found = [index for index in firsts if index >= 0]
    if not found:
        return None
    return windows[min(found)].start(_CARD_GROUP) - 1  # `_searchable` shifts positions by one


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
    """JSON with number literals and constants kept as their text, so `4242...` as a number
    is read like a string; None when the body is not JSON (or nested too deep to decode)."""
    try:
        return json.loads(
            text, object_pairs_hook=_Object, parse_int=str, parse_float=str, parse_constant=str
        )
    except (ValueError, RecursionError):
        return None


def _normalised(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _filled(value) -> bool:
    return value is not None and value != ""


def _card_field_in_object(pairs: _Object, path) -> CardDataFound | None:
    """Expiry and security-code rules, which are about key names."""
    named = [(_normalised(key), key, value) for key, value in pairs]
    months = [key for name, key, value in named if name in EXPIRY_MONTH_KEYS and _filled(value)]
    if months and any(name in EXPIRY_YEAR_KEYS and _filled(value) for name, _, value in named):
        return CardDataFound("card expiry", _dotted((*path, months[0])))
    for name, key, value in named:
        as_text = value.strip() if isinstance(value, str) else None
        if as_text is None:
            continue
        if name in EXPIRY_KEYS and EXPIRY_VALUE.fullmatch(as_text):
            return CardDataFound("card expiry", _dotted((*path, key)))
        if name in SECURITY_CODE_KEYS and SECURITY_CODE_VALUE.fullmatch(as_text):
            return CardDataFound("security code", _dotted((*path, key)))
    return None


def _dotted(path) -> str | None:
    return ".".join(str(part) for part in path) or None


_CONTAINERS = (_Object, list)


class _Walk:
    """The first card data in a decoded body, in document order: each object's expiry and
    security-code keys (key-name rules) before its contents, and the key or string (number
    literals read as strings) numbered `card_token`, counting from 0 in document order, the
    one the text scan found a card number in (None: none holds one). A key names its object:
    the error never echoes the key.

    A loop over a stack of levels, not recursion: a body nested as deep as the JSON decoder
    goes is walked too. One path list is extended and shortened on the way, so a node costs
    the same at any depth (a tuple built per node cost ~400 ms for 500-deep lists), and the
    values not worth a visit (all but objects and lists, unless a card number is counted to)
    are skipped in C-level passes, not a Python step each."""

    def __init__(self, card_token: int | None):
        self.path: list = []
        self.levels: list[tuple] = []  # per open container: (its entries left, is an object)
        self.tokens_left = -1 if card_token is None else card_token

    def first_in(self, document) -> CardDataFound | None:
        found = self._entered(document) if isinstance(document, _CONTAINERS) else None
        found = found or self._counted(document)
        while self.levels and not found:
            entries, in_object = self.levels[-1]
            entry = next(entries, None)
            if entry is None:
                self.levels.pop()
                if self.levels:  # the path, one step per open container below the top one
                    self.path.pop()
                continue
            step, node = entry
            found = self._counted(step) if in_object else None
            if found or not isinstance(node, _CONTAINERS):
                found = found or self._counted(node, step)
                continue
            self.path.append(step)
            found = self._entered(node)
        return found

    def _counted(self, token, *step) -> CardDataFound | None:
        """A key or value passed (under `step` when it is a value): the card number's, if it
        is the token counted to."""
        if self.tokens_left < 0 or not isinstance(token, str):
            return None
        self.tokens_left -= 1
        if self.tokens_left >= 0:
            return None
        return CardDataFound("card number", _dotted((*self.path, *step)))

    def _entered(self, node) -> CardDataFound | None:
        """An object's key-name rules; then the container's entries worth a visit, opened."""
        counting = self.tokens_left >= 0
        if isinstance(node, _Object):
            found = _card_field_in_object(node, self.path)
            if found:
                return found
            visited = map(isinstance, map(_VALUE, node), repeat(_CONTAINERS))
            self.levels.append((iter(node) if counting else compress(node, visited), True))
        else:
            visited = map(isinstance, node, repeat(_VISITED[counting]))
            self.levels.append((compress(enumerate(node), visited), False))
        return None


_VALUE = itemgetter(1)
_VISITED = {False: _CONTAINERS, True: (_Object, list, str)}  # list values, by `counting`


# A JSON token the walk counts: a string (key or value), a number or a constant. In the texts
# scanned, a `"` only ever delimits a string (`_scanned`); a string cut short by the end of the
# range counted in is counted too (`\Z`), so its digits are not read as numbers.
_TOKEN = re.compile(r'"[^"]*+(?:"|\Z)|-?(?:[0-9]|Infinity)[^\s,:\]}]*+|NaN')


def _token_at(scanned: str, position: int) -> int:
    """The number, counting from 0 in document order, of the token holding `position`."""
    return len(_TOKEN.findall(scanned, 0, position + 1)) - 1


def _scanned(text: str, document) -> str:
    """The text scanned for card numbers: the body as sent, or, when it holds escapes and
    decodes, its tokens decoded (`\\u0034\\u0032...` is the digits it is), each token a JSON
    string in document order, every `"` a delimiter (`_unescaped`)."""
    if document is None or "\\" not in text:
        return text
    try:
        return _unescaped(json.dumps(document, ensure_ascii=False))
    except RecursionError:
        return text


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


_NOT_DECODED = object()


def find_card_data(raw: bytes) -> CardDataFound | None:
    """The first card number, expiry or security code in a request body, or None.

    One linear scan of the text (its strings decoded when it holds escapes) settles most
    bodies: nothing card-shaped and no key an expiry or security code could be under. A body
    with either is decoded and walked to name the field; the scan tells which token holds the
    first card number, so no string is scanned twice. One that is not JSON (or too deeply
    nested to walk) is refused with no field named.
    """
    text = raw.decode("utf-8", errors="replace")
    document = _decode(text) if "\\" in text else _NOT_DECODED
    scanned = text if document is _NOT_DECODED else _scanned(text, document)
    card_at = first_card_number_at(scanned)
    if card_at is None and not _KEY_HINT.search(scanned.lower()):
        return None
    if document is _NOT_DECODED:
        document = _decode(text)
    if document is not None:
        card_token = None if card_at is None else _token_at(scanned, card_at)
        try:
            return _Walk(card_token).first_in(document)
        except RecursionError:
            pass  # nested too deep to walk: what the text scan found stands
    return CardDataFound("card number", None) if card_at is not None else None


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
