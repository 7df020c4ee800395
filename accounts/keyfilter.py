"""Every stored key hash's first 64 bits, in this process's memory, so that while made-up keys
flood the fleet one can be told from a real key without a query for it (docs/admission.md
"Made-up keys from many addresses").

Built only when admission asks during such a flood, and rebuilt when the configuration revision
(infra/revision.py, which every committed change to a key sets) is no longer the one it was
built under: so a key issued a moment ago is in it, and a real key is never refused for want of
a row. 8 bytes a key (a sorted array, not a set): 8 MB for a million keys. Off PostgreSQL there
is no revision and no filter: every key is looked up as before.
"""

import bisect
import threading
from array import array

from accounts import keys
from accounts.models import ApiKey
from infra import revision

_lock = threading.Lock()
# (the revision it was built under, sorted prefixes), replaced whole: a reader takes one pair
_built: list = [(None, array("Q"))]


def _prefix(key_hash: str) -> int:
    return int(key_hash[:16], 16)


def _rebuilt(current: int) -> array:
    hashes = ApiKey.objects.values_list("key_hash", flat=True)  # revoked ones too: their 401s
    prefixes = array("Q", sorted(_prefix(key_hash) for key_hash in hashes))
    _built[0] = (current, prefixes)
    return prefixes


def _prefixes() -> array | None:
    """The prefixes under the current revision; None when there is none, or when another
    thread is building them (this request is then looked up as ever, never refused)."""
    current = revision.current()
    if current is None:
        return None
    built_under, prefixes = _built[0]
    if built_under == current:
        return prefixes
    if not _lock.acquire(blocking=False):
        return None
    try:
        built_under, prefixes = _built[0]
        return prefixes if built_under == current else _rebuilt(current)
    finally:
        _lock.release()


def surely_no_key(token: str) -> bool:
    """No stored key, under any pepper, can be `token` (one HMAC per pepper). False when it
    may be one, or when the filter cannot tell: the caller then asks the database."""
    if not keys.is_well_formed(token):
        return False
    prefixes = _prefixes()
    if prefixes is None:
        return False
    for key_hash in keys.candidate_hashes(token):
        wanted = _prefix(key_hash)
        at = bisect.bisect_left(prefixes, wanted)
        if at < len(prefixes) and prefixes[at] == wanted:
            return False
    return True


def forget() -> None:
    """Tests: each starts with no filter built."""
    _built[0] = (None, array("Q"))
