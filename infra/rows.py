"""Model instances from hand-written SQL, for the few queries on every request's path; and
new instances for those inserts, made as the model's constructor makes them (`new_instance`).

Building a query through the ORM costs more CPU than running it (a select_related lookup is
about a millisecond of compilation for a sub-millisecond indexed read). For those queries the
SQL is written once per process, and `ModelRows` turns each row back into a model instance
exactly as the ORM would: the same column order, the same database converters (JSON text to
dicts, time zones), then `Model.from_db`.
"""

import datetime
import json
from collections.abc import Callable
from functools import cached_property, lru_cache
from typing import NamedTuple

import orjson
from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.models import ForeignKey, JSONField, Model
from django.db.models import fields as model_fields
from django.db.models.base import ModelState
from django.db.models.expressions import DatabaseDefault
from django.db.models.fields import NOT_PROVIDED, return_None
from django.db.models.signals import post_init, pre_init
from psycopg.types.json import Jsonb

from infra.keyed import keyed_cursor


class ModelRows:
    """The columns of one model in a SELECT (qualified by `alias`, if given) or a RETURNING
    clause, and the instance a row's slice of them makes."""

    def __init__(self, model, alias: str | None = None, using: str = DEFAULT_DB_ALIAS):
        self.model, self.using = model, using
        self.alias = alias or model._meta.db_table
        self.qualify = alias is not None
        self.fields = model._meta.concrete_fields

    @cached_property
    def columns(self) -> str:
        quote = connections[self.using].ops.quote_name
        prefix = f"{quote(self.alias)}." if self.qualify else ""
        return ", ".join(prefix + quote(field.column) for field in self.fields)

    @cached_property
    def _converters(self) -> list[tuple]:
        """(index, converters, column) for each field that has any, as SQLCompiler finds them."""
        connection = connections[self.using]
        found = []
        for index, field in enumerate(self.fields):
            column = field.get_col(self.alias)
            converters = connection.ops.get_db_converters(column) + column.get_db_converters(
                connection
            )
            if converters:
                found.append((index, converters, column))
        return found

    def instance(self, row, start: int = 0):
        """The instance from `row[start:start + len(fields)]`."""
        values = list(row[start : start + len(self.fields)])
        connection = connections[self.using]
        for index, converters, column in self._converters:
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        attnames = _attnames(self.model)
        if not _read_plainly(self.model):
            return self.model.from_db(self.using, list(attnames), values)
        # What from_db makes (its positional __init__ sets each attname, then marks it stored),
        # without the call a field and the two signals' sends.
        instance = self.model.__new__(self.model)
        state = instance._state = ModelState()
        state.adding, state.db = False, self.using
        instance.__dict__.update(zip(attnames, values, strict=True))
        return instance

    def __len__(self) -> int:
        return len(self.fields)


def new_instance(model, **values):
    """`model(**values)` in about a third of its calls, for a model with no __init__ or
    pre/post_init receivers of its own (checked; no property is taken either): each field's
    value or default straight into the instance's dict, as Django's __init__ leaves it, where
    that spends a call or two a field (a create makes four: its payment, its operation and
    two events). A foreign key takes its related instance by the field's name (the id
    copied and the instance cached, as the descriptor does) or its id by the attname."""
    instance = model.__new__(model)
    state = instance._state = ModelState()
    attributes = instance.__dict__
    for name, attname, default, is_constant, relation in _construction(model):
        if attname in values:
            attributes[attname] = values.pop(attname)
        elif name in values:
            related = state.fields_cache[name] = values.pop(name)
            attributes[attname] = None if related is None else getattr(related, relation.target)
            if related is not None:
                if state.db is None:
                    state.db = router.db_for_write(model, instance=related)
                if relation.reverse is not None:  # one to one: the other side knows it too
                    relation.reverse.set_cached_value(related, instance)
        else:
            attributes[attname] = default if is_constant else default()
    if values:
        raise TypeError(f"{model.__name__}() got unexpected keyword arguments: {list(values)}")
    return instance


