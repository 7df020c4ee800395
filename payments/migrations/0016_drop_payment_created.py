"""payment_created dropped: no query reads it (docs/data.md "Which index each list filter
reads"). A `created` window is an id window on `payment_list` (api.ids.created_window), in
the API's list and the back office's date filter alike; retention and beat read ids and
`payment_due`. It was an entry written with every payment (docs/payments.md "Where a
create's CPU goes")."""

from django.db import migrations

from infra.schema import RemoveIndexConcurrently


class Migration(migrations.Migration):
    # DROP INDEX CONCURRENTLY runs outside a transaction (no table lock while it waits).
    atomic = False

    dependencies = [("payments", "0015_dispute")]

    operations = [RemoveIndexConcurrently(model_name="payment", name="payment_created")]
