import io
import json

import pytest
from django.core.management import CommandError, call_command

from accounts import keys
from accounts.models import ApiKey, Merchant
from tests.conftest import key_client


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_create_merchant_json_prints_one_object_with_four_working_keys():
    output = run("create_merchant", "--name", "Acme", "--email", "ops@acme.test", "--json")
    data = json.loads(output)
    assert set(data) == {"id", "name", "email", "keys", "key_ids"}
    assert data["id"].startswith("mch_") and len(data["id"]) == 30
    assert (data["name"], data["email"]) == ("Acme", "ops@acme.test")
    shapes = {
        ("test", "secret"): ("svc_sk_test_", 32),
        ("test", "publishable"): ("svc_pk_test_", 26),
        ("live", "secret"): ("svc_sk_live_", 32),
        ("live", "publishable"): ("svc_pk_live_", 26),
    }
    for (mode, kind), (prefix, length) in shapes.items():
        secret = data["keys"][mode][kind]
        assert secret.startswith(prefix) and len(secret) == length
        issued = ApiKey.objects.get(key_hash=keys.hash_key(secret, "test-only-pepper"))
        # Its id too (issue 38): revoke_key takes it, and a key's secret never finds it again.
        assert data["key_ids"][mode][kind] == issued.id
    assert Merchant.objects.get(pk=data["id"]).api_keys.count() == 4


@pytest.mark.django_db
def test_issue_key_prints_a_new_key_once(merchant):
    data = json.loads(
        run("issue_key", "--merchant", merchant.id, "--kind", "secret", "--mode", "live", "--json")
    )
    assert data["key"].startswith("svc_sk_live_")
    assert ApiKey.objects.get(pk=data["id"]).livemode is True
    assert data["key"] not in str(ApiKey.objects.get(pk=data["id"]).__dict__)


@pytest.mark.django_db
def test_issue_key_for_unknown_merchant_fails():
    with pytest.raises(CommandError):
        run("issue_key", "--merchant", "mch_" + "0" * 26)


@pytest.mark.urls("tests.support.urls")
def test_revoke_key_is_a_dry_run_unless_for_real(new_merchant, django_capture_on_commit_callbacks):
    issued = new_merchant.keys["test"]["secret"]
    dry = json.loads(run("revoke_key", issued.api_key.id, "--json"))
    assert dry["dry_run"] is True
    assert key_client(issued.secret).get("/v1/test/keys").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):  # the command's commit
        done = json.loads(run("revoke_key", issued.api_key.id, "--for-real", "--json"))
    assert done["revoked"] is True and done["revoked_at"].endswith("Z")
    assert key_client(issued.secret).get("/v1/test/keys").status_code == 401


@pytest.mark.django_db
def test_revoke_key_unknown_fails():
    with pytest.raises(CommandError):
        run("revoke_key", "key_" + "0" * 26, "--for-real")