@lru_cache(maxsize=64)
def _construction(model) -> tuple:
    """(name, attname, default, is_constant, relation) per concrete field, in Django's order:
    `default` the value every instance shares (as Field.get_default shares it) or the
    callable that makes one; `relation` a foreign key's (_Relation)."""
    if not _plain(model):
        raise TypeError(f"new_instance() cannot stand for {model.__name__}'s own __init__")
    plan = []
    for field in model._meta.concrete_fields:
        if field.generated or (field.is_relation and not isinstance(field, ForeignKey)):
            raise TypeError(f"new_instance() does not make {model.__name__}.{field.name}")
        relation = None
        if field.is_relation:
            reverse = field.remote_field if field.one_to_one else None
            relation = _Relation(field.target_field.attname, reverse)
        get = field._get_default  # Django 5.2's: what get_default() calls
        if get is return_None or get is str:
            plan.append((field.name, field.attname, get(), True, relation))
        elif not field.has_default() and field.has_db_default():
            # One DatabaseDefault per field, shared: it only marks the value as left to the
            # database (instance_values drops it; an INSERT Django compiles copies it).
            plan.append((field.name, field.attname, get(), True, relation))
        elif field.has_default() and not callable(field.default):
            plan.append((field.name, field.attname, field.default, True, relation))
        else:
            plan.append((field.name, field.attname, get, False, relation))
    return tuple(plan)


@lru_cache(maxsize=64)
def _read_plainly(model) -> bool:
    """Whether `from_db` of `model` is Django's over Django's __init__ (`_plain`)."""
    return _plain(model) and model.from_db.__func__ is Model.from_db.__func__


class _Relation(NamedTuple):
    target: str  # the related model's attname the key copies
    reverse: object  # a one-to-one's remote field (which caches this side), else None


@lru_cache(maxsize=64)
def _plain(model) -> bool:
    """Whether Django's __init__ is all there is to making an instance of `model`: none of
    its own, and no pre_init or post_init receiver (as connected when first asked: models
    connect theirs at start-up)."""
    return model.__init__ is Model.__init__ and not (
        pre_init.has_listeners(model) or post_init.has_listeners(model)
    )


class Columns:
    """Quoted names for hand-written SQL, from the model's metadata: `.table`, and each field's
    column by its name (`Columns(Delivery, "d").claimed_until` is `"d"."claimed_until"`), so no
    statement spells a column (or forgets a db_column) by hand."""

    def __init__(self, model, alias: str | None = None, using: str = DEFAULT_DB_ALIAS):
        quote = connections[using].ops.quote_name
        self.table = quote(model._meta.db_table)
        self._prefix = f"{quote(alias)}." if alias else ""
        self._meta, self._quote = model._meta, quote

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._prefix + self._quote(self._meta.get_field(name).column)


def insert_sql(
    model,
    rows: list[dict],
    *,
    suffix: str = "",
    async_commit: bool = False,
    select_tail: str | None = None,
    selected: tuple[tuple[str, str], ...] = (),
    using: str = DEFAULT_DB_ALIAS,
):
    """-> (sql, params) to INSERT `rows` in one statement, each a dict of field (att)name ->
    value, all with the same keys; `suffix` adds e.g. `ON CONFLICT DO NOTHING RETURNING id`.
    Values are prepared as save() sends them (`prepared`); a column None in every row is left
    out (_written_names).

    `async_commit` (one row, run in autocommit): on PostgreSQL the statement's transaction
    commits without waiting for its WAL to reach disk. Only for a row whose loss in a server
    crash loses nothing: any later commit that waits flushes the WAL before it too. Inside a
    transaction it is a plain insert, so it can never make a caller's whole transaction lax.

    `select_tail` (one row): the row comes from `SELECT <values> <select_tail>` instead of
    VALUES, so that a FROM or WHERE clause can decide whether it is written at all (with
    `async_commit`, a WHERE clause only). `selected` (with `select_tail`): (attname, SQL)
    pairs whose values the SELECT takes from its FROM rather than from a parameter, e.g. a
    key another part of the same WITH returns (`("idempotency_record_id", "claimed.id")`
    with `select_tail="FROM claimed ..."`); the rows do not hold them."""
    connection = connections[using]
    if async_commit and connection.vendor == "postgresql" and connection.get_autocommit():
        select_tail = f"FROM {_ASYNC_COMMIT} {select_tail or ''}".rstrip()
    names = _written_names(model, rows)
    sql, adapting = _insert_statement(model, names, len(rows), suffix, select_tail, selected, using)
    return sql, [value for row in rows for value in _adapted(row, names, adapting, connection)]


def _adapted(row: dict, names: tuple, adapting: tuple, connection) -> list:
    """A row's values as save() would send them (`prepared`), `adapting` their (field, kinds
    sent as they are) from `_target`: such a value is taken without a call."""
    values = [row[name] for name in names]
    return [
        value if type(value) in as_is else prepared(field, value, connection)
        for value, (field, as_is) in zip(values, adapting, strict=True)
    ]


