"""Where a create's app CPU goes, by layer: py-spy's raw stacks of the web workers, taken
with `--gil` (only the thread holding the GIL is sampled: Python's CPU, not waits), summed
per layer of the request (docs/payments.md "Where a create's CPU goes"). py-spy is pinned in
the test extras (`make install-test`).

A sample goes to the innermost frame that enters a layer (the claim's statement counts
for the idempotency claim, the runner's for the runner); "of which DB client" is the part
spent under psycopg or Django's database layer (composing, adapting, sending and reading
statements, the pool, transactions).

    .venv/bin/python bench/bench_payments.py --concurrency 8 --seconds 25 --profile 0 &
    # once the load runs (after the warm-up), for each granian worker:
    .venv/bin/py-spy record -p <worker pid> -d 15 -r 100 --gil --nonblocking \
        --format raw -o /tmp/spy-<pid>.txt
    .venv/bin/python bench/spy_layers.py /tmp/spy-*.txt

`--delivery` sums a webhook worker's samples by step of a delivery instead (claim, URL
check, secret, body, signature, POST, record, Celery): py-spy on the test pool's worker
during `bench_webhooks.py`'s burst phase (docs/webhooks.md "Benchmark").
"""

import collections
import re
import sys

# (layer, pattern on a frame "function (file:line)"): the entry points of each layer.
LAYERS = (
    ("metrics", r"prometheus_client|RequestMetricsMiddleware|payment_entered|connector_call"),
    ("request log", r"RequestLogMiddleware|RequestLogWriter"),
    ("authentication + key cache", r"ApiKeyAuthentication\.(authenticate|knows_without_a_query)"),
    ("limits + budgets", r"KeyLimits\.allow_request|admit \(admission/budgets|Hold\.release"),
    ("limits + budgets", r"AdmissionMiddleware"),
    (
        "body parsing + card guard",
        r"request_body \(|refuse_overcomplex|refuse_raw_card_data|AnyContentTypeJSONParser"
        r"|require_json_object|refuse_overlong|refuse_any_body",
    ),
    ("input validation", r"validated \(api/validation"),
    (
        "idempotency claim + answer",
        r"claim_idempotency_key|answer_store|idempotency_settle|idempotency_release"
        r"|ServiceAPIView\.respond|answer_response",
    ),
    (
        "runner + its statements",
        r"payment_create \(|operation_start|run \(payments/runner|_apply_create|token_take"
        r"|_take_token \(|_check_account",
    ),
    ("connector (simulator)", r"PaymentWork\.ask"),
    ("serialisation (answer)", r"payment_to_dict|dumps \(api/renderers|created \(payments/views"),
    ("events + delivery rows", r"new_events|events_written|event_values"),
    ("request id, probes", r"RequestIdMiddleware|ProbeMiddleware"),
    ("DRF machinery", r"rest_framework/"),
    (
        "Django handler + middleware",
        r"django/core/handlers|django/middleware|whitenoise|axes|adminguard|django/contrib"
        r"|django/urls|deprecation\.py|django/dispatch|HttpResponse",
    ),
    ("granian + WSGI", r"granian|config/wsgi\.py"),
)
# `--delivery`: a webhook worker's samples (bench_webhooks.py's burst), by step of a delivery.
DELIVERY_LAYERS = (
    ("claim", r"delivery_claim|_within_bulkhead"),
    ("URL check (DNS, address rules)", r"check_url"),
    ("secret decrypted", r"active_secrets"),
    ("body (event as JSON)", r"event_to_dict|dumps \(api/renderers"),
    ("signature", r"signature_header|delivery_headers"),
    ("POST (TLS, HTTP, the answer read)", r"transport\.py|urllib3|ssl\.py"),
    ("record (attempt, delivery, health)", r"delivery_record"),
    ("Celery and the broker", r"celery/|kombu/|billiard/|redis/"),
)
DATABASE_CLIENT = re.compile(r"psycopg|django/db/")


def layer_of(frames: list[str], layers=LAYERS) -> str:
    for frame in reversed(frames):
        for layer, pattern in layers:
            if re.search(pattern, frame):
                return layer
    return "other (background threads, imports)"


def main(paths: list[str]) -> None:
    layers = LAYERS
    if paths[:1] == ["--delivery"]:
        layers, paths = DELIVERY_LAYERS, paths[1:]
    samples, database, total = collections.Counter(), collections.Counter(), 0
    for path in paths:
        with open(path) as lines:
            for line in lines:
                stack, _, count = line.rstrip().rpartition(" ")
                frames, count = stack.split(";"), int(count)
                layer = layer_of(frames, layers)
                samples[layer] += count
                total += count
                if any(DATABASE_CLIENT.search(frame) for frame in frames):
                    database[layer] += count
    print(f"{total} samples holding the GIL")
    for layer, count in samples.most_common():
        print(
            f"{count / total:6.1%}  {layer:<38} of which DB client {database[layer] / total:5.1%}"
        )
    print(f"{'':6}  {'DB client in all':<38} {sum(database.values()) / total:.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
