"""The database: a URL, PostgreSQL's binding, preparing and pool options, or the embedded
SQLite defaults (docs/operations.md)."""

from urllib.parse import unquote

from config.settings.base import VAR_DIR, env

# --- database --------------------------------------------------------------------------------
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
# A Unix-socket directory is written percent-encoded in the URL, as libpq reads it
# (postgres://user@%2Fvar%2Frun%2Fpostgresql/name); django-environ leaves it encoded.
DATABASES["default"]["HOST"] = unquote(DATABASES["default"].get("HOST", ""))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Writers take the lock when the transaction begins, so concurrent requests queue for it
    # instead of failing with "database is locked" half-way through.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    options = DATABASES["default"].setdefault("OPTIONS", {})
    # Parameters bound by the server: no quoting in Python, and the few keyed statements on
    # every request's path prepared (infra.keyed). Off for a pooler that cannot keep prepared
    # statements (PgBouncer in transaction mode).
    options["server_side_binding"] = env.bool("DATABASE_SERVER_SIDE_BINDING", default=True)
    # psycopg prepares nothing by itself: a statement it prepared for running often would get
    # a generic plan, made without the merchant id, with which a small merchant's filtered
    # list walks a big merchant's rows (docs/data.md "Reads at scale"). infra.keyed prepares
    # only statements that name their rows by key.
    options["prepare_threshold"] = None
    # Our backend: the check of a connection before a request uses it, and the C loader of
    # timestamps (config/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "config.postgresql"
    # A connection is checked (a poll of its socket, no round trip) before a request uses it:
    # after a server restart, no dead one reaches a request.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_CHECK", default=True)
    if env.bool("DATABASE_POOL", default=False):
        # For a process with many more threads than connections it may hold: each request
        # takes one from psycopg_pool and hands it back at its end.
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool owns connection lifetime
        options["pool"] = {
            "min_size": env.int("DATABASE_POOL_MIN", default=2),
            "max_size": env.int("DATABASE_POOL_MAX", default=16),
            "timeout": 10,
        }
    else:
        # Each thread keeps its connection from one request to the next (Django's persistent
        # connections): a process opens one per thread that uses the database, and a request
        # takes nothing from a pool and gives nothing back (docs/payments.md "Counted in
        # instructions": 2.7% of a create's instructions).
        DATABASES["default"]["CONN_MAX_AGE"] = None
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