def prepared(field, value, connection):
    """`value` as save() sends it for `field` (its get_db_prep_save; JSON by orjson). A value
    of the kind a field of its class usually holds takes only the step of that chain that
    does anything (`_SHORTCUTS`): 5 calls become 1 or 2 for most of a create's 46 values."""
    shortcut = _shortcut(type(field))
    if shortcut is not None and type(value) in shortcut.kinds:
        return shortcut.prepare(field, value, connection)
    return _json_by_orjson(field.get_db_prep_save(value, connection))


def _as_is(field, value, connection):
    return value


def _integer(field, value, connection):
    # On PostgreSQL an Int4/Int8 (by the column's type), which prepared statements rely on.
    return connection.ops.adapt_integerfield_value(value, field.get_internal_type())


def _datetime(field, value, connection):
    if value.utcoffset() is None:  # naive: Django warns and makes it aware
        return field.get_db_prep_save(value, connection)
    return connection.ops.adapt_datetimefield_value(value)


def _json(field, value, connection):
    if field.encoder is None and connection.vendor == "postgresql":
        return Jsonb(value, dumps=_json_bytes)  # Django's adapt_json_value, dumped by orjson
    return _json_by_orjson(connection.ops.adapt_json_value(value, field.encoder))


def _foreign_key(field, value, connection):
    if value == "":  # NULL on some backends: Django decides
        return field.get_db_prep_save(value, connection)
    return prepared(field.target_field, value, connection)


class _Shortcut(NamedTuple):
    base: type
    kinds: tuple  # the exact types of value it takes (a str subclass, e.g. a choice, does not)
    prepare: Callable  # (field, value, connection) -> the value sent


_SHORTCUTS = (
    _Shortcut(model_fields.CharField, (str, type(None)), _as_is),
    _Shortcut(model_fields.BooleanField, (bool, type(None)), _as_is),
    _Shortcut(model_fields.IntegerField, (int,), _integer),
    _Shortcut(model_fields.DateTimeField, (datetime.datetime,), _datetime),
    _Shortcut(JSONField, (dict, list), _json),
    _Shortcut(ForeignKey, (str, int), _foreign_key),
)
# A field class takes its base's shortcut only if it prepares values as the base does.
_PREPARATION = ("get_db_prep_save", "get_db_prep_value", "get_prep_value", "to_python")


@lru_cache(maxsize=128)
def _shortcut(field_class) -> _Shortcut | None:
    for shortcut in _SHORTCUTS:
        if issubclass(field_class, shortcut.base) and all(
            getattr(field_class, name) is getattr(shortcut.base, name) for name in _PREPARATION
        ):
            return shortcut
    return None


def _json_bytes(value) -> bytes:
    """A JSON column's text by orjson (api.renderers' library: a create writes the payment's
    JSON columns and two events holding the whole payment); what orjson refuses goes to
    json.dumps, which Django would have used, and writes it or raises as before."""
    try:
        return orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_DATETIME)
    except orjson.JSONEncodeError:
        return json.dumps(value).encode()


def _json_by_orjson(param):
    """Django's adapted JSON value (psycopg's Jsonb, dumped by json.dumps: no field of ours
    names an encoder) dumped by `_json_bytes` instead; any other value as it is."""
    if getattr(param, "dumps", None) is json.dumps:
        return type(param)(param.obj, dumps=_json_bytes)
    return param


def _written_names(model, rows: list[dict]) -> tuple:
    """The rows' names but those None in every row whose column has no default of the
    database's: left out, the column is NULL all the same, with one value fewer to adapt and
    send (a create's chained statement stays under psycopg's 50-parameter parse cache)."""
    keep = _database_defaulted(model)
    if len(rows) == 1:  # every statement of a create: one pass over its one row
        return tuple([name for name, value in rows[0].items() if value is not None or name in keep])
    written = {name for row in rows for name, value in row.items() if value is not None}
    return tuple([name for name in rows[0] if name in keep or name in written])


@lru_cache(maxsize=64)
def _database_defaulted(model) -> frozenset:
    """Attnames of the fields the database fills when left out (`db_default`): a None there
    must be written, or the default would replace it."""
    return frozenset(
        field.attname
        for field in model._meta.concrete_fields
        if field.db_default is not NOT_PROVIDED
    )


# A FROM item that turns synchronous_commit off for the statement's own transaction.
_ASYNC_COMMIT = "(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit"


