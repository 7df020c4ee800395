"""Finding raw card data in a request body, and redacting card-shaped strings from text.

The rules are written out in docs/request-safety.md ("Raw-card guard"); in short:
- a card number is written as card numbers are printed and typed: 13-19 digits in one
  group, or in the groups of a card layout (4-4-4-4, 4-4-4-4-3 and shorter last groups,
  4-6-5, 4-6-4) with one separator throughout (a space, a tab, 2-4 blanks, a line break,
  `-`, `.`, `/` or `_`), and it passes the Luhn check. Digits and separators are compared
  after NFKC (full-width digits, no-break spaces), every dash as `-`, an invisible separator
  (soft hyphen, zero-width space) as `-` too and a Unicode line separator as a line break; a
  group glued to a letter or a digit belongs to a word or a longer number and is not part
  of one;
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
from bisect import bisect_left
from dataclasses import dataclass
from itertools import chain, compress, count, repeat
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
# Separators NFKC leaves as they are (issue 20: each let a card through): every dash
# (Unicode's Pd, and the minus sign) reads as `-`; characters that show nothing, soft hyphen,
# zero-width space, joiners, word joiner, byte-order mark, as `-` too (a separator that
# cannot be seen joins groups the eye reads as one number); Unicode's line and paragraph
# separators and NEL as a line break.
DASHES = "\u058a\u05be\u1400\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2e17\u2e1a\u2e3a\u2e3b"
DASHES += "\u2e40\u2e5d\u301c\u3030\u30a0\ufe31\ufe32\ufe58\U00010ead\u2212"
INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
LINE_BREAKS = "\u0085\u2028\u2029"
LOOKALIKES = {
    **{ord(char): "-" for char in DASHES + INVISIBLE},
    **{ord(char): "\n" for char in LINE_BREAKS},
}


def _ascii_equivalents() -> dict[int, str]:
    table = {}
    for block in _COMPATIBILITY_BLOCKS:
        for code in block:
            form = unicodedata.normalize("NFKC", chr(code))
            if len(form) == 1 and form in "0123456789" + _SEPARATORS:
                table[code] = form
    for code, form in LOOKALIKES.items():
        table.setdefault(code, form)
    return table


ASCII_EQUIVALENTS = _ascii_equivalents()


# `ASCII_EQUIVALENTS` as a table indexed by code point, every other character mapping to
# itself (one past its end is left as it is too): `str.translate` reads a string table
# without the KeyError a dictionary raises for each character it does not map (5 ms against
# 11 ms for 256 KiB). Its first 256 as bytes: a text within Latin-1 (no-break spaces,
# accented letters) is translated a byte a character in C (0.15 ms).
_EQUIVALENTS_TABLE = "".join(
    ASCII_EQUIVALENTS.get(code, chr(code)) for code in range(max(ASCII_EQUIVALENTS) + 1)
)
_LATIN1_EQUIVALENTS = _EQUIVALENTS_TABLE[:256].encode("latin-1")


def _comparable(text: str) -> str:
    """The text with digits and separators in their ASCII form, one character for one, so a
    position in it is a position in `text`."""
    if text.isascii():
        return text
    try:
        return text.encode("latin-1").translate(_LATIN1_EQUIVALENTS).decode("latin-1")
    except UnicodeEncodeError:
        return text.translate(_EQUIVALENTS_TABLE)


# A line break, `\n`, `\r\n` or `\r`, is a separator too: a number typed or pasted over
# lines (issue 20). Five blanks or more are not: docs/request-safety.md "Accepted misses".
_SEP = r"(?:[-./_\n]|\r\n?+|[ \t]{1,4}+)"
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
_RUN_STARTS_HERE = (
    r"(?<![0-9][-./_\t \n\r])(?<![0-9]\r\n)"
    r"(?<![0-9][ \t]{2})(?<![0-9][ \t]{3})(?<![0-9][ \t]{4})"
)
_RUN_ENDS_HERE = r"(?![-./_\n\r][0-9])(?!\r\n[0-9])(?![ \t]{1,4}+[0-9])"
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


_SEPARATOR_BYTES = (_SEPARATORS + "\n\r").encode("ascii")


def _digits_of(candidates: list[str]) -> list[bytes]:
    """Each candidate's digits, its separators dropped: in one pass over all of them."""
    if not candidates:
        return []
    joined = ",".join(candidates).encode("ascii")  # ASCII: CARD_SHAPED matches ASCII only
    return joined.translate(None, _SEPARATOR_BYTES).split(b",")


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
    first = min((index for index in firsts if index >= 0), default=None)
    if first is None:
        return None
    return windows[first].start(_CARD_GROUP) - 1  # `_searchable` shifts positions by one


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


