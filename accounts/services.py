"""Writes for merchants and API keys. Commands, admin and tests all go through these."""

import datetime
import functools
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts import keycache, keys
from accounts.models import ApiKey, Merchant
from infra import revision
from infra.rows import Columns, ModelRows

LAST_USED_RESOLUTION = datetime.timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    secret: str  # shown once, never stored


@dataclass(frozen=True)
class NewMerchant:
    merchant: Merchant
    keys: dict  # {"test": {"secret": IssuedKey, "publishable": IssuedKey}, "live": {...}}


@transaction.atomic(savepoint=False)  # the key and the revision commit together
def api_key_issue(
    *, merchant: Merchant, kind: str, livemode: bool, expires_at: datetime.datetime | None = None
) -> IssuedKey:
    secret = keys.generate_key(kind, livemode)
    api_key = ApiKey.objects.create(
        merchant=merchant,
        kind=kind,
        livemode=livemode,
        key_hash=keys.hash_key(secret, settings.API_KEY_PEPPER),
        pepper_version=settings.API_KEY_PEPPER_VERSION,
        prefix=keys.key_prefix(kind, livemode),
        last4=secret[-4:],
        expires_at=expires_at,
    )
    revision.changed()
    return IssuedKey(api_key=api_key, secret=secret)


@transaction.atomic
def merchant_create(*, name: str, email: str) -> NewMerchant:
    """A merchant with its four keys: secret and publishable, in test and live mode."""
    merchant = Merchant.objects.create(name=name, email=email)
    revision.changed()
    issued = {
        mode: {
            kind: api_key_issue(merchant=merchant, kind=kind, livemode=mode == "live")
            for kind in ("secret", "publishable")
        }
        for mode in ("test", "live")
    }
    return NewMerchant(merchant=merchant, keys=issued)


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Idempotent: revoking a revoked key keeps its first revocation time (under the row
    lock). The configuration revision is set in the same transaction, so every process drops
    its cached lookup at its next request once this commits (accounts/keycache.py)."""
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=api_key.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            revision.changed()
    api_key.refresh_from_db()
    return api_key


def api_key_find(secret: str, *, before_query: Callable[[], None] | None = None) -> ApiKey | None:
    """The key (with its merchant) for a presented secret: one indexed query by hash, or none
    when accounts.keycache holds the row.

    A key hashed under an older pepper is re-hashed under the current one on use, so a pepper
    can be retired once every live key has been used (or rolled) since the rotation.
    `before_query` runs when the database must be asked (it may raise to refuse that).
    """
    if not keys.is_well_formed(secret):
        return None
    # Cached under the current pepper's hash: what key_hash is once a key has been used.
    current_hash = keys.hash_key(secret, settings.API_KEY_PEPPER)
    if before_query is not None and not keycache.lookups.holds(current_hash):
        before_query()  # never cached here (a made-up key): refused before any query at all
        before_query = None
    cached = _assumed_entry(current_hash)
    if cached is None:
        read_under, cached = keycache.lookups.get(current_hash)  # read before the database's row
    if cached is not None:
        row, last_used_at = cached
        api_key = _key_with_merchant_from(row)
        api_key.last_used_at = last_used_at
        return api_key
    if before_query is not None:
        before_query()
    row = _key_with_merchant_row(list(keys.candidate_hashes(secret)))
    if row is None:
        return None  # not cached: a scan of made-up keys must not fill memory
    api_key = _key_with_merchant_from(row)
    if api_key.pepper_version != settings.API_KEY_PEPPER_VERSION:
        api_key.key_hash = current_hash
        api_key.pepper_version = settings.API_KEY_PEPPER_VERSION
        with transaction.atomic():  # the revision changes: not worth caching
            api_key.save(update_fields=["key_hash", "pepper_version"])
            revision.changed()
    else:
        keycache.lookups.put(current_hash, read_under, (row, api_key.last_used_at))
    return api_key


def _assumed_entry(key_hash: str) -> tuple | None:
    """The cached entry for `key_hash` with its revision assumed, not read, where the request's
    first statement confirms it (infra.revision.assume: an idempotent POST's claim); None
    otherwise, or when the key's use is due to be recorded (a write must not run before the
    confirmation)."""
    if not revision.assumable():
        return None
    latest = keycache.lookups.latest(key_hash)
    if latest is None or _use_due(latest[1][1]):
        return None
    revision.assume(latest[0])
    return latest[1]


def _use_due(last_used_at) -> bool:
    return not last_used_at or timezone.now() - last_used_at >= LAST_USED_RESOLUTION


_KEY_ROWS, _MERCHANT_ROWS = ModelRows(ApiKey, "k"), ModelRows(Merchant, "m")


@functools.cache
def _key_with_merchant_sql(hash_count: int) -> str:
    k, m = Columns(ApiKey, "k"), Columns(Merchant, "m")
    return (
        f"SELECT {_KEY_ROWS.columns}, {_MERCHANT_ROWS.columns} "
        f"FROM {k.table} k JOIN {m.table} m ON {m.id} = {k.merchant} "
        f"WHERE {k.key_hash} IN ({', '.join(['%s'] * hash_count)}) ORDER BY {k.id} LIMIT 1"
    )


def _key_with_merchant_row(hashes: list[str]) -> tuple | None:
    """ApiKey.objects.select_related("merchant").filter(key_hash__in=hashes).first(), by hand:
    it runs on every request, and the ORM would spend longer compiling it than running it."""
    with connection.cursor() as cursor:
        cursor.execute(_key_with_merchant_sql(len(hashes)), hashes)
        return cursor.fetchone()


def _key_with_merchant_from(row: tuple) -> ApiKey:
    """Fresh instances (JSON parsed anew) from the row: requests never share them."""
    api_key = _KEY_ROWS.instance(row)
    api_key.merchant = _MERCHANT_ROWS.instance(row, start=len(_KEY_ROWS))
    return api_key


def api_key_touch(api_key: ApiKey) -> None:
    """Record use, at most once a minute per key so authentication stays a read. The
    revision is not changed: nothing decides on `last_used_at`, and the cached entry is
    kept in step by `keycache.touched`."""
    if not _use_due(api_key.last_used_at) or revision.assumed() is not None:
        return  # (assumed: recorded by a later request, not before the revision is confirmed)
    now = timezone.now()
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    api_key.last_used_at = now
    keycache.touched(api_key.key_hash, now)
