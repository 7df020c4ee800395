"""The configuration revision (infra/revision.py): one row, set by a trigger in the transaction of
every change to what processes cache, so it commits with the change or not at all.

No model: `flush` (TransactionTestCase) empties every model's table, and a revision that went
back could match an entry stored before. PostgreSQL only: elsewhere nothing is cached.
"""

from django.db import migrations

from infra.schema import on_postgresql

FORWARDS = """
CREATE TABLE api_config_revision (
    id smallint PRIMARY KEY CHECK (id = 1),
    value bigint NOT NULL
);
-- A new random value at each change (not a counter: a database restored from a backup must not
-- return to a value some process stored an entry under; not the transaction id: a transaction
-- that reads, then changes again, must not keep the value it read under).
CREATE FUNCTION api_config_revision_set() RETURNS void LANGUAGE sql AS $$
    UPDATE api_config_revision SET value = floor(random() * 9e18)::bigint WHERE id = 1;
$$;
INSERT INTO api_config_revision VALUES (1, floor(random() * 9e18)::bigint);
CREATE FUNCTION api_config_revision_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM api_config_revision_set();
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;  -- NULL for a statement trigger
END $$;
"""

BACKWARDS = """
DROP FUNCTION api_config_revision_bump() CASCADE;
DROP FUNCTION api_config_revision_set();
DROP TABLE api_config_revision;
"""


class Migration(migrations.Migration):
    dependencies = [("api", "0002_request_log")]

    operations = [on_postgresql(FORWARDS, BACKWARDS)]