_CONTAINERS = list  # a decoded object (`_Object`) is one too: one type is the cheaper check


class _Walk:
    """The first card data in a decoded body, in document order: each object's expiry and
    security-code keys (key-name rules) before its contents, and the key or string (number
    literals read as strings) numbered `card_token`, counting from 0 in document order, the
    one the text scan found a card number in (None: none holds one). A key names its object:
    the error never echoes the key.

    A loop over a stack of open containers, not recursion: a body nested as deep as the JSON
    decoder goes is walked too, and one path list is extended and shortened on the way, so a
    node costs the same at any depth (a tuple built per node cost ~400 ms for 500-deep
    lists). Within a container only its objects and arrays, and the token counted to, take a
    Python step (`_entries`)."""

    def __init__(self, card_token: int | None):
        self.path: list = []
        self.open: list = []  # per open container, the entries left to visit
        self.tokens_left = -1 if card_token is None else card_token

    def first_in(self, document) -> CardDataFound | None:
        if not isinstance(document, _CONTAINERS):
            return self._counted(document, None)
        found = self._entered(document)
        while self.open and not found:
            step, node = next(self.open[-1], (None, _DONE))
            if node is _DONE:
                self.open.pop()
                if self.open:  # the path holds a step per open container but the outermost
                    self.path.pop()
            elif isinstance(node, _CONTAINERS):
                self.path.append(step)
                found = self._entered(node)
            else:
                found = self._counted(node, step)
        return found

    def _entered(self, node) -> CardDataFound | None:
        """An object's key-name rules; then the container opened."""
        found = _card_field_in_object(node, self.path) if isinstance(node, _Object) else None
        if not found:
            self.open.append(self._entries(node))
        return found

    def _counted(self, token, step) -> CardDataFound | None:
        """A key (`step` None) or a value passed: the card number's if it is the token
        counted to."""
        if self.tokens_left < 0 or not isinstance(token, str):
            return None
        self.tokens_left -= 1
        if self.tokens_left >= 0:
            return None
        return CardDataFound(
            "card number", _dotted(self.path if step is None else (*self.path, step))
        )

    def _entries(self, container):
        """A container's entries worth a visit, as (step, node): its objects and arrays and,
        when a card number is counted to, the token counted to. C-level passes pick them,
        not a Python step per value."""
        in_object = isinstance(container, _Object)
        if self.tokens_left >= 0:
            return self._counting(
                list(chain.from_iterable(container)) if in_object else container, in_object
            )
        values = map(_VALUE, container) if in_object else container
        entries = container if in_object else enumerate(container)
        return compress(entries, map(isinstance, values, repeat(_CONTAINERS)))

    def _counting(self, tokens: list, in_object: bool):
        """`_entries` when counting: `tokens` are an object's keys and values in turn (a
        key's step None) or a list's values; the keys and strings before each object or
        array are counted in bulk, and the one counted to is an entry."""

        def step_of(index: int):
            if not in_object:
                return index
            return tokens[index - 1] if index % 2 else None

        strings = list(compress(count(), map(isinstance, tokens, repeat(str))))
        containers = compress(count(), map(isinstance, tokens, repeat(_CONTAINERS)))
        counted = 0  # of `strings`
        for end in chain(containers, [len(tokens)]):
            before = bisect_left(strings, end)  # strings before this container
            if self.tokens_left < before - counted:
                index = strings[counted + self.tokens_left]
                self.tokens_left = 0  # the next token counted is this one
                yield step_of(index), tokens[index]
                return
            self.tokens_left -= before - counted
            counted = before
            if end < len(tokens):
                yield step_of(end), tokens[end]


