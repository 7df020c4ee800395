"""bench_scale's reports on what is not the API (docs/data.md "Benchmark"): every admin
changelist (unscoped, per merchant, and each choice of each list filter), search and change
page, fetched through Django's test client logged in as a superuser; and every beat task, run
in a transaction rolled back afterwards. The queries each page or task really ran are captured
(CaptureQueriesContext) and each is explained on a connection of its own (EXPLAIN (ANALYZE,
BUFFERS), in a transaction rolled back): rows examined (what its scans read, filtered rows
included), rows returned, pages touched, the time the queries took in PostgreSQL (their
EXPLAIN ANALYZE execution), and the scan of its worst query."""

import re
import statistics
import time

import psycopg

ONLY = re.compile("")  # bench_scale --pages: the pages and tasks whose name matches
SKIPPED = ("SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT", "SET ", "SHOW ")
MAX_CHOICES = 12  # a filter with more (currencies) is sampled: FEW_CHOICES
FEW_CHOICES = ("eur", "kwd", "chf")  # common, rare, absent in the benchmark's data


def examined(node: dict) -> int:
    """Rows a plan read: what each scan returned plus what its filters threw away."""
    rows = 0
    if "Scan" in node["Node Type"]:
        kept = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        rows += (kept + node.get("Rows Removed by Index Recheck", 0)) * node["Actual Loops"]
    return rows + sum(examined(child) for child in node.get("Plans", []))


def first_scan(node: dict) -> str:
    if "Scan" in node["Node Type"]:
        return f"{node['Node Type']} {node.get('Index Name', '')}".strip()
    return next((first_scan(child) for child in node.get("Plans", [])), "")


def worst_scan(node: dict) -> tuple[int, str]:
    """(rows, "scan index/table") of the scan that read the most rows."""
    here = (0, "")
    if "Scan" in node["Node Type"]:
        rows = (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        name = node.get("Index Name") or node.get("Relation Name", "")
        here = (rows, f"{node['Node Type']} {name}".strip())
    return max([here, *(worst_scan(child) for child in node.get("Plans", []))])


def returned(node: dict) -> int:
    """Rows the statement produced (for a DELETE or UPDATE, the rows it changed)."""
    if node["Node Type"] == "ModifyTable":
        return node["Plans"][0]["Actual Rows"] if node.get("Plans") else 0
    return node["Actual Rows"]


def explain_all(url: str, statements: list[str]) -> list[dict]:
    """Each statement explained with ANALYZE and BUFFERS, then rolled back."""
    plans = []
    with psycopg.connect(url) as conn:
        for statement in statements:
            if statement.lstrip().upper().startswith(SKIPPED):
                continue
            try:
                [[[plan]]] = conn.execute(
                    f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"
                ).fetchall()
            finally:
                conn.rollback()
            top = plan["Plan"]
            worst_rows, worst = worst_scan(top)
            plans.append(
                {
                    "sql": statement[:300],
                    "ms": round(plan["Execution Time"], 2),
                    "rows_examined": examined(top),
                    "rows_returned": returned(top),
                    "pages": top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0),
                    "worst_rows": worst_rows,
                    "worst_scan": worst,
                }
            )
    return plans


def summary(kind: str, name: str, ms: float, plans: list[dict]) -> dict:
    worst = max(plans, key=lambda p: p["rows_examined"], default=None)
    return {
        "kind": kind,
        "name": name,
        "ms": round(ms, 2),
        "db_ms": round(sum(p["ms"] for p in plans), 2),  # the queries' own execution
        "queries": len(plans),
        "rows_examined": sum(p["rows_examined"] for p in plans),
        "rows_returned": sum(p["rows_returned"] for p in plans),
        "pages": sum(p["pages"] for p in plans),
        "worst_query_rows": worst["rows_examined"] if worst else 0,
        "worst_scan": worst["worst_scan"] if worst else "",
        "worst_sql": worst["sql"] if worst else "",
        "plans": plans,
    }


def show(result: dict) -> None:
    print(
        f"{result['kind']:6} {result['name'][:78]:78} {result['ms']:8.1f} ms"
        f" (queries {result['db_ms']:7.1f} ms)"
        f"  q{result['queries']:3}  examined {result['rows_examined']:>10,}"
        f"  returned {result['rows_returned']:>7,}  pages {result['pages']:>8,}"
        f"  worst: {result['worst_scan']}",
        flush=True,
    )


