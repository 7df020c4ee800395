"""infra.rows: hand-written SQL must give back exactly what the ORM would."""

import datetime
import json

import pytest
from django.db import DataError, connection, transaction
from django.db.models.expressions import DatabaseDefault
from django.db.models.signals import post_init
from django.forms.models import model_to_dict
from django.utils import timezone

from accounts.models import ApiKey, Merchant
from api.ids import new_id
from events.models import Event
from infra.rows import (
    ModelRows,
    _construction,
    _json_bytes,
    _plain,
    copy_rows,
    insert_instances,
    insert_instances_if,
    insert_rows,
    insert_sql,
    instance_values,
    new_instance,
    prepared,
)
from payments.models import Operation, Payment, Token
from webhooks.models import Delivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


def same_as_written(stored, written) -> bool:
    """The stored row's fields are the written instance's, except those the instance left to
    the database (`db_default` not set: Event.resource_version, numbered by a trigger)."""
    kept = {
        name: value
        for name, value in model_to_dict(written).items()
        if not isinstance(value, DatabaseDefault)
    }
    return {name: value for name, value in model_to_dict(stored).items() if name in kept} == kept


def fields_of(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_model_rows_read_a_join_as_the_orm_does(merchant):
    Merchant.objects.filter(pk=merchant.pk).update(
        pricing={"blended": {"eur": {"percent_bps": 140, "fixed": 25}}}, transaction_limit=5
    )
    api_key = ApiKey.objects.filter(merchant=merchant).order_by("id").first()
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())
    keys, merchants = ModelRows(ApiKey, "k"), ModelRows(Merchant, "m")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {keys.columns}, {merchants.columns} FROM accounts_apikey k "
            "JOIN accounts_merchant m ON m.id = k.merchant_id WHERE k.id = %s",
            [api_key.pk],
        )
        row = cursor.fetchone()
    read_key, read_merchant = keys.instance(row), merchants.instance(row, start=len(keys))
    assert fields_of(read_key) == fields_of(ApiKey.objects.get(pk=api_key.pk))
    assert fields_of(read_merchant) == fields_of(Merchant.objects.get(pk=merchant.pk))
    assert read_merchant.pricing["blended"]["eur"]["fixed"] == 25  # JSON decoded, not text
    assert read_key.last_used_at.tzinfo is not None
    assert not read_key._state.adding  # saving it updates the row, as for an ORM instance
    assert read_key._state.db == "default"
    assert vars(read_key).keys() == vars(ApiKey.objects.get(pk=api_key.pk)).keys()


def test_insert_instances_stores_what_save_would(merchant):
    now = timezone.now()
    events = [
        Event(
            merchant=merchant,
            livemode=False,
            type=type,
            api_version="2026-08-19",
            resource_id="pay_1",
            data={"object": {"id": "pay_1", "amount": 10}, "previous_attributes": {}},
            created=now,
        )
        for type in ("payment.created", "payment.captured")
    ]
    insert_instances(events)
    stored = list(Event.objects.order_by("id"))
    assert all(map(same_as_written, stored, events)) and len(stored) == len(events)
    assert [e.resource_version for e in stored] == [1, 2]  # numbered by the database
    events[0].dead_lettered_at = now + datetime.timedelta(hours=1)
    events[0].save()  # an update of the stored row, not a second insert
    assert Event.objects.get(pk=events[0].pk).dead_lettered_at == events[0].dead_lettered_at


