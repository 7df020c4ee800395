"""Every production shape carries the same protection (issue 34): compose.yaml runs the proxy
with the one config deploy/ holds (mounted, not copied) in front of both of the API's pools."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def services() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]


def test_there_is_one_proxy_config():
    configs = [
        path.relative_to(ROOT).as_posix()
        for path in ROOT.rglob("*haproxy*.cfg")
        if not {".venv", "var", "node_modules"} & set(path.relative_to(ROOT).parts)
    ]
    assert configs == ["deploy/haproxy.cfg"]


def test_compose_runs_the_proxy_with_it_in_front_of_both_pools():
    running = services()
    proxy = running["proxy"]
    assert proxy["volumes"] == ["./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro"]
    assert proxy["environment"]["NODE1"] == "web:8000"
    assert proxy["environment"]["NODE1_TEST"] == "web-test:8000"
    assert (running["web"]["command"], running["web-test"]["command"]) == (["web"], ["web-test"])
    assert "ports" not in running["web"] and "ports" not in running["web-test"]
    assert proxy["ports"] == ["127.0.0.1:8000:8000"]


def test_compose_trusts_the_proxys_network_for_the_client_address():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    [network] = compose["networks"]["default"]["ipam"]["config"]
    for pool in ("web", "web-test"):
        assert services()[pool]["environment"]["API_TRUSTED_PROXIES"] == network["subnet"]


def test_make_run_says_it_is_a_development_shape():
    """`make run` has no proxy: it says so when it starts, not only in a comment."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert any("echo" in line and "DEVELOPMENT shape" in line for line in recipe.splitlines())
