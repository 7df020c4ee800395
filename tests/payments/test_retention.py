"""Finished connector operations go after OPERATION_RETENTION; started ones stay for recovery
(docs/data.md "Retention")."""

import datetime

import pytest
import time_machine
from django.utils import timezone

from payments.models import Operation
from payments.tasks import purge_finished_operations
from tests.factories import id_made_now

pytestmark = pytest.mark.django_db


def operation(state: str) -> Operation:
    return Operation.objects.create(
        id=id_made_now("op"), payment_id=f"pay_{state}", kind=Operation.Kind.CAPTURE, state=state
    )


def test_finished_operations_go_after_the_retention_started_ones_stay(settings):
    settings.OPERATION_RETENTION = datetime.timedelta(days=7)
    with time_machine.travel(timezone.now() - datetime.timedelta(days=8), tick=False):
        applied, abandoned = operation("applied"), operation("abandoned")
        started = operation("started")
    with time_machine.travel(timezone.now() - datetime.timedelta(days=6), tick=False):
        recent = operation("applied")

    assert purge_finished_operations() == 2
    assert set(Operation.objects.values_list("pk", flat=True)) == {started.pk, recent.pk}
    assert not Operation.objects.filter(pk__in=[applied.pk, abandoned.pk]).exists()
