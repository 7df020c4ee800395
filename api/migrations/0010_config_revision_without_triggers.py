"""The configuration revision is changed by the code that writes what processes cache
(`infra.revision.changed()`, called in the writing transaction), no longer by triggers: a
reader of `api_key_revoke` or `endpoint_delete` sees the call (issue 34). Drops the triggers
of accounts/0003 and webhooks/0005 and their functions; the table and the fan-out's
`webhooks_fan_out_revision` stay.

Backwards restores them as they were (the SQL of api/0003, accounts/0003 and webhooks/0005).
"""

import importlib

from django.db import migrations

from infra.schema import on_postgresql

FORWARDS = """
DROP TRIGGER config_revision ON accounts_merchant;
DROP TRIGGER config_revision_update ON accounts_merchant;
DROP TRIGGER config_revision_truncate ON accounts_merchant;
DROP TRIGGER config_revision ON accounts_apikey;
DROP TRIGGER config_revision_update ON accounts_apikey;
DROP TRIGGER config_revision_truncate ON accounts_apikey;
DROP TRIGGER config_revision ON webhooks_webhookendpoint;
DROP TRIGGER config_revision_truncate ON webhooks_webhookendpoint;
DROP FUNCTION webhooks_endpoint_changed();
DROP FUNCTION api_config_revision_bump();
DROP FUNCTION api_config_revision_set();
"""

BACKWARDS = (
    """
CREATE FUNCTION api_config_revision_set() RETURNS void LANGUAGE sql AS $$
    UPDATE api_config_revision SET value = floor(random() * 9e18)::bigint WHERE id = 1;
$$;
CREATE FUNCTION api_config_revision_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM api_config_revision_set();
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END $$;
CREATE FUNCTION webhooks_endpoint_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM 1 FROM accounts_merchant WHERE id = OLD.merchant_id FOR UPDATE;
        PERFORM api_config_revision_set();
        RETURN OLD;
    END IF;
    PERFORM 1 FROM accounts_merchant WHERE id = NEW.merchant_id FOR UPDATE;
    PERFORM api_config_revision_set();
    RETURN NEW;
END $$;
CREATE TRIGGER config_revision BEFORE INSERT OR UPDATE OR DELETE ON webhooks_webhookendpoint
    FOR EACH ROW EXECUTE FUNCTION webhooks_endpoint_changed();
CREATE TRIGGER config_revision_truncate AFTER TRUNCATE ON webhooks_webhookendpoint
    FOR EACH STATEMENT EXECUTE FUNCTION api_config_revision_bump();
"""
    + importlib.import_module("accounts.migrations.0003_config_revision_triggers").FORWARDS
)


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0009_requestlog_omitted_after"),
        ("accounts", "0003_config_revision_triggers"),
        ("webhooks", "0005_config_revision_triggers"),
    ]

    operations = [on_postgresql(FORWARDS, BACKWARDS)]
