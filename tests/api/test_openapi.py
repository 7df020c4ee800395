"""The OpenAPI description (docs/openapi.md): generated from the code without a warning, valid
OpenAPI 3.1, committed as docs/openapi.yaml exactly as generated, covering every /v1 route,
and served without an API key at /openapi.json, /openapi.yaml and /docs/."""

import json
import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver

from api.views import ServiceAPIView
from tests.api.schema_walk import schema_nodes

COMMITTED = Path(settings.BASE_DIR) / "docs" / "openapi.yaml"
HTTP_METHODS = ("get", "post", "delete")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> str:
    """The schema as `make openapi` writes it: validated, and any warning fails the command."""
    out = tmp_path_factory.mktemp("openapi") / "openapi.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    return out.read_text()


@pytest.fixture(scope="module")
def schema(generated) -> dict:
    return yaml.safe_load(generated)


def test_schema_is_openapi_3_1(schema):
    assert schema["openapi"] == "3.1.0"
    assert schema["info"]["version"] == settings.API_VERSION


def test_committed_schema_is_what_the_code_generates(generated):
    assert COMMITTED.read_text() == generated, (
        "docs/openapi.yaml is out of date: run `make openapi` and commit it"
    )


def service_routes(patterns=None, prefix: str = "") -> dict[str, set[str]]:
    """Every route served by a ServiceAPIView -> the methods its view handles."""
    routes = {}
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            routes.update(service_routes(entry.url_patterns, prefix + str(entry.pattern)))
            continue
        view = getattr(entry.callback, "view_class", None)
        if isinstance(entry, URLPattern) and view and issubclass(view, ServiceAPIView):
            path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", prefix + str(entry.pattern))
            routes[path] = {method for method in HTTP_METHODS if hasattr(view, method)}
    return routes


def test_every_v1_operation_is_described(schema):
    routes = service_routes()
    assert routes, "no ServiceAPIView route found"
    described = {path: set(item) & set(HTTP_METHODS) for path, item in schema["paths"].items()}
    assert described == routes


def test_every_operation_answers_the_error_envelope(schema):
    for operation in (op for item in schema["paths"].values() for op in item.values()):
        for status in ("400", "401", "403", "429"):
            content = operation["responses"][status]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/Error"}
        headers = operation["responses"]["429"]["headers"]
        assert {"Retry-After", "X-Request-Id", "Service-Version"} <= set(headers)
    body = schema["components"]["schemas"]["ErrorBody"]
    assert set(body["required"]) == {"type", "code", "message", "param", "request_id"}


def test_path_operations_answer_404_and_idempotent_posts_409_and_422(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            names_a_resource = "{" in path or path == "/v1/sandbox/simulate-webhook"
            assert ("404" in operation["responses"]) == names_a_resource, (method, path)
            idempotent = method == "post" and path != "/v1/sandbox/tokens"
            names = {parameter["name"] for parameter in operation.get("parameters", [])}
            assert ("Idempotency-Key" in names) == idempotent, (method, path)
            assert ("409" in operation["responses"]) == idempotent, (method, path)
            assert ("422" in operation["responses"]) == idempotent, (method, path)


def test_a_decline_and_a_failure_are_described_on_create_and_confirm(schema):
    for path in ("/v1/payments", "/v1/payments/{payment_id}/confirm"):
        assert {"402", "422"} <= set(schema["paths"][path]["post"]["responses"])


def test_security_schemes_tell_secret_from_publishable_keys(schema):
    schemes = schema["components"]["securitySchemes"]
    assert set(schemes) == {"secretKey", "publishableKey"}
    assert all(s["type"] == "http" and s["scheme"] == "bearer" for s in schemes.values())
    paths = schema["paths"]
    assert paths["/v1/payments"]["post"]["security"] == [{"secretKey": []}]
    browser = [{"secretKey": []}, {"publishableKey": []}]
    assert paths["/v1/sandbox/tokens"]["post"]["security"] == browser
    assert paths["/v1/sandbox/test-cards"]["get"]["security"] == browser


def request_schema(schema, path: str) -> dict:
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    name = body["schema"]["$ref"].rsplit("/", 1)[-1]
    return schema["components"]["schemas"][name]


def test_request_bodies_come_from_the_input_serializers(schema):
    create = request_schema(schema, "/v1/payments")
    assert set(create["required"]) == {"amount", "currency", "reference", "payment_method"}
    fields = create["properties"]
    assert fields["amount"] == {"type": "integer", "minimum": 1, "maximum": 2**53 - 1}
    assert (fields["reference"]["minLength"], fields["reference"]["maxLength"]) == (1, 64)
    assert fields["metadata"]["maxProperties"] == 50
    capture_method = schema["components"]["schemas"]["CaptureMethod"]
    assert capture_method["enum"] == ["automatic", "manual"]
    token = request_schema(schema, "/v1/sandbox/tokens")["properties"]
    assert (token["exp_month"]["minimum"], token["exp_month"]["maximum"]) == (1, 12)
    refund = request_schema(schema, "/v1/payments/{payment_id}/refunds")
    assert "required" not in refund  # every field optional: the remaining amount by default


def unbounded_strings(schema, node, where: str, seen: set) -> list[str]:
    """Where `node` (a request body's schema, $refs followed) takes a string with no bound:
    no maxLength, and no enum, const or anchored pattern of fixed length."""
    components = schema["components"]["schemas"]
    return [
        place
        for part, place in schema_nodes(components, node, where, seen)
        if takes_string(part) and not is_bounded(part)
    ]


def takes_string(part: dict) -> bool:
    types = part.get("type", [])
    return "string" in ([types] if isinstance(types, str) else types)


def is_bounded(part: dict) -> bool:
    bounded = "maxLength" in part or "enum" in part or "const" in part
    return bounded or bool(re.fullmatch(r"\^[^*+]*\$", part.get("pattern", "")))  # no * or +


def test_every_string_a_request_body_takes_has_a_maximum_length(schema):
    """Issue 20 item 5 (docs/api-conventions.md "String lengths")."""
    unbounded = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                unbounded += unbounded_strings(schema, body["schema"], f"{method} {path}", set())
    assert unbounded == []


def test_every_string_a_query_or_path_parameter_takes_has_a_maximum_length(schema):
    unbounded = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] in ("query", "path"):
                    where = f"{method} {path} {parameter['name']}"
                    unbounded += unbounded_strings(schema, parameter["schema"], where, set())
    assert unbounded == []


def test_the_schema_is_served_without_an_api_key(client, schema):
    as_json = client.get("/openapi.json")
    assert as_json.status_code == 200
    assert json.loads(as_json.content) == schema
    as_yaml = client.get("/openapi.yaml")
    assert as_yaml.status_code == 200
    assert yaml.safe_load(as_yaml.content) == schema


def test_the_docs_page_is_redoc_served_from_our_static_files(client):
    page = client.get("/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"{settings.STATIC_URL}drf_spectacular_sidecar/redoc/" in html
    assert "/openapi.json" in html
    assert not re.search(r"""(src|href)=["']https?://""", html), "the page must work offline"
    assert finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")
