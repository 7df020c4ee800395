"""A Celery worker keeps the service's logging: every record it writes passes the card-data
redaction filter (config/celery.py; docs/request-safety.md "Request log")."""

import uuid

import pytest

from config.celery import app
from tests.e2e.processes import celery_worker, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_card_number_in_a_worker_log_is_redacted():
    queue = f"e2e-logging-{uuid.uuid4().hex}"
    with celery_worker(queue) as worker:
        # An unknown task: the worker logs its name and the whole message body, arguments too.
        app.send_task("card.4242.4242.4242.4242", args=["4242 4242 4242 4242", "ok"], queue=queue)
        wait_for(lambda: any("unregistered task" in line for line in worker.output))
        wait_for(lambda: any("message body" in line for line in worker.output))
    log = "".join(worker.output)
    assert "[redacted]" in log
    for written in ("4242.4242.4242.4242", "4242 4242 4242 4242", "4242424242424242"):
        assert written not in log
