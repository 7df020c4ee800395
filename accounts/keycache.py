"""A per-process cache of the API-key lookup that authenticates every request
(docs/api-conventions.md "Keys").

An entry holds the key-and-merchant row as the database returned it, with the key's
last_used_at; each request builds fresh instances from it, so nothing one request changes is
seen by another. Entries live under the configuration revision (infra/revision.py), which every
write to a key or a merchant changes in its own transaction (`revision.changed()` in
accounts/services.py and the merchant admin). `API_KEY_CACHE` off: nothing is cached.
"""

from infra.revision import RevisionCache

# key hash (under the current pepper) -> (row, last_used_at)
lookups = RevisionCache("API_KEY_CACHE", max_entries=4096)


def touched(key_hash: str, last_used_at) -> None:
    """The key's use was recorded: keeps its entry's last_used_at in step, so the next
    request does not record it again within the minute (the revision is not set for it:
    nothing reads it to decide)."""
    lookups.update(key_hash, lambda entry: (entry[0], last_used_at))