@lru_cache(maxsize=256)
def _insert_statement(
    model, names: tuple, count: int, suffix: str, select_tail, selected: tuple, using
):
    """The INSERT's text and fields for `count` rows of `names` (and the `selected` columns):
    the same few shapes run on every request, so each is written once per process."""
    if set(names) & {name for name, _ in selected}:
        raise ValueError("a selected column is not also a value")
    table, columns, adapting = _target(model, names + tuple(name for name, _ in selected), using)
    adapting = adapting[: len(names)]  # the selected columns take no parameter
    values = ["%s"] * len(names) + [expression for _, expression in selected]
    if select_tail is not None:
        # One row only: PostgreSQL gives the parameters of a single SELECT the target
        # columns' types, where a UNION of several would make an untyped NULL text.
        if count != 1:
            raise ValueError("an INSERT ... SELECT inserts one row")
        source = f"SELECT {', '.join(values)} {select_tail}"
    elif selected:
        raise ValueError("selected columns need an INSERT ... SELECT (select_tail)")
    else:
        placeholders = ", ".join(values)
        source = "VALUES " + ", ".join([f"({placeholders})"] * count)
    return f"INSERT INTO {table} ({columns}) {source} {suffix}".rstrip(), adapting


def _target(model, names: tuple, using: str) -> tuple[str, str, tuple]:
    """-> the model's table and the columns of `names`, quoted, and for each its field and
    the kinds of value it sends as they are (its shortcut's, if that is `_as_is`)."""
    meta = model._meta
    fields = [meta.get_field(name) for name in names]
    quote = connections[using].ops.quote_name
    columns = tuple((field, _sent_as_is(type(field))) for field in fields)
    return quote(meta.db_table), ", ".join(quote(field.column) for field in fields), columns


def _sent_as_is(field_class) -> tuple:
    shortcut = _shortcut(field_class)
    return shortcut.kinds if shortcut is not None and shortcut.prepare is _as_is else ()


def insert_rows(
    model,
    rows: list[dict],
    *,
    suffix: str = "",
    async_commit: bool = False,
    keyed: bool = False,
    using: str = DEFAULT_DB_ALIAS,
):
    """Runs insert_sql(); -> the rows RETURNING gave ([] without). `keyed`: prepared, as a
    statement of one shape run on every request (infra.keyed)."""
    sql, params = insert_sql(model, rows, suffix=suffix, async_commit=async_commit, using=using)
    with keyed_cursor(using) if keyed else connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if "RETURNING" in suffix.upper() else []