def test_instances_of_several_models_go_in_one_statement_on_postgresql(merchant):
    """A row and rows that refer to it (a key to its new merchant), in any order."""
    other = Merchant(name="New", email="n@x.test")
    key = ApiKey(
        merchant=other,
        kind="secret",
        livemode=False,
        key_hash="h" * 64,
        prefix="sk_test_",
        pepper_version=1,
        last4="abcd",
    )
    event = Event(
        merchant=other, livemode=False, type="payment.created", api_version="2026-08-19",
        resource_id="pay_1", data={"object": {"id": "pay_1"}, "previous_attributes": {}},
    )  # fmt: skip
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, *rest: statements.append(sql) or run(sql, *rest)
    ):
        insert_instances([key, other, event])
    assert len(statements) == (1 if connection.vendor == "postgresql" else 3)
    assert fields_of(Merchant.objects.get(pk=other.pk)) == fields_of(other)
    assert fields_of(ApiKey.objects.get(pk=key.pk)) == fields_of(key)
    assert same_as_written(Event.objects.get(pk=event.pk), event)
    assert not other._state.adding and not key._state.adding and not event._state.adding


def _renamed(merchant, old: str, new: str) -> tuple[str, list]:
    """An UPDATE that changes the merchant's row only while its name is `old`."""
    sql = "UPDATE accounts_merchant SET name = %s WHERE id = %s AND name = %s"
    return sql, [new, merchant.pk, old]


def _emailed(merchant, email: str) -> tuple[str, list]:
    return "UPDATE accounts_merchant SET email = %s WHERE id = %s", [email, merchant.pk]


def _event_about(merchant, resource_id: str) -> Event:
    """dispatched_at and dead_lettered_at stay NULL: untyped parameters a multi-row SELECT
    would turn into text."""
    return Event(
        merchant=merchant, livemode=False, type="payment.created", api_version="2026-08-19",
        resource_id=resource_id, data={"object": {"id": resource_id}, "previous_attributes": {}},
    )  # fmt: skip


def test_insert_instances_if_writes_with_an_update_that_changes_a_row(merchant):
    other = Merchant(name="New", email="n@x.test")
    events = [_event_about(other, "pay_1"), _event_about(other, "pay_1")]
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, *rest: statements.append(sql) or run(sql, *rest)
    ):
        written = insert_instances_if(
            _renamed(merchant, merchant.name, "Renamed"), [other, *events]
        )
    assert written == (True, [], [])
    assert len(statements) == (1 if connection.vendor == "postgresql" else 3)
    assert Merchant.objects.get(pk=merchant.pk).name == "Renamed"
    assert fields_of(Merchant.objects.get(pk=other.pk)) == fields_of(other)
    stored = Event.objects.filter(resource_id="pay_1").order_by("id")
    assert all(map(same_as_written, stored, events)) and len(stored) == len(events)
    assert not any(obj._state.adding for obj in [other, *events])


def test_insert_instances_if_writes_nothing_when_its_update_changes_no_row(merchant):
    event = _event_about(merchant, "pay_2")
    then = [_emailed(merchant, "then@x.test")]
    written = insert_instances_if(_renamed(merchant, "not its", "Renamed"), [event], then=then)
    assert written == (False, [False], [])
    assert not Event.objects.filter(resource_id="pay_2").exists()
    stored = Merchant.objects.get(pk=merchant.pk)
    assert stored.name != "Renamed" and stored.email != "then@x.test"
    assert event._state.adding


def test_insert_instances_if_then_runs_its_updates_in_the_same_statement(merchant, other_merchant):
    event = _event_about(merchant, "pay_3")
    no_row = ("UPDATE accounts_merchant SET email = %s WHERE id = %s", ["x", "mch_none"])
    then = [_emailed(other_merchant, "then@x.test"), no_row]
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, *rest: statements.append(sql) or run(sql, *rest)
    ):
        written = insert_instances_if(
            _renamed(merchant, merchant.name, "R"), [event], then=then, reads=[("SELECT 7", [])]
        )
    assert written == (True, [True, False], [7])
    assert len(statements) == (1 if connection.vendor == "postgresql" else 5)
    assert Merchant.objects.get(pk=other_merchant.pk).email == "then@x.test"
    assert Event.objects.filter(resource_id="pay_3").exists()


