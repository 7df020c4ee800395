"""Model instances to and from hand-written SQL, for the statements every delivery runs.

Compiling a query through the ORM costs more CPU than PostgreSQL spends running it (a
select_related read is about a millisecond of compilation for a sub-millisecond indexed
lookup), and the delivery worker is one process bound by the GIL: its CPU per delivery is its
throughput. So those few statements are written once per process; these helpers turn their
rows into model instances exactly as the ORM would (same columns, same database converters,
then `Model.from_db`), and an instance into INSERT values as save() would prepare them.
"""

from functools import cached_property

from django.db import DEFAULT_DB_ALIAS, connections


class ModelRows:
    """The columns of one model in a SELECT (qualified by `alias`) and the instance a row's
    slice of them makes."""

    def __init__(self, model, alias: str):
        self.model, self.alias = model, alias
        self.fields = model._meta.concrete_fields

    @cached_property
    def columns(self) -> str:
        quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
        return ", ".join(f"{quote(self.alias)}.{quote(field.column)}" for field in self.fields)

    @cached_property
    def _converters(self) -> list[tuple]:
        """(index, converters, column) for each field that has any, as SQLCompiler finds them."""
        connection = connections[DEFAULT_DB_ALIAS]
        found = []
        for index, field in enumerate(self.fields):
            column = field.get_col(self.alias)
            converters = connection.ops.get_db_converters(column)
            converters += column.get_db_converters(connection)
            if converters:
                found.append((index, converters, column))
        return found

    def instance(self, row, start: int = 0):
        """The instance from `row[start:start + len(self)]`."""
        values = list(row[start : start + len(self)])
        connection = connections[DEFAULT_DB_ALIAS]
        for index, converters, column in self._converters:
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        return self.model.from_db(DEFAULT_DB_ALIAS, [f.attname for f in self.fields], values)

    def __len__(self) -> int:
        return len(self.fields)


def insert_sql(instance) -> tuple[str, list]:
    """`INSERT INTO table (columns) VALUES (...)` of an instance whose every value is set (ids
    and timestamps from field defaults), and its parameters, as save() would prepare them."""
    connection = connections[DEFAULT_DB_ALIAS]
    meta, quote = instance._meta, connection.ops.quote_name
    fields = meta.concrete_fields
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        quote(meta.db_table),
        ", ".join(quote(field.column) for field in fields),
        ", ".join(["%s"] * len(fields)),
    )
    values = [getattr(instance, field.attname) for field in fields]
    return sql, [f.get_db_prep_save(v, connection) for f, v in zip(fields, values, strict=True)]


def mark_stored(instance) -> None:
    """What save() notes on an instance once its row is written."""
    instance._state.adding, instance._state.db = False, DEFAULT_DB_ALIAS
