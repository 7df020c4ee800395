"""Reading /metrics the way Prometheus does (prometheus-client's own parser)."""

from prometheus_client.parser import text_string_to_metric_families


def scrape(client, **headers) -> dict:
    """{(sample name, frozenset of label items): value} of one GET /metrics."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    """The sample's value, 0 when absent (a counter not yet incremented has no series)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: dict, name: str, **labels) -> float:
    """The sum over every series of `name` that has `labels` (among others)."""
    wanted = set(labels.items())
    return sum(v for (n, items), v in samples.items() if n == name and wanted <= items)
