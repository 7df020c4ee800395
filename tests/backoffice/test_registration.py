"""Each admin page is registered once, by the room that owns its model; a higher room adds to
it through backoffice.extensions instead of replacing it (issue 23 item 2), so what a page
shows does not depend on the order of INSTALLED_APPS."""

import json
import subprocess
import sys

from django.contrib import admin
from django.test import RequestFactory

from accounts.models import Merchant
from api.models import RequestLogEntry
from backoffice.toolkit import ReadOnlyAdmin
from events.models import Event
from payments.models import Payment
from refunds.admin import RefundInline
from refunds.models import Refund
from tests.e2e.processes import ROOT
from webhooks.models import Delivery, WebhookEndpoint

ROOMS = {"api", "accounts", "events", "webhooks", "payments", "refunds", "sandbox"}
# The events room has no admin: the event's page is about its deliveries (docs/back-office.md).
PAGE_OWNER = {"events.Event": "webhooks"}


def registered_pages() -> dict[str, str]:
    return {
        model._meta.label: type(model_admin).__module__
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in ROOMS
    }


def test_each_page_is_registered_by_the_room_that_owns_its_model():
    for label, module in registered_pages().items():
        owner = PAGE_OWNER.get(label, label.split(".")[0])
        assert module.split(".")[0] == owner, (label, module)  # its admin.py or a module of it


def test_the_refunds_room_adds_to_the_payment_page():
    page = admin.site._registry[Payment]
    request = RequestFactory().get("/")
    assert RefundInline in page.get_inlines(request, None)
    assert [action.name for action in page.all_object_actions()] == [
        "refund",
        "capture",
        "cancel",
        "erase-customer",
    ]
    assert "events" not in page.get_fields(request)  # the timeline replaces it


def test_the_payments_room_adds_routes_and_the_pricing_check_to_the_merchant_page():
    page = admin.site._registry[Merchant]
    request = RequestFactory().get("/")
    assert [inline.model._meta.label for inline in page.get_inlines(request, None)] == [
        "accounts.ApiKey",
        "payments.Route",
    ]
    assert hasattr(page.get_form(request), "clean_pricing")


def test_read_only_pages_share_one_read_only_admin():
    for model in (RequestLogEntry, Payment, Refund, Event, Delivery, WebhookEndpoint):
        assert isinstance(admin.site._registry[model], ReadOnlyAdmin), model


PAGES_IN_ANOTHER_ORDER = """
import json
import django
from django.conf import settings
ours = ["api", "accounts", "events", "webhooks", "payments", "refunds", "sandbox"]
settings.INSTALLED_APPS = [a for a in settings.INSTALLED_APPS if a not in ours] + ours[::-1]
django.setup()
from django.contrib import admin
from payments.models import Payment
pages = {m._meta.label: type(a).__module__ for m, a in admin.site._registry.items()}
actions = [a.name for a in admin.site._registry[Payment].all_object_actions()]
print(json.dumps({"pages": pages, "actions": actions}))
"""


def test_the_pages_do_not_depend_on_the_order_of_installed_apps():
    command = [sys.executable, "-c", PAGES_IN_ANOTHER_ORDER]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    reversed_order = json.loads(done.stdout)
    ours = {label: module for label, module in reversed_order["pages"].items()
            if label.split(".")[0] in ROOMS}  # fmt: skip
    assert ours == registered_pages()
    assert reversed_order["actions"] == ["refund", "capture", "cancel", "erase-customer"]
