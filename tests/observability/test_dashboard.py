"""deploy/grafana-dashboard.json reads only metrics that docs/observability.md documents and
the code defines (tests/e2e/test_prometheus.py runs each query through Prometheus)."""

import json
import re

from tests.e2e.processes import ROOT

DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"
SUFFIXES = re.compile(r"_(total|bucket|count|sum)$")
NAME = re.compile(r"\bsvc_[a-z_]+")


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def family(name: str) -> str:
    return SUFFIXES.sub("", name)


def defined_in_code() -> set[str]:
    sources = [
        path.read_text()
        for room in ("api", "config", "payments", "webhooks")
        for path in (ROOT / room).rglob("*.py")
    ]
    return {family(name) for text in sources for name in re.findall(r'"(svc_[a-z_]+)"', text)}


def test_the_dashboard_reads_documented_metrics_that_the_code_defines():
    read = {family(name) for query in dashboard_queries() for name in NAME.findall(query)}
    documented = {
        family(name)
        for name in re.findall(r"`(svc_[a-z_]+)`", (ROOT / "docs/observability.md").read_text())
    }
    assert len(dashboard_queries()) >= 16
    assert read <= documented
    assert documented <= defined_in_code()
