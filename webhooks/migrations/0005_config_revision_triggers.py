"""Endpoint changes and the fan-out, ordered per merchant (docs/webhooks.md "Fan-out").

An endpoint change (any row written: create, save, soft or hard delete) first locks its
merchant's row FOR UPDATE, then sets the configuration revision (infra/revision.py) in its own
transaction. The fan-out of a transaction that writes events calls `webhooks_fan_out_revision`,
which takes the merchant's row FOR KEY SHARE (waiting for an endpoint change in flight, and
making the next one wait until this transaction ends), then reads the revision in a snapshot
taken after that wait (a VOLATILE function's statements each take their own). So every event
commits either before an endpoint change or with a fan-out that saw it.
"""

from django.db import migrations

from infra.schema import on_postgresql

FORWARDS = """
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
CREATE FUNCTION webhooks_fan_out_revision(merchant varchar) RETURNS bigint
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM accounts_merchant WHERE id = merchant FOR KEY SHARE;
    RETURN (SELECT value FROM api_config_revision WHERE id = 1);
END $$;
"""

BACKWARDS = """
DROP FUNCTION webhooks_fan_out_revision(varchar);
DROP TRIGGER config_revision_truncate ON webhooks_webhookendpoint;
DROP TRIGGER config_revision ON webhooks_webhookendpoint;
DROP FUNCTION webhooks_endpoint_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0004_back_office_permissions"), ("api", "0003_config_revision")]

    operations = [on_postgresql(FORWARDS, BACKWARDS)]
