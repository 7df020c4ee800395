"""Every statement a payment create runs keeps to what psycopg caches the parsing of (at most
MAX_CACHED_STATEMENT_PARAMS parameters and MAX_CACHED_STATEMENT_LENGTH characters): past
either, each create parses its chained insert again (~0.2 ms of CPU; docs/payments.md
"Operation runner"). The payment, its events and the operation's mark are one statement, so a
column added to Payment or Event counts here (unless it is NULL at create: infra.rows leaves
out a column None in every row)."""

import pytest
from django.db import connection
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH, MAX_CACHED_STATEMENT_PARAMS

from tests.payments.support import APPROVED, payment_body, tokenize

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def statements_of(call) -> list[tuple[str, int]]:
    seen = []

    def note(execute, sql, params, many, context):
        seen.append((sql, len(params or ())))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(note):
        call()
    return seen


def test_a_create_runs_only_statements_psycopg_caches(api):
    body = payment_body(tokenize(api, APPROVED))
    post = lambda: api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="k")  # noqa: E731
    statements = statements_of(post)

    chained = [params for sql, params in statements if sql.startswith("WITH")]
    assert len(chained) == 2  # the claim with the operation's start, then the work's answer
    assert max(chained) > 30  # the payment with its two events (their NULL columns left out)
    uncached = [
        (sql[:80], params)
        for sql, params in statements
        if params > MAX_CACHED_STATEMENT_PARAMS or len(sql) > MAX_CACHED_STATEMENT_LENGTH
    ]
    assert uncached == []
