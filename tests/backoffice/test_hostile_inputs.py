"""Every admin changelist and change page survives hostile query strings and ids (issue 20
item 8, as tests/api/test_nul_bytes.py walks /v1): a NUL byte in every list filter's
parameters, the search, the page and the ordering, and in every kind of object URL; numbers
that overflow PostgreSQL's bigint in the search and the ids. Never a 500."""

from urllib.parse import quote as url_quote
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

NUL = "\x00"
OVERFLOW = "99999999999999999999999"
HOSTILE_VALUES = [NUL, f"pay_{NUL}", f"{OVERFLOW}.99", OVERFLOW, "-" + OVERFLOW]
REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def changelist_url(model) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


def filter_parameters(model, model_admin, superuser, base: dict) -> list[str]:
    """The query parameters of every list filter of the changelist, as Django reads them."""
    request = RequestFactory().get(changelist_url(model), base)
    request.user = superuser
    changelist = model_admin.get_changelist_instance(request)
    return sorted({name for spec in changelist.filter_specs for name in spec.expected_parameters()})


@pytest.fixture
def superuser(db):
    return User.objects.create_superuser(
        "walker", "walker@example.test", "a long and unlikely passphrase"
    )


@pytest.fixture
def browser(superuser) -> Client:
    client = Client(raise_request_exception=False)  # a 500 is an answer to count, not raise
    client.force_login(superuser)
    return client


def assert_no_500(responses: dict[str, int]):
    broken = [url for url, status in responses.items() if status >= 500]
    assert not broken, "500 from:\n" + "\n".join(broken)


def test_every_registered_admin_is_walked():
    labels = {model._meta.label for model, _ in REGISTERED}
    assert {"payments.Payment", "webhooks.Delivery", "events.Event", "refunds.Refund"} <= labels
    assert len(labels) >= 10


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=lambda x: str(x))
def test_hostile_query_strings_on_a_changelist(browser, superuser, merchant, model, model_admin):
    url = changelist_url(model)
    # Lists that filter one merchant at a time offer every filter once one is chosen.
    base = {"merchant": merchant.id} if hasattr(model_admin, "scoped_by") else {}
    names = filter_parameters(model, model_admin, superuser, base) + ["q", "p", "o"]
    responses = {}
    for name in names:
        for value in HOSTILE_VALUES:
            query = urlencode({**base, name: value})
            responses[f"{url}?{query}"] = browser.get(f"{url}?{query}").status_code
    assert_no_500(responses)


OBJECT_PATHS = ["change/", "history/", "delete/"]


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=lambda x: str(x))
def test_hostile_object_ids(browser, model, model_admin):
    url = changelist_url(model)
    actions = [f"{action.name}/" for action in getattr(model_admin, "object_actions", ())]
    responses = {}
    for value in HOSTILE_VALUES:
        for suffix in OBJECT_PATHS + actions:
            path = f"{url}{url_quote(value)}/{suffix}"
            responses[path] = browser.get(path).status_code
            if suffix != "history/":
                responses[f"POST {path}"] = browser.post(path, {}).status_code
    assert_no_500(responses)
