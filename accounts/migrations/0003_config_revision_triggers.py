"""Every committed change to a key or a merchant sets the configuration revision in its own
transaction (infra/revision.py, accounts/keycache.py), whatever made it: a service, the admin,
`QuerySet.update()`, SQL by hand. Recording a key's use (`last_used_at` alone) does not:
nothing decides on it."""

from django.db import migrations

from infra.schema import on_postgresql

FORWARDS = """
CREATE TRIGGER config_revision AFTER INSERT OR DELETE ON accounts_merchant
    FOR EACH ROW EXECUTE FUNCTION api_config_revision_bump();
CREATE TRIGGER config_revision_update AFTER UPDATE ON accounts_merchant
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION api_config_revision_bump();
CREATE TRIGGER config_revision_truncate AFTER TRUNCATE ON accounts_merchant
    FOR EACH STATEMENT EXECUTE FUNCTION api_config_revision_bump();
CREATE TRIGGER config_revision AFTER INSERT OR DELETE ON accounts_apikey
    FOR EACH ROW EXECUTE FUNCTION api_config_revision_bump();
CREATE TRIGGER config_revision_update AFTER UPDATE ON accounts_apikey
    FOR EACH ROW WHEN (to_jsonb(OLD) - 'last_used_at' IS DISTINCT FROM to_jsonb(NEW) - 'last_used_at')
    EXECUTE FUNCTION api_config_revision_bump();
CREATE TRIGGER config_revision_truncate AFTER TRUNCATE ON accounts_apikey
    FOR EACH STATEMENT EXECUTE FUNCTION api_config_revision_bump();
"""

BACKWARDS = """
DROP TRIGGER config_revision ON accounts_merchant;
DROP TRIGGER config_revision_update ON accounts_merchant;
DROP TRIGGER config_revision_truncate ON accounts_merchant;
DROP TRIGGER config_revision ON accounts_apikey;
DROP TRIGGER config_revision_update ON accounts_apikey;
DROP TRIGGER config_revision_truncate ON accounts_apikey;
"""


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_back_office_permissions"), ("api", "0003_config_revision")]

    operations = [on_postgresql(FORWARDS, BACKWARDS)]
