"""What every operation of the OpenAPI description shares (docs/openapi.md): the schema class
DRF uses for our views, the error envelope, the headers, the keys, the list envelope and the
schemas of the API's own serializer fields. Each room declares its operations in
`<room>/openapi.py`; views carry only the `extend_schema` decorator naming them."""

import inspect
from http import HTTPStatus

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, inline_serializer
from rest_framework import serializers

from api.errors import MAX_MESSAGE_CHARS, MAX_PARAM_CHARS, RATE_LIMIT_SCOPE_HEADER
from api.fields import (
    MAX_AMOUNT,
    MAX_ID_LENGTH,
    MAX_METADATA_KEY_LENGTH,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_LENGTH,
    MAX_STRING_LENGTH,
)
from api.idempotency import KEY_MAX_LENGTH
from api.pagination import MAX_LIMIT

SECRET_KEY = "secretKey"
PUBLISHABLE_KEY = "publishableKey"
SECURITY_SCHEMES = {
    SECRET_KEY: {
        "type": "http",
        "scheme": "bearer",
        "description": "A secret key (`sk_test_...` / `sk_live_...`): every endpoint.",
    },
    PUBLISHABLE_KEY: {
        "type": "http",
        "scheme": "bearer",
        "description": "A publishable key (`pk_test_...`): tokenization and the test-card list.",
    },
}

ERROR_TYPES = [
    "validation_error",
    "authentication_error",
    "card_error",
    "authorization_error",
    "not_found_error",
    "idempotency_error",
    "processing_error",
    "rate_limit_error",
    "api_error",
]


class ObjectName(serializers.CharField):
    """The `object` field of a response: always the one value."""

    def __init__(self, value: str, **kwargs):
        self.value = value
        super().__init__(**kwargs)


class ObjectNameSchema(OpenApiSerializerFieldExtension):
    target_class = ObjectName

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "const": self.target.value}


class ErrorBody(serializers.Serializer):
    type = serializers.ChoiceField(choices=ERROR_TYPES)
    code = serializers.CharField()
    message = serializers.CharField(max_length=MAX_MESSAGE_CHARS)
    param = serializers.CharField(allow_null=True, max_length=MAX_PARAM_CHARS)
    decline_code = serializers.CharField(required=False, help_text="Only on card_error.")
    payment = serializers.CharField(
        required=False,
        help_text="The id of the payment a decline (402) or a failure (422 `payment_failed`) "
        "was kept as. Not in the spec (additive).",
    )
    request_id = serializers.CharField(allow_null=True)


class Error(serializers.Serializer):
    """The error envelope (spec "Errors"): every 4xx and 5xx answer."""

    error = ErrorBody()


# Every operation can answer these; the rest are named per operation (`errors=` below).
COMMON_ERRORS = (400, 401, 403, 429)
# A fault (500 `internal_error`) or the processor's (`connector_http_error`, which the sandbox's
# `_svc_test_http_error` answers on purpose): `api_error`, to retry with the same
# Idempotency-Key (spec "Errors"). Named one by one: not every generator reads `5XX`.
SERVER_ERRORS = (500, 502, 503, 504)


def error_responses(*statuses: int) -> dict:
    return {status: Error for status in statuses}


def list_of(item: type[serializers.Serializer], name: str, **extra) -> serializers.Serializer:
    """The list envelope (spec "Pagination") of `item`."""
    return inline_serializer(
        name=name,
        fields={
            "object": ObjectName("list"),
            "data": item(many=True),
            "has_more": serializers.BooleanField(),
            "next_cursor": serializers.CharField(allow_null=True),
            **extra,
        },
    )


class Named(serializers.Field):
    """A field whose schema is the component a room above registered with `named`: how a
    lower room (webhooks' events) names a resource of a higher one (a Payment, a Refund)
    without importing it (ARCHITECTURE.md)."""

    def __init__(self, component: str, **kwargs):
        self.component = component
        super().__init__(**kwargs)


NAMED: dict[str, type[serializers.Serializer]] = {}


def named(serializer: type[serializers.Serializer]) -> type[serializers.Serializer]:
    NAMED[serializer.__name__] = serializer
    return serializer