def test_insert_rows_returns_what_returning_asks_for():
    row = {"id": new_id("mch"), "name": "Other", "email": "o@x.test", "pricing": {"a": 1}}
    row["created"] = timezone.now()
    suffix = "ON CONFLICT DO NOTHING RETURNING id, name"
    assert insert_rows(Merchant, [row], suffix=suffix) == [(row["id"], "Other")]
    assert insert_rows(Merchant, [row], suffix=suffix) == []  # the conflict: nothing returned
    assert Merchant.objects.get(pk=row["id"]).pricing == {"a": 1}


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def _merchant_row(name: str) -> dict:
    now = timezone.now()
    return {"id": new_id("mch"), "name": name, "email": "a@x.test", "pricing": {}, "created": now}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_async_commit_insert_in_autocommit_is_lax_for_its_own_transaction_only():
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, *rest: statements.append(sql) or run(sql, *rest)
    ):
        insert_rows(Merchant, [_merchant_row("lax")], async_commit=True)
    assert "set_config('synchronous_commit', 'off', true)" in statements[0]
    assert Merchant.objects.filter(name="lax").exists()
    assert _synchronous_commit() == "on"  # local to the insert's transaction: nothing leaks


@pytest.mark.postgres
def test_an_async_commit_insert_inside_a_transaction_is_a_plain_insert():
    """Else it would make the caller's whole transaction commit without waiting."""
    insert_rows(Merchant, [_merchant_row("strict")], async_commit=True)
    assert _synchronous_commit() == "on"
    assert Merchant.objects.filter(name="strict").exists()


@pytest.mark.postgres
def test_json_columns_are_written_by_orjson_and_read_back_as_written(merchant):
    data = {"object": {"id": "pay_x", "amount": 2**70, "note": "Größe \u2028"}, "z": [1.5, None]}
    event = Event(
        merchant=merchant, livemode=False, type="payment.created", resource_id="pay_x", data=data
    )
    sql, params = insert_sql(Event, [instance_values(event)])
    (json_param,) = [p for p in params if hasattr(p, "dumps")]
    assert json_param.dumps is _json_bytes  # not Django's json.dumps
    insert_instances([event])
    assert Event.objects.get(pk=event.pk).data == data  # 2**70: orjson refused, json wrote it


def test_a_selected_column_takes_its_value_from_the_select_not_a_parameter(merchant):
    """`selected`: a column whose value the INSERT ... SELECT takes from its FROM (another
    part of the same WITH, as a create's operation takes its claim's record id)."""
    event = new_instance(Event, merchant=merchant, livemode=False, type="payment.created",
                         resource_id=None, data={})  # fmt: skip
    insert, params = insert_sql(
        Event, [instance_values(event)], select_tail="FROM named",
        selected=(("resource_id", "named.resource_id"),),
    )  # fmt: skip
    with connection.cursor() as cursor:
        named = "WITH named AS (SELECT CAST(%s AS TEXT) AS resource_id) "
        cursor.execute(named + insert, ["pay_selected", *params])
    assert Event.objects.get(pk=event.pk).resource_id == "pay_selected"
    with pytest.raises(ValueError, match="INSERT ... SELECT"):
        insert_sql(Event, [instance_values(event)], selected=(("resource_id", "'x'"),))
    with pytest.raises(ValueError, match="not also a value"):
        written = {**instance_values(event), "resource_id": "pay_twice"}
        insert_sql(Event, [written], select_tail="", selected=(("resource_id", "'x'"),))


def test_instance_values_reads_a_deferred_field_as_its_descriptor_would(merchant):
    """Values come from the instance's dict where they are; a deferred one (not loaded) is
    read through its field, from the database, as getattr reads it."""
    event = Event(
        merchant=merchant, livemode=False, type="payment.created", resource_id="pay_x", data={}
    )
    insert_instances([event])
    deferred = Event.objects.only("id").get(pk=event.pk)
    assert "resource_id" not in vars(deferred)
    assert instance_values(deferred) == instance_values(Event.objects.get(pk=event.pk))