_VALUE = itemgetter(1)
_DONE = object()


# Every byte a space but those a number literal is written with (and the `e` of `true` and
# `false`, counted out below): a number is a run of them.
_NUMBER_BYTES = bytes(
    ord("d") if chr(byte) in "0123456789+-.eE" else ord(" ") for byte in range(256)
)


def _token_at(scanned: str, position: int) -> int:
    """The number, counting from 0 in document order, of the token (a key, string, number
    literal or constant, the ones the walk counts) holding `position`: counted in C-level
    passes, not a regular-expression match per token. In the texts scanned a `"` only ever
    delimits a string (`_scanned`), so the strings started are the quotes paired, and the
    numbers and constants are in the text between strings."""
    pieces = scanned[: position + 1].split('"')
    between_strings = " ".join(pieces[0::2]).encode("utf-8", "surrogatepass")
    numbers = (b" " + between_strings.translate(_NUMBER_BYTES)).count(b" d")
    numbers -= sum(map(between_strings.count, (b"true", b"false", b"-Infinity")))
    constants = between_strings.count(b"NaN") + between_strings.count(b"Infinity")
    return len(pieces) // 2 + numbers + constants - 1


def _scanned(text: str, document) -> str:
    """The text scanned for card numbers: the body as sent, or, when it was decoded for its
    escapes, its tokens decoded (`\\u0034\\u0032...` is the digits it is), each token a JSON
    string in document order, every `"` a delimiter (`_unescaped`)."""
    if document is _NOT_DECODED or document is None:
        return text
    try:
        return _unescaped(json.dumps(document, ensure_ascii=False))
    except RecursionError:
        return text


# What `json.dumps(ensure_ascii=False)` escapes again in a decoded string: a quote, a
# backslash and the control characters. Left escaped, `hello\n4242 4242 4242 4242` reads as
# `n4242...`, a group glued to a letter, and the card is missed (issue 12).
_REESCAPED_NOT_SEPARATORS = re.compile(r'\\(?:u00[0-9a-fA-F]{2}|[\\"bf])')


def _unescaped(dumped: str) -> str:
    """The re-escapes of line breaks and tabs as the separators they are, every other one
    as a NUL (a boundary, and no separator). One C-level pass each: the first consumes
    escaped backslashes, so the `\\n`, `\\r` and `\\t` left after it are those characters."""
    unescaped = _REESCAPED_NOT_SEPARATORS.sub("\x00", dumped)
    return unescaped.replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")


_NOT_DECODED = object()


def find_card_data(raw: bytes) -> CardDataFound | None:
    """The first card number, expiry or security code in a request body, or None.

    One linear scan of the text (its strings decoded when it holds escapes) settles most
    bodies: nothing card-shaped and no key an expiry or security code could be under. A body
    with either is decoded and walked to name the field; the scan tells which token holds the
    first card number, so no string is scanned twice. One that is not JSON (or too deeply
    nested to decode) is refused with no field named.
    """
    text = raw.decode("utf-8", errors="replace")
    document = _decode(text) if "\\" in text else _NOT_DECODED
    scanned = _scanned(text, document)
    card_at = first_card_number_at(scanned)
    if card_at is None and not _KEY_HINT.search(scanned.lower()):
        return None
    if document is _NOT_DECODED:
        document = _decode(text)
    if document is not None:
        card_token = None if card_at is None else _token_at(scanned, card_at)
        found = _Walk(card_token).first_in(document)
        if found or card_at is None:
            return found
    # Not JSON, or nested deeper than it decodes: what the scan found stands, unnamed.
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