class NamedSchema(OpenApiSerializerFieldExtension):
    target_class = Named

    def map_serializer_field(self, auto_schema, direction):
        return auto_schema.resolve_serializer(NAMED[self.target.component], direction).ref


def previous_attributes_of(serializer: type[serializers.Serializer], name: str):
    """`data.previous_attributes` of the resource's events: any of its top-level fields, each
    with its old value, null for one that had none (events.services.previous_attributes)."""
    fields = {
        field_name: type(field)(
            *field._args, **{**field._kwargs, "required": False, "allow_null": True}
        )
        for field_name, field in serializer._declared_fields.items()
    }
    return named(type(name, (serializers.Serializer,), fields))


def spec(summary: str, section: str, description: str = "") -> dict:
    """An operation's `summary` and `description`, the description naming the spec section it
    implements (`extend_schema(**spec(...))`)."""
    where = f'Spec: "{section}".' if section else "Not in the spec (additive)."
    return {"summary": summary, "description": f"{description}\n\n{where}".strip()}


def mark_enums_open(result, generator, request, public):
    """drf-spectacular postprocessing hook: every enum is open (`x-open-enum: true`): a client
    must accept a member it does not know (spec "Common conventions", docs/openapi.md)."""

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("enum"), list):
                node["x-open-enum"] = True
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result


# A query parameter's value: at most MAX_STRING_LENGTH characters, as any string input
# (api.parsers.refuse_overlong_query_values).
QUERY_STRING = {"type": "string", "maxLength": MAX_STRING_LENGTH}

PAGE_PARAMETERS = [
    OpenApiParameter("limit", int, description=f"1 to {MAX_LIMIT}; default 25.", required=False),
    OpenApiParameter(
        "starting_after", QUERY_STRING, description="A cursor or an id.", required=False
    ),
    OpenApiParameter(
        "ending_before", QUERY_STRING, description="A cursor or an id.", required=False
    ),
]

STRING = {"type": "string"}
REQUEST_ID_HEADER = OpenApiParameter(
    "X-Request-Id",
    STRING,
    OpenApiParameter.HEADER,
    response=True,
    required=True,
    description="`req_` + ULID; also `error.request_id`.",
)
SERVICE_VERSION_RESPONSE = OpenApiParameter(
    "Service-Version",
    STRING,
    OpenApiParameter.HEADER,
    response=True,
    required=True,
    description="The API version the request was answered with.",
)
SERVICE_VERSION_REQUEST = OpenApiParameter(
    "Service-Version",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Overrides the version pinned on the key; an unsupported one falls back to it.",
)
RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    {"type": "string", "pattern": "^[0-9]+$"},
    OpenApiParameter.HEADER,
    response=[429],
    required=True,
    description="Seconds to wait before retrying.",
)
RATE_LIMIT_SCOPE = OpenApiParameter(
    RATE_LIMIT_SCOPE_HEADER,
    {"type": "string", "enum": ["key", "address"]},
    OpenApiParameter.HEADER,
    response=[429],
    required=False,
    description=(
        "The limit spent: `key`, the API key's own rate; `address`, the client address's"
        " limit on callers without a valid secret key."
    ),
)
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": KEY_MAX_LENGTH},
    OpenApiParameter.HEADER,
    required=False,
    description="Same key and body within 24 hours: the original response, byte for byte.",
)
IDEMPOTENT_REPLAYED = OpenApiParameter(
    "Idempotent-Replayed",
    {"type": "string", "enum": ["true"]},
    OpenApiParameter.HEADER,
    response=True,
    required=False,
    description="Present on a replayed response.",
)


class ServiceAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema reading the attributes of api.views.ServiceAPIView: which
    keys may call a view, whether it takes `Idempotency-Key`, and the headers and error
    answers every view shares."""

    def get_description(self):
        """The handler's or the view's own docstring: the one every view inherits from
        ServiceAPIView describes our internals, not the operation."""
        method = getattr(self.view, getattr(self.view, "action", self.method.lower()), None)
        return inspect.getdoc(method) or self.view.__class__.__dict__.get("__doc__") or ""

    def map_parsers(self):
        return ["application/json"]  # any Content-Type is parsed as JSON; JSON is what to send

    def get_auth(self):
        names = [SECRET_KEY]
        if getattr(self.view, "allow_publishable_key", False):
            names.append(PUBLISHABLE_KEY)
        for name in names:
            self.registry.register_on_missing(
                ResolvedComponent(
                    name=name,
                    type=ResolvedComponent.SECURITY_SCHEMA,
                    object=name,
                    schema=SECURITY_SCHEMES[name],
                )
            )
        return [{name: []} for name in names]

    def get_operation_id(self):
        """`<path>_list` for a collection's GET: the default calls it `_retrieve`, as the
        item's GET, since our views have no queryset to tell them apart."""
        operation_id = super().get_operation_id()
        if self.method == "GET" and "{" not in self.path:
            return operation_id.removesuffix("_retrieve") + "_list"
        return operation_id

    def _resolve_path_parameters(self, variables):
        """Path ids are at most 64 characters (spec "Limits"); a longer one is a 404 like
        any id that is not of its resource's shape."""
        parameters = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            if parameter["schema"].get("type") == "string":
                parameter["schema"] = {**parameter["schema"], "maxLength": MAX_ID_LENGTH}
        return parameters

    def is_idempotent_post(self) -> bool:
        return self.method == "POST" and not getattr(self.view, "ignores_idempotency_key", True)

    def get_override_parameters(self):
        parameters = [
            *super().get_override_parameters(),
            SERVICE_VERSION_REQUEST,
            SERVICE_VERSION_RESPONSE,
            REQUEST_ID_HEADER,
            RETRY_AFTER,
            RATE_LIMIT_SCOPE,
        ]
        if self.is_idempotent_post():
            parameters += [IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED]
        return parameters

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        statuses = [*COMMON_ERRORS, *SERVER_ERRORS]
        if "{" in self.path:
            statuses.append(404)
        if self.is_idempotent_post():
            # 409: the key's conflicts; 422: a valid request the resource's state or the
            # account's limits refuse (a transition, a refund of nothing, an endpoint limit).
            statuses += [409, 422]
        for status in statuses:
            if str(status) not in responses:
                responses[str(status)] = self._get_response_for_code(Error, str(status))
        for status, response in responses.items():
            response["description"] = response["description"] or status_phrase(int(status))
        return dict(sorted(responses.items()))


# RFC 9110's names, which Python 3.13 uses and 3.11 does not ("Unprocessable Entity"): the
# description must be the same whichever supported interpreter generates it.
RFC_9110_PHRASES = {
    413: "Content Too Large",
    416: "Range Not Satisfiable",
    422: "Unprocessable Content",
}


def status_phrase(status: int) -> str:
    return RFC_9110_PHRASES.get(status) or HTTPStatus(status).phrase


class AmountFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "api.fields.AmountField"

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "integer", "minimum": self.target.min_value, "maximum": MAX_AMOUNT}


class CurrencyFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "api.fields.CurrencyField"

    def map_serializer_field(self, auto_schema, direction):
        return {
            "type": "string",
            "pattern": "^[A-Za-z]{3}$",
            "description": "A supported ISO 4217 code; returned lowercase.",
        }


class MetadataFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "api.fields.MetadataField"

    def map_serializer_field(self, auto_schema, direction):
        return {
            "type": "object",
            "maxProperties": MAX_METADATA_KEYS,
            "propertyNames": {"minLength": 1, "maxLength": MAX_METADATA_KEY_LENGTH},
            "additionalProperties": {
                "oneOf": [
                    {"type": "string", "maxLength": MAX_METADATA_VALUE_LENGTH},
                    {"type": "number"},
                    {"type": "boolean"},
                    {"type": "null"},
                ]
            },
        }


def exchange(name: str, request: dict, response: dict, status: int = 201) -> list:
    """A request example and the response the API gave it, under one name: a real exchange in
    test mode (tests/api/test_openapi_examples.py sends the request and pairs the two by
    name)."""
    return [
        OpenApiExample(name, request, request_only=True),
        OpenApiExample(name, response, response_only=True, status_codes=[str(status)]),
    ]