def test_instances_sharing_a_database_default_are_each_saved_with_the_columns_default(merchant):
    """new_instance gives every instance of a model the same DatabaseDefault marker per
    field: Django's own INSERT (save) and ours (insert_instances) both leave the column to
    the database, and saving one instance changes nothing the other holds."""
    made = [
        new_instance(Event, merchant=merchant, livemode=False, type="payment.created",
                     resource_id=f"pay_{n}", data={})
        for n in range(3)
    ]  # fmt: skip
    assert made[0].resource_version is made[1].resource_version  # the one marker
    made[0].save(force_insert=True)
    assert made[0].resource_version == 1
    assert isinstance(made[1].resource_version, DatabaseDefault)
    insert_instances(made[1:])
    stored = Event.objects.filter(pk__in=[event.pk for event in made])
    assert sorted(stored.values_list("resource_version", flat=True)) == [1, 1, 1]


def test_a_column_none_in_every_row_is_left_out_and_stored_null():
    both_none = [_merchant_row("A"), _merchant_row("B")]
    for row in both_none:
        row["transaction_limit"] = None
    sql, params = insert_sql(Merchant, both_none)
    assert '"transaction_limit"' not in sql and len(params) == 2 * 5
    one_set = [_merchant_row("C"), {**_merchant_row("D"), "transaction_limit": None}]
    one_set[0]["transaction_limit"] = 500
    assert '"transaction_limit"' in insert_sql(Merchant, one_set)[0]  # a value in one row
    insert_rows(Merchant, both_none + one_set)
    stored = dict(Merchant.objects.filter(name__in="ABCD").values_list("name", "transaction_limit"))
    assert stored == {"A": None, "B": None, "C": 500, "D": None}


def test_copy_rows_stores_what_insert_rows_would():
    """COPY on PostgreSQL (the request log's batches), an INSERT elsewhere: the same values
    through the same fields, None columns NULL, a JSON column by orjson."""
    rows = [_merchant_row("copied"), _merchant_row("copied too")]
    rows[0].update(pricing={"card": {"percent": "1.4"}}, transaction_limit=900)
    rows[1].update(transaction_limit=None)
    statements = []
    with connection.execute_wrapper(
        lambda run, sql, *rest: statements.append(sql) or run(sql, *rest)
    ):
        copy_rows(Merchant, rows)
    # COPY is no statement Django executes; SQLite's one INSERT is.
    assert len(statements) == (0 if connection.vendor == "postgresql" else 1)
    stored = Merchant.objects.filter(name__startswith="copied").order_by("name")
    assert [(m.name, m.pricing, m.transaction_limit, m.created) for m in stored] == [
        (row["name"], row["pricing"], row["transaction_limit"], row["created"]) for row in rows
    ]


@pytest.mark.postgres
def test_copy_rows_raises_djangos_errors_and_writes_nothing_of_a_refused_batch():
    rows = [_merchant_row("fits"), {**_merchant_row("x"), "name": "x" * 10_000}]
    with pytest.raises(DataError), transaction.atomic():
        copy_rows(Merchant, rows)
    assert not Merchant.objects.filter(name="fits").exists()


