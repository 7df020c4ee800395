"""Finding card numbers in text, and redacting card-shaped strings from it (the raw-card guard's
scan, api.carddata, and the log filter, api.logfilters, share this one rule).

The rules are written out in docs/request-safety.md ("Raw-card guard"): a card number is
written as card numbers are printed and typed: 13-19 digits in one group, or in the groups of
a card layout (4-4-4-4, 4-4-4-4-3 and shorter last groups, 4-6-5, 4-6-4) with one separator
throughout (a space, a tab, 2-4 blanks, a line break, `-`, `.`, `/`, `_`, `,`, `+` or `:`), and
it passes the
Luhn check. Digits and separators are compared after NFKC (full-width digits, no-break
spaces), every dash as `-`, an invisible separator (soft hyphen, zero-width space) as `-` too
and a Unicode line separator as a line break; a group glued to a letter or a digit belongs to
a word or a longer number and is not part of one. Log redaction hides the same shapes,
Luhn-valid or not (`redact`).

Every pass is linear in the text: bounded regular expressions (possessive, no nested
repetition), and one Luhn check of all the candidates (at most a few per digit run) together,
a few C-level operations on all their digits rather than a Python step per candidate.
"""

import re
import unicodedata
from itertools import repeat
from operator import itemgetter

REDACTED = "[redacted]"
CARD_MIN_DIGITS = 13

# Blocks holding every character whose NFKC form is one ASCII digit or separator (a test
# checks against all of Unicode): full-width forms, superscripts, no-break and thin spaces,
# vertical and small forms, the Hebrew alternative plus sign.
_COMPATIBILITY_BLOCKS = (
    range(0x00A0, 0x00BA),
    range(0x2000, 0x2090),
    range(0x2460, 0x24EB),
    range(0x3000, 0x3001),
    range(0xFB29, 0xFB2A),
    range(0xFE10, 0xFE20),
    range(0xFE30, 0xFE70),
    range(0xFF00, 0xFF40),
    range(0x1D7CE, 0x1D800),
    range(0x1FBF0, 0x1FBFA),
)
# The separators of one character (blanks and line breaks, which also come in runs, apart);
# `,`, `+` (a form-encoded space) and `:` since issue 35.
_ONE_CHARACTER = "-./_,+:"
_SEPARATORS = " \t" + _ONE_CHARACTER
_ONE_CHARACTER_CLASS = re.escape(_ONE_CHARACTER)  # inside `[...]`
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
_SEP = rf"(?:[{_ONE_CHARACTER_CLASS}\n]|\r\n?+|[ \t]{{1,4}}+)"
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
    rf"(?<![0-9][{_ONE_CHARACTER_CLASS}\t \n\r])(?<![0-9]\r\n)"
    r"(?<![0-9][ \t]{2})(?<![0-9][ \t]{3})(?<![0-9][ \t]{4})"
)
_RUN_ENDS_HERE = rf"(?![{_ONE_CHARACTER_CLASS}\n\r][0-9])(?!\r\n[0-9])(?![ \t]{{1,4}}+[0-9])"
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
    joined = "|".join(candidates).encode("ascii")  # ASCII: CARD_SHAPED matches ASCII only
    return joined.translate(None, _SEPARATOR_BYTES).split(b"|")  # `|`: no separator


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
