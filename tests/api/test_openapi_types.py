"""What a typed client generated from docs/openapi.yaml relies on (issue 24, docs/openapi.md):
every object a response carries is typed, events are a oneOf by type family, enums are marked
open, list filters have their real types, every error status (5xx included) is the envelope,
and every operation has a summary and names its spec section."""

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from events.catalogue import EVENT_TYPES_BY_FAMILY
from tests.api.schema_walk import schema_nodes

SCHEMA = yaml.safe_load((Path(settings.BASE_DIR) / "docs" / "openapi.yaml").read_text())
COMPONENTS = SCHEMA["components"]["schemas"]
OPERATIONS = [
    (method, path, operation)
    for path, item in SCHEMA["paths"].items()
    for method, operation in item.items()
]
# Free-form on purpose: what the spec leaves open ("not shown") or the merchant's own data.
FREE_FORM = {"PaymentMethodDetails.details"}


def untyped_objects(node, where: str, seen: set) -> list[str]:
    """The places under `node` where an object has neither properties nor a schema for its
    values: what a generator turns into `{[key: string]: unknown}`."""
    return [
        place
        for schema, place in schema_nodes(COMPONENTS, node, where, seen)
        if is_object(schema)
        and "properties" not in schema
        and not schema.get("additionalProperties")
        and place not in FREE_FORM
    ]


def is_object(schema: dict) -> bool:
    types = schema.get("type")
    return types == "object" or (isinstance(types, list) and "object" in types)


def test_every_object_a_response_carries_is_typed():
    seen: set = set()
    found = []
    for method, path, operation in OPERATIONS:
        for status, response in operation["responses"].items():
            for content in response.get("content", {}).values():
                found += untyped_objects(content["schema"], f"{method} {path} {status}", seen)
    assert not found


def test_the_parts_a_shop_branches_on_are_named_components():
    payment = COMPONENTS["Payment"]["properties"]
    outcome = COMPONENTS["Outcome"]["properties"]
    assert outcome["decline_is_soft"]["type"] == ["boolean", "null"]
    assert set(outcome) >= {"response_code", "decline_code", "three_ds", "risk_score"}
    assert payment["outcome"] == {"$ref": "#/components/schemas/Outcome"}
    assert set(COMPONENTS["PaymentCard"]["required"]) >= {"brand", "last4", "network_token"}
    assert set(COMPONENTS["PaymentFees"]["properties"]) == {"amount", "currency", "breakdown"}
    assert COMPONENTS["NextAction"]["properties"]["redirect"]
    assert COMPONENTS["Refund"]["properties"]["fee"]["oneOf"][0]["$ref"].endswith("/RefundFee")
    # String length limits of the spec's resources.
    assert payment["reference"]["maxLength"] == 64
    assert payment["statement_descriptor"]["maxLength"] == 22
    assert COMPONENTS["Refund"]["properties"]["reason"]["maxLength"] == 200


def test_events_are_a_oneof_by_type_family_whose_object_is_a_payment_or_a_refund():
    for name, families in (("Event", ""), ("EventWithAttempts", "WithAttempts")):
        event = COMPONENTS[name]
        assert event["discriminator"]["propertyName"] == "type"
        mapping = event["discriminator"]["mapping"]
        for family, resource in (("payment", "Payment"), ("refund", "Refund")):
            member = f"#/components/schemas/{resource}Event{families}"
            assert {t: mapping[t] for t in EVENT_TYPES_BY_FAMILY[family]} == dict.fromkeys(
                EVENT_TYPES_BY_FAMILY[family], member
            )
            data = COMPONENTS[f"{resource}EventData"]["properties"]
            assert data["object"]["allOf"] == [{"$ref": f"#/components/schemas/{resource}"}]
            previous = data["previous_attributes"]["allOf"][0]["$ref"].rsplit("/", 1)[-1]
            assert set(COMPONENTS[previous]["properties"]) == set(
                COMPONENTS[resource]["properties"]
            )
            assert "required" not in COMPONENTS[previous]
    listed = COMPONENTS["EventList"]["properties"]["data"]["items"]
    assert listed == {"$ref": "#/components/schemas/Event"}


def enums(node, where: str = ""):
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield where, node
        for key, value in node.items():
            yield from enums(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from enums(value, f"{where}/{index}")


def test_every_enum_is_marked_open():
    found = list(enums(SCHEMA))
    assert len(found) > 10
    assert [where for where, node in found if node.get("x-open-enum") is not True] == []


def test_list_filters_have_their_real_types():
    parameters = {
        p["name"]: p["schema"] for p in SCHEMA["paths"]["/v1/payments"]["get"]["parameters"]
    }
    for name in ("amount[gte]", "amount[lte]", "limit"):
        assert parameters[name]["type"] == "integer", name
    for name in ("created[gte]", "created[lte]"):
        options = parameters[name]["oneOf"]
        assert {"type": "integer", "minimum": 0, "description": "Unix seconds."} in options
        assert any(option.get("format") == "date-time" for option in options)


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS)
def test_every_error_status_5xx_included_is_the_envelope(method, path, operation):
    responses = operation["responses"]
    assert {"500", "502", "503", "504"} <= set(responses)
    for status, response in responses.items():
        if int(status) >= 400:
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Error"}, status


@pytest.mark.parametrize(("method", "path", "operation"), OPERATIONS)
def test_every_operation_has_a_summary_and_names_its_spec_section(method, path, operation):
    assert operation.get("summary")
    description = operation.get("description", "")
    section = re.search(r'Spec: "Endpoints > [^">]+ > ([A-Z]+) ([^"]+)"\.', description)
    if section is None:
        assert "Not in the spec (additive)." in description
        return
    spec_path = re.sub(r"\{[a-z_]+\}", ":id", path).replace(":id", "{}")
    named = re.sub(r":[A-Za-z]+", "{}", section[2])
    assert section[1] == method.upper() and spec_path in named, (section[0], method, path)


def test_the_event_types_the_service_never_sends_say_so():
    """Issue 38: /docs/ listed dispute, payout... event types among the others; they are
    reserved (a subscription may name them) and the description says they are not sent."""
    lines = dict(
        re.findall(r"^\* `([\w.]+)` - (.*)$", COMPONENTS["EventType"]["description"], re.M)
    )
    for family, types in EVENT_TYPES_BY_FAMILY.items():
        sent = family in ("payment", "refund")
        for event_type in types:
            assert lines[event_type].endswith("(reserved: not sent yet)") is not sent, event_type