@pytest.mark.parametrize(
    "field, value",
    [
        (Event._meta.get_field("type"), "payment.created"),
        (Event._meta.get_field("type"), Operation.Kind.CREATE),  # a str subclass: adapted
        (Event._meta.get_field("livemode"), True),
        (Event._meta.get_field("sequence"), 7),
        (Event._meta.get_field("sequence"), True),  # a bool for an integer column
        (Event._meta.get_field("livemode"), None),
        (Event._meta.get_field("resource_version"), None),
        (Event._meta.get_field("dispatched_at"), timezone.now()),
        (Event._meta.get_field("dispatched_at"), datetime.datetime(2026, 11, 29, 12)),  # naive
        (Event._meta.get_field("data"), {"a": 1}),
        (Event._meta.get_field("data"), [1, "a"]),
        (Event._meta.get_field("data"), None),
        (Event._meta.get_field("data"), "a"),  # a JSON string
        (Event._meta.get_field("id"), "evt_1"),  # a CharField's subclass
        (Event._meta.get_field("resource_version"), 2**40),  # PositiveIntegerField
        (Payment._meta.get_field("amount"), 1000),  # BigIntegerField
        (Payment._meta.get_field("merchant"), "mer_1"),
        (Payment._meta.get_field("merchant"), ""),
        (Payment._meta.get_field("merchant"), None),
    ],
)
@pytest.mark.filterwarnings("ignore:DateTimeField .* naive datetime:RuntimeWarning")  # both warn
def test_prepared_gives_what_get_db_prep_save_gives(field, value):
    """The values a field would hand back unchanged skip its get_db_prep_save: whatever is
    skipped or not, the value sent is the one save() would send."""
    expected = field.get_db_prep_save(value, connection)
    sent = prepared(field, value, connection)
    if hasattr(expected, "obj"):  # JSON: the same object, dumped by orjson instead
        assert sent.obj == expected.obj and type(sent) is type(expected)
        assert json.loads(sent.dumps(sent.obj)) == json.loads(expected.dumps(expected.obj))
    else:
        assert sent == expected and type(sent) is type(expected)


def made_alike(model, **values):
    """new_instance's instance and the constructor's, whose state they must share: the same
    attributes with the same values (those a callable default makes: of the same type)."""
    ours, django = new_instance(model, **values), model(**values)
    made = {f.attname for f in model._meta.concrete_fields if callable(f._get_default)}
    made -= {f.attname for f in model._meta.concrete_fields if f.attname in values}
    made -= {f.attname for f in model._meta.concrete_fields if f.name in values}
    assert vars(ours).keys() == vars(django).keys()
    for name, value in vars(django).items():
        if name == "_state":
            continue
        if name in made and not isinstance(value, DatabaseDefault):
            assert type(vars(ours)[name]) is type(value), name
        elif isinstance(value, DatabaseDefault):
            assert vars(ours)[name] == value, name
        else:
            assert vars(ours)[name] == value and type(vars(ours)[name]) is type(value), name
    assert (ours._state.db, ours._state.adding) == (django._state.db, django._state.adding)
    assert ours._state.fields_cache == django._state.fields_cache
    return ours


def test_new_instance_makes_what_the_constructor_makes(merchant):
    payment = made_alike(
        Payment, merchant=merchant, livemode=False, amount=1000, currency="eur", reference="r",
        metadata={"a": "1"}, created=timezone.now(),
    )  # fmt: skip
    assert payment.merchant is merchant and payment.merchant_id == merchant.pk
    assert payment.pk.startswith("pay_") and payment.amount_captured == 0
    made_alike(Operation, kind="create", payment_id=payment.pk, request={"x": 1})
    event = made_alike(Event, merchant=merchant, livemode=False, type="payment.created",
                       resource_id=payment.pk, data={})  # fmt: skip
    assert isinstance(event.resource_version, DatabaseDefault)
    endpoint = WebhookEndpoint(merchant=merchant, url="https://example.test/hook")
    made_alike(Delivery, event=event, endpoint=endpoint)
    made_alike(Payment, merchant=None, amount=1)
    token = Token(merchant=merchant, livemode=False)
    paid = new_instance(Payment, merchant=merchant, token=token)
    assert paid.token_id == token.pk and token.payment is paid  # a one to one: both sides


def test_new_instance_refuses_what_the_constructor_would_refuse_or_do_otherwise(merchant):
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        new_instance(Payment, merchant=merchant, colour="blue")

    def noted(**kwargs):  # a receiver new_instance would skip
        pass

    _construction.cache_clear(), _plain.cache_clear()
    post_init.connect(noted, sender=Merchant)
    try:
        with pytest.raises(TypeError, match="cannot stand for"):
            new_instance(Merchant, name="x")
    finally:
        post_init.disconnect(noted, sender=Merchant)
        _construction.cache_clear(), _plain.cache_clear()