def captured(call) -> tuple[float, list[str]]:
    """(ms, the SQL `call()` ran)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as context:
        started = time.perf_counter()
        call()
        ms = (time.perf_counter() - started) * 1000
    return ms, [q["sql"] for q in context.captured_queries if q["sql"]]


# --- admin pages ----------------------------------------------------------------------------


def admin_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(
        username="bench-scale", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    return client


def fetch(client, url: str):
    response = client.get(url, follow=True)  # a merchant's id searched: its list
    assert response.status_code == 200, (url, response.status_code)
    return response


def page(client, url: str, repeat: int) -> tuple[float, list[str]]:
    """(median ms of `repeat` fetches after one, the SQL of the last)."""
    fetch(client, url)
    times, statements = [], []
    for _ in range(repeat):
        ms, statements = captured(lambda: fetch(client, url))
        times.append(ms)
    return statistics.median(times), statements


def filter_urls(base: str, response) -> list[str]:
    """The URL of each choice of each list filter the page offers (not "All")."""
    changelist = response.context_data["cl"]
    urls = []
    for spec in changelist.filter_specs:
        choices = [c for c in spec.choices(changelist) if not c.get("selected")]
        if len(choices) > MAX_CHOICES:
            choices = [c for c in choices if any(f"={v}" in c["query_string"] for v in FEW_CHOICES)]
        urls += [base + c["query_string"] for c in choices]
    return urls


def admin_urls(client, searches: dict[str, list[str]], merchants: list[str]):
    """(name, url) of every page to report, found by walking each changelist."""
    from django.contrib import admin
    from django.contrib.admin.utils import quote
    from django.urls import reverse

    from accounts.merchantfirst import MerchantFirstAdmin

    for model, model_admin in admin.site._registry.items():
        label = f"{model._meta.app_label}_{model._meta.model_name}"
        base = reverse(f"admin:{label}_changelist")
        yield label, base
        response = fetch(client, base)
        objects = list(response.context_data["cl"].result_list[:1])
        if objects:
            change = reverse(f"admin:{label}_change", args=[quote(objects[0].pk)])
            yield f"{label} change", change
        scopes = [f"?merchant={m}" for m in merchants]
        if not isinstance(model_admin, MerchantFirstAdmin):
            scopes = [""]
        for scope in scopes:
            if scope:
                yield f"{label} {scope}", base + scope
            scoped = fetch(client, base + scope)
            for url in filter_urls(base, scoped):
                yield f"{label} {url.split('?', 1)[1]}", url
        for term in searches.get(label, []):
            yield f"{label} search {term}", f"{base}?q={term}"


def pages_report(kind: str, url: str, client, pages, repeat: int) -> list[dict]:
    """Each (name, path) of `pages` fetched by `client`, timed, its queries explained."""
    results, seen = [], set()
    for name, target in pages:
        if target in seen or not ONLY.search(name):
            continue
        seen.add(target)
        ms, statements = page(client, target, repeat)
        results.append(summary(kind, name, ms, explain_all(url, statements)))
        show(results[-1])
    return results


def admin_report(url: str, searches: dict, merchants: list[str], repeat: int) -> list[dict]:
    client = admin_client()
    return pages_report("admin", url, client, admin_urls(client, searches, merchants), repeat)


# --- beat tasks -----------------------------------------------------------------------------


class RolledBack(Exception):
    pass


def run_rolled_back(task) -> None:
    from django.db import transaction

    try:
        with transaction.atomic():
            task()
            raise RolledBack
    except RolledBack:
        pass


def beat_tasks() -> list[tuple[str, object]]:
    """Every task of CELERY_BEAT_SCHEDULE, plus what reads the same tables on a schedule of
    its own: the metrics scrape's webhook backlog and the dead-letter command's list."""
    from django.conf import settings
    from django.utils import timezone
    from django.utils.module_loading import import_string

    from webhooks.metrics import backlog
    from webhooks.selectors import dead_letter_batches

    tasks = [
        (entry["task"], import_string(entry["task"]))
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
    ]
    tasks.append(("metrics: webhook backlog", lambda: backlog(timezone.now())))
    tasks.append(("requeue_dead_letters (a batch)", lambda: next(dead_letter_batches(), None)))
    return tasks


def beat_report(url: str, seconds: float) -> list[dict]:
    """Each beat task once, rolled back; purges limited to `seconds` (one or a few batches:
    a batch's queries are the same whatever the run's length)."""
    from infra import retention

    retention.RUN_SECONDS = seconds
    defaults = retention.delete_in_batches.__kwdefaults__
    defaults["seconds"] = seconds
    results = []
    for name, task in beat_tasks():
        if not ONLY.search(name):
            continue
        ms, statements = captured(lambda task=task: run_rolled_back(task))
        results.append(summary("beat", name, ms, explain_all(url, statements)))
        show(results[-1])
    return results