def copy_rows(model, rows: list[dict], *, using: str = DEFAULT_DB_ALIAS) -> None:
    """Writes `rows` (as insert_rows() takes them) by COPY on PostgreSQL, insert_rows()
    elsewhere: however many rows, no statement text to compose, for psycopg to convert or for
    the server to parse and plan (a batch's INSERT of hundreds of rows is past psycopg's caches
    and the server's prepared statements: both did that work anew for every batch). Values are
    adapted by the fields as insert_rows() adapts them. No ON CONFLICT: a duplicate key fails
    the whole COPY (IntegrityError)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        insert_rows(model, rows, using=using)
        return
    names = _written_names(model, rows)
    statement, adapting = _copy_statement(model, names, using)
    # Django's errors, as its execute() raises them (COPY is psycopg's own call).
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.copy(statement) as copy,
    ):
        for row in rows:
            copy.write_row(_adapted(row, names, adapting, connection))


@lru_cache(maxsize=64)
def _copy_statement(model, names: tuple, using: str):
    table, columns, adapting = _target(model, names, using)
    return f"COPY {table} ({columns}) FROM STDIN", adapting


def instance_values(instance) -> dict:
    """Every concrete field's value of an instance, as a row for insert_sql(), except those
    left to the database (`db_default` not overridden: the column's default, or a trigger,
    fills them, as Django's own INSERT would leave them out)."""
    model = type(instance)
    attributes = instance.__dict__  # what a field's descriptor would read, without the call
    values = {
        name: attributes[name] if name in attributes else getattr(instance, name)
        for name in _attnames(model)
    }
    for name in _database_defaulted(model):  # the fields that may hold a DatabaseDefault
        if isinstance(values[name], DatabaseDefault):
            del values[name]
    return values


@lru_cache(maxsize=64)
def _attnames(model) -> tuple:
    return tuple(field.attname for field in model._meta.concrete_fields)


def mark_stored(instance, using: str = DEFAULT_DB_ALIAS) -> None:
    """What save() notes on an instance once its row is written."""
    instance._state.adding, instance._state.db = False, using


def insert_instances(instances: list, using: str = DEFAULT_DB_ALIAS) -> None:
    """Model instances whose every value is already set (ids and timestamps come from field
    defaults) in one statement: what save(force_insert=True) or bulk_create would write,
    without their per-call compilation. The instances are then known to be stored, as after
    save().

    Instances of several models (a new payment and the events about it) are one INSERT per
    model chained in a WITH on PostgreSQL, one round trip; elsewhere one INSERT per model.
    Django's foreign keys are checked at commit (deferred), so their order is free."""
    rows_by_model: dict = {}
    for obj in instances:
        rows_by_model.setdefault(type(obj), []).append(instance_values(obj))
    statements = [insert_sql(model, rows, using=using) for model, rows in rows_by_model.items()]
    connection = connections[using]
    if len(statements) > 1 and connection.vendor == "postgresql":
        statements = [chained([], statements)]
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
    for obj in instances:
        mark_stored(obj, using)


class Fenced(NamedTuple):
    """What insert_instances_if did: whether its fence changed its row (the instances were
    inserted), whether each of its `then` changed one, and each of its `reads`' value."""

    changed: bool
    then: list[bool]
    read: list


def insert_instances_if(
    update: tuple[str, list], instances: list, using=DEFAULT_DB_ALIAS, *, then=(), reads=()
) -> Fenced:
    """insert_instances(instances) only if `update` (an UPDATE's sql and params, on at most one
    row) changes a row, and then each of `then` (UPDATEs of at most one row each, their sql
    ending in a WHERE clause); also each of `reads` (a SELECT of one value), whatever the
    fence did. For writes fenced by a row that only one writer gets to change (a claim still
    held, an operation still started): the fence and the writes in one round trip on
    PostgreSQL, where the UPDATE runs in a WITH and each instance is an INSERT ... SELECT,
    each of `then` an UPDATE, that writes only if the fence returned a row; elsewhere the
    statements one by one."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        read = [_value_of(statement, using) for statement in reads]
        if not changed_a_row(update, using):
            return Fenced(False, [False] * len(then), read)
        insert_instances(instances, using)
        return Fenced(True, [changed_a_row(statement, using) for statement in then], read)
    sql, params = update
    only_if_changed = "WHERE EXISTS (SELECT FROM changed)"
    named = [("changed", f"{sql} RETURNING 1", params)]
    named += [
        (f"insert_{n}", *insert_sql(type(obj), [values], select_tail=only_if_changed, using=using))
        for n, (obj, values) in enumerate((obj, instance_values(obj)) for obj in instances)
    ]
    named += [
        (f"then_{n}", f"{then_sql} AND EXISTS (SELECT FROM changed) RETURNING 1", then_params)
        for n, (then_sql, then_params) in enumerate(then)
    ]
    counted = ["changed"] + [f"then_{n}" for n in range(len(then))]
    columns = [f"(SELECT count(*) FROM {name})" for name in counted]
    columns += [f"({read_sql})" for read_sql, _ in reads]
    read_params = [param for _, params in reads for param in params]
    final = (f"SELECT {', '.join(columns)}", read_params)
    with keyed_cursor(using) as cursor:
        cursor.execute(*chained(named, [final]))
        row = cursor.fetchone()
    changed, *then_changed = (count > 0 for count in row[: len(counted)])
    if changed:
        for obj in instances:
            mark_stored(obj, using)
    return Fenced(changed, then_changed, list(row[len(counted) :]))


def _value_of(statement: tuple[str, list], using: str):
    with connections[using].cursor() as cursor:
        cursor.execute(*statement)
        return cursor.fetchone()[0]


def changed_a_row(statement: tuple[str, list], using: str = DEFAULT_DB_ALIAS) -> bool:
    """Runs `statement` (sql, params), an UPDATE of one row by its key (infra.keyed): whether it
    changed it."""
    with keyed_cursor(using) as cursor:
        cursor.execute(*statement)
        return cursor.rowcount == 1


def chained(named: list[tuple[str, str, list]], statements: list[tuple[str, list]]):
    """-> (sql, params) of one statement: the `named` ones (name, sql, params) and all but the
    last of `statements` in a WITH, then the last. PostgreSQL runs every data-modifying part of
    a WITH, read or not, on one snapshot: none sees another's rows, only what it RETURNs."""
    *rest, (last_sql, last_params) = statements
    parts = named + [(f"insert_{n}", sql, params) for n, (sql, params) in enumerate(rest)]
    sql = "WITH {} {}".format(", ".join(f"{name} AS ({sql})" for name, sql, _ in parts), last_sql)
    return sql, [param for *_, params in parts for param in params] + last_params
