"""Walks an OpenAPI schema for the tests that check every part of it (test_openapi,
test_openapi_types)."""

from collections.abc import Iterator

# Values, not schemas: an example or a default may hold any JSON, `type` keys included.
NOT_SCHEMAS = {"example", "examples", "default", "enum", "const"}


def schema_nodes(components: dict, node, where: str, seen: set) -> Iterator[tuple[dict, str]]:
    """Every schema under `node` with where it stands (`Component.field.field`), following
    $refs to `components` once each (`seen` holds the names already followed)."""
    if isinstance(node, list):
        for item in node:
            yield from schema_nodes(components, item, where, seen)
        return
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            yield from schema_nodes(components, components[name], name, seen)
        return
    yield node, where
    for key, value in node.items():
        if key == "properties":
            for name, field in value.items():
                yield from schema_nodes(components, field, f"{where}.{name}", seen)
        elif key not in NOT_SCHEMAS:
            yield from schema_nodes(components, value, where, seen)
