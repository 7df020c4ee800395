"""Keyed statements (infra.keyed): PostgreSQL prepares them, and nothing else, and their generic
plans walk only primary keys whatever the statistics say (docs/payments.md "Keyed
statements")."""

import datetime
import importlib
import json

import factory
import pytest
from django.db import DataError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from infra import keyed
from infra.keyed import keyed_cursor
from payments.models import Operation
from tests.factories import EventFactory, IdempotencyRecordFactory, TokenFactory
from tests.payments.support import APPROVED, payment_body, tokenize
from tests.support.calls import python_calls_while

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

RESOURCE_INDEX = importlib.import_module("events.migrations.0010_resource_index")


def prepared_here() -> dict[str, tuple]:
    """This connection's prepared statements: text -> (name, parameter types, generic plans)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, name, parameter_types::text[], generic_plans "
            "FROM pg_prepared_statements"
        )
        return {text: rest for text, *rest in cursor.fetchall()}


def test_a_statement_run_often_is_not_prepared():
    with connection.cursor() as cursor:
        for _ in range(12):
            cursor.execute("SELECT %s::int + 40", [2])
            assert cursor.fetchone() == (42,)
    assert "SELECT $1::int + 40" not in prepared_here()


def test_a_keyed_statement_is_prepared_and_runs_on_its_generic_plan():
    for _ in range(8):
        with keyed_cursor() as cursor:
            cursor.execute("SELECT %s::int + 41", [1])
            assert cursor.fetchone() == (42,)
    *_, generic_plans = prepared_here()["SELECT $1::int + 41"]
    assert generic_plans >= 2  # PostgreSQL's five custom plans first, then its generic one
    with connection.cursor() as cursor:  # the connection prepares nothing by itself again
        for _ in range(12):
            cursor.execute("SELECT %s::int + 1", [1])
    assert "SELECT $1::int + 1" not in prepared_here()


def test_nothing_is_prepared_without_binding_by_the_server(monkeypatch):
    """A pooler that cannot keep prepared statements (DATABASE_SERVER_SIDE_BINDING=false)."""
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", False)
    for _ in range(8):
        with keyed_cursor() as cursor:
            cursor.execute("SELECT %s::int + 39", [3])
    assert "SELECT $1::int + 39" not in prepared_here()


def psycopg_cursor_of(wrapper):
    return wrapper.cursor  # KeyedCursor, as Django's CursorWrapper, names psycopg's cursor so


def run_keyed(sql: str, value: int):
    """`sql` run on a keyed cursor with `value`: its psycopg cursor and that cursor's adapting
    state (psycopg's Transformer)."""
    with keyed_cursor() as cursor:
        cursor.execute(sql, [value])
        assert cursor.fetchone() == (value,)
    return psycopg_cursor_of(cursor), psycopg_cursor_of(cursor)._tx


def test_a_keyed_statement_runs_again_on_its_cursor_as_its_last_run_left_it():
    first = run_keyed("SELECT %s::int", 2)
    again = run_keyed("".join(["SELECT %s", "::int"]), 3)  # the same text, another str
    other = run_keyed("SELECT %s::int + 0", 4)

    assert again[0] is first[0] and not first[0].closed
    assert again[1] is first[1]  # psycopg kept the dumpers and loaders it had looked up
    assert other[0] is not first[0]


def test_a_connection_keeps_a_bounded_number_of_statement_cursors(monkeypatch):
    monkeypatch.setattr(keyed, "KEPT_STATEMENTS", 2)
    oldest, _ = run_keyed("SELECT %s::int + 0 * 1", 1)
    run_keyed("SELECT %s::int + 0 * 2", 2)
    run_keyed("SELECT %s::int + 0 * 3", 3)

    assert oldest.closed  # the least recently run, closed when a third came
    assert len(connection.connection._keyed_cursors) == 2


def test_an_open_connection_is_not_asked_to_connect_again():
    run_keyed("SELECT %s::int", 5)  # the connection is open from here on
    calls = python_calls_while(lambda: run_keyed("SELECT %s::int", 6))

    assert "BaseDatabaseWrapper.ensure_connection" not in calls
    assert "KeyedCursor.execute" in calls  # the profile saw the statement run


@pytest.mark.django_db(transaction=True)  # the connection closed, then opened again
def test_a_new_connection_gets_a_cursor_of_its_own():
    with keyed_cursor() as before:
        before.execute("SELECT 1")
    connection.close()
    with keyed_cursor() as after:
        after.execute("SELECT %s::int", [3])
        assert after.fetchone() == (3,)
    assert psycopg_cursor_of(after) is not psycopg_cursor_of(before)
    assert psycopg_cursor_of(after).connection is connection.connection


def test_a_kept_cursor_is_seen_by_query_capture_and_raises_djangos_errors():
    with CaptureQueriesContext(connection) as captured, keyed_cursor() as cursor:
        cursor.execute("SELECT %s::int + 1", [4])
    assert [query["sql"] for query in captured.captured_queries] == ["SELECT 4::int + 1"]
    with pytest.raises(DataError), keyed_cursor() as cursor:
        cursor.execute("SELECT 1 / %s::int", [0])


def test_the_connections_execute_wrappers_see_keyed_statements():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper), keyed_cursor() as cursor:
        cursor.execute("SELECT %s::int + 2", [5])
        assert cursor.fetchone() == (7,)
    assert seen == ["SELECT %s::int + 2"]


