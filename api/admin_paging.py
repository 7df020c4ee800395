"""The back office's paginator for big tables, in the lowest room so every room's admin (the
request log's included) can use it."""

from django.core.paginator import Paginator

COUNT_CAP = 10_000  # rows a big list counts at most; past it, narrow with search or filters


class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows (COUNT over a LIMIT subquery), so a list of millions
    of payments never runs a full COUNT(*); pages past the cap are reached by narrowing."""

    @property
    def count(self):
        if not hasattr(self, "_capped_count"):
            self._capped_count = self.object_list.order_by()[: COUNT_CAP + 1].count()
        return self._capped_count
