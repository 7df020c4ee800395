"""The API's version, DRF and the OpenAPI description (docs/api-conventions.md,
docs/openapi.md)."""

# --- the API ---------------------------------------------------------------------------------
API_VERSION = "2026-08-19"
SUPPORTED_API_VERSIONS = ("2026-08-19",)

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.ServiceJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.AnyContentTypeJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.KeyMayCallView"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["admission.pipeline.KeyLimits"],
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",
    "COERCE_DECIMAL_TO_STRING": False,
    "DEFAULT_SCHEMA_CLASS": "api.openapi.ServiceAutoSchema",
}

# --- the OpenAPI description (docs/openapi.md) -------------------------------------------------
SPECTACULAR_SETTINGS = {
    "OAS_VERSION": "3.1.0",
    "TITLE": "Payment service API",
    "LICENSE": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
    "DESCRIPTION": "REST/JSON payments, refunds, signed webhooks and a test-mode simulator.",
    "VERSION": API_VERSION,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "REDOC_DIST": "SIDECAR",
    "WEBHOOKS": ["webhooks.openapi_webhook.EVENT_WEBHOOK"],
    # Self-hosted: the API is on the host serving the description (PUBLIC_BASE_URL).
    "SERVERS": [{"url": "/", "description": "The host serving this description."}],
    # Several resources have a `status` or a `type`: each set of choices gets its own name.
    "ENUM_NAME_OVERRIDES": {
        "PaymentStatus": "payments.states.Status",
        "CaptureMethod": "payments.models.Payment.CaptureMethod",
        "TokenType": "payments.models.Token.Type",
        "RefundStatus": "refunds.states.RefundStatus",
        "WebhookAttemptStatus": "webhooks.models.Attempt.Status",
        "WebhookEndpointStatus": "webhooks.openapi.ENDPOINT_STATUSES",
        "EventType": "events.catalogue.EVENT_TYPE_CHOICES",
        "ErrorType": "api.openapi.ERROR_TYPES",
        "PaymentMethodType": "payments.openapi.METHOD_TYPES",
        "ThreeDSStatus": "payments.openapi.THREE_DS_STATUSES",
        "AvsResult": "payments.openapi.AVS_RESULTS",
        "CvvResult": "payments.openapi.CVV_RESULTS",
        "RiskDecision": "payments.openapi.RISK_DECISIONS",
        "NextActionType": "payments.openapi.NEXT_ACTION_TYPES",
        "RefundFailureCode": "refunds.openapi.FAILURE_CODE_CHOICES",
        "PaymentEventType": "webhooks.openapi_events.PAYMENT_EVENT_TYPES",
        "RefundEventType": "webhooks.openapi_events.REFUND_EVENT_TYPES",
    },
    # Every enum marked open (docs/openapi.md "Decisions").
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.openapi.mark_enums_open",
    ],
}