def fill_hot_tables(merchant) -> None:
    """Rows that the partial indexes serve (unused tokens, started operations, claims in
    flight): the rows a generic plan walked instead of the key's one (session 20)."""
    now, n = timezone.now(), 400
    TokenFactory.create_batch(
        n, merchant=merchant, used_at=None, expires_at=now + datetime.timedelta(hours=1)
    )
    Operation.objects.bulk_create(
        Operation(payment_id=f"pay_{i}", kind=Operation.Kind.CREATE) for i in range(n)
    )
    IdempotencyRecordFactory.create_batch(n, merchant_id=merchant.pk)


def generic_plan_scans(name: str, parameter_types: list) -> list[tuple]:
    """(node type, relation, index) of every scan in the generic plan of prepared `name` (a
    bitmap index scan names no relation, its heap scan no index)."""
    nulls = ", ".join(["NULL"] * len(parameter_types))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"EXPLAIN (FORMAT JSON) EXECUTE {name}({nulls})" if nulls else
                       f"EXPLAIN (FORMAT JSON) EXECUTE {name}")  # fmt: skip
        (plan,) = cursor.fetchone()
    plan = json.loads(plan) if isinstance(plan, str) else plan
    scans, nodes = [], [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        nodes += node.get("Plans", [])
        if "Scan" in node["Node Type"] and "CTE" not in node["Node Type"]:
            scans.append((node["Node Type"], node.get("Relation Name"), node.get("Index Name")))
    return scans


@pytest.mark.parametrize("analyzed", [False, True], ids=["unanalyzed", "analyzed"])
def test_a_creates_keyed_statements_walk_only_primary_keys(api, merchant, analyzed):
    fill_hot_tables(merchant)
    if analyzed:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    body = payment_body(tokenize(api, APPROVED))
    response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 201
    keyed = prepared_here()
    assert any(text.startswith("WITH changed AS (UPDATE") for text in keyed)  # steps 1 and 3
    scans = {
        scan
        for name, parameter_types, _ in keyed.values()
        for scan in generic_plan_scans(name, parameter_types)
    }
    assert scans  # the token taken, the operation marked, the claim renewed, ...
    off_key = [
        scan
        for scan in scans
        if scan[2] is None or not scan[2].endswith("_pkey")
        if scan[1] != "api_config_revision"  # one row: a sequential scan is its cheapest
    ]
    assert off_key == []


@pytest.mark.parametrize("analyzed", [False, True], ids=["unanalyzed", "analyzed"])
def test_the_resource_version_triggers_read_walks_only_the_resources_events(merchant, analyzed):
    """The trigger's read runs on the generic plan of whatever connection inserts the event;
    written with the merchant and mode as index conditions, that plan, made on a table not yet
    analyzed, walked `event_feed` over every event of the merchant (events 0010). Planned here
    on a fresh copy of events_event (its indexes, 300 events of one merchant)."""
    EventFactory.create_batch(300, merchant=merchant, resource_id=factory.Sequence(str))
    read = RESOURCE_INDEX.LATEST.replace("events_event", "fresh_events")
    for n, column in enumerate(("resource_id", "merchant_id", "livemode", "id"), start=1):
        read = read.replace(f"NEW.{column}", f"${n}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'events_resource_version'")
        (source,) = cursor.fetchone()
        assert " ".join(RESOURCE_INDEX.LATEST.split()) in " ".join(source.split())
        cursor.execute("CREATE TEMPORARY TABLE fresh_events (LIKE events_event INCLUDING INDEXES)")
        cursor.execute("INSERT INTO fresh_events SELECT * FROM events_event")
        if analyzed:
            cursor.execute("ANALYZE fresh_events")
        cursor.execute(f"PREPARE latest(varchar, varchar, boolean, varchar) AS SELECT {read}")
    try:
        scans = generic_plan_scans("latest", [None] * 4)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE latest")
    assert {index for _, _, index in scans if index} == {"fresh_events_resource_id_idx"}
    assert not [scan for scan in scans if scan[0] == "Seq Scan"]
