"""The base every API view derives from, and the envelope for Django's own 404 and 500."""

import functools

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import APIException
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from api import metrics
from api.carddata import refuse_raw_card_data
from api.errors import ApiFailure, ServiceError, ValidationFailed, unrecognized_url
from api.idempotency import (
    KEY_HEADER,
    Answer,
    Claim,
    KeyNotClaimed,
    Render,
    idempotency_claim,
    idempotency_defer,
    idempotency_key,
    idempotency_release,
    idempotency_settle,
)
from api.middleware import error_response
from api.pagination import list_envelope, paginate
from api.parsers import (
    BODYLESS_METHODS,
    refuse_any_body,
    refuse_overcomplex_body,
    refuse_overlong_query_values,
    request_body,
)
from api.replay import BodyCipher, replay_response
from infra import failpoints, revision


class _Replay(Exception):
    """Raised before the handler to answer with a stored response instead."""

    def __init__(self, response):
        super().__init__("idempotent replay")
        self.response = response


def require_json_object(request) -> None:
    """Every POST body is a JSON object (or empty), also on endpoints that read nothing from it
    (cancel, advance): spec "Errors > Types", a body that is not valid JSON is 400, so `{` is
    never answered as if it were no body. After the idempotency claim, so a replay of it is
    the same 400, as for any other validation failure."""
    if not isinstance(request.data, dict):  # parsing raises ParseError -> 400 invalid_json
        raise ValidationFailed("The request body must be a JSON object.")


# Publishable keys are for the browser (spec "Authentication" 2): the endpoints they may call
# answer CORS preflights and allow any origin. No cookies are involved, so `*` gives nothing
# away; the Authorization header still decides who may do what.
BROWSER_CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "X-Request-Id, Service-Version",
}
BROWSER_PREFLIGHT_HEADERS = {
    **BROWSER_CORS_HEADERS,
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Service-Version",
    "Access-Control-Max-Age": "600",
}


class ServiceAPIView(APIView):
    """Thin views: parse with a serializer, call one service, render.

    Every view gets, in this order (ARCHITECTURE.md "How a request flows"): authentication
    and permissions, the per-key rate limit and the merchant's concurrency budget (DRF
    throttle `admission.pipeline.KeyLimits`: admission's steps 4 and 5), the body-size limit, the
    raw-card guard on the raw body, then idempotent replay, before the handler runs; a GET,
    HEAD or DELETE with a body is refused instead, unread. Class attributes read by the shared
    request machinery:
    - `allow_publishable_key`: publishable keys may call it (tokens, test-card list);
    - `test_mode_only`: live keys get 403 `test_mode_required`;
    - `accepts_card_data`: the raw-card guard lets card data through (only the tokenizer);
    - `ignores_idempotency_key`: no idempotent replay (only the tokenizer, spec Common rules 1);
    - `stored_response_cipher`: responses kept for replay are encrypted with it (views whose
      responses show a secret: webhook endpoint create and roll-secret);
    - `budget_cost`: units of the merchant's concurrency budget a request holds while it runs
      (admission.budgets; its body's size adds more);
    - `defers_its_claim`: its POST's key is claimed by the statement that starts its work
      (`run_claimed`), not in a round trip of its own before the handler (only the create).
    """

    allow_publishable_key = False
    test_mode_only = False
    accepts_card_data = False
    ignores_idempotency_key = False
    stored_response_cipher: BodyCipher | None = None
    budget_cost = 1
    defers_its_claim = False
    _held_claim: Claim | None = None  # set by initial() when this request claimed its key

    # DRF makes each of these anew on every request. Ours keep no state, so a view class's
    # requests share one of each; throttles (KeyLimits keeps its wait) are still made per
    # request, as DRF makes them.
    def get_parsers(self):
        return _shared_instances(type(self), "parser_classes")

    def get_authenticators(self):
        return _shared_instances(type(self), "authentication_classes")

    def get_permissions(self):
        return _shared_instances(type(self), "permission_classes")

    def get_renderers(self):
        return _shared_instances(type(self), "renderer_classes")

    @property
    def default_response_headers(self):
        """DRF's `Allow` (every response carries it), joined once per view class: the first
        request's view, set up as every later one is (Django's setup adds `head` to a view with
        `get`), names the same methods."""
        allow = _ALLOW_HEADERS.get(type(self))
        if allow is None:
            allow = _ALLOW_HEADERS[type(self)] = ", ".join(self.allowed_methods)
        return {"Allow": allow}

    def initialize_request(self, request, *args, **kwargs):
        """DRF's request, holding the attributes of Django's that the request machinery reads
        most (~20 times a create): DRF's `Request` finds the others on Django's request by a
        failed lookup and its `__getattr__`. None changes once a request is dispatched."""
        drf_request = super().initialize_request(request, *args, **kwargs)
        drf_request.__dict__.update(
            {
                name: request.__dict__[name]
                for name in _COPIED_ATTRIBUTES
                if name in request.__dict__
            }
        )
        return drf_request

    def initial(self, request, *args, **kwargs):
        if self._claims(request):
            revision.will_confirm()  # the claim's statement reads it (api.idempotency)
        super().initial(request, *args, **kwargs)  # authentication, permissions, admission
        refuse_overlong_query_values(request)
        if request.method in BODYLESS_METHODS:
            refuse_any_body(request)
            return
        body = request_body(request)
        refuse_overcomplex_body(body)
        if not self.accepts_card_data:
            # Before anything stores the body (or an error about it): a card number must not
            # reach the idempotency table.
            refuse_raw_card_data(body)
        self._held_claim = self.claim_idempotency_key(request, body)
        failpoints.reach(failpoints.CLAIMED)
        if request.method == "POST":
            require_json_object(request)

    def _claims(self, request) -> bool:
        """Only POSTs with the header are idempotent; a POST without one runs once, unguarded
        (decisions.md)."""
        return (
            request.method == "POST"
            and not self.ignores_idempotency_key
            and KEY_HEADER in request.META
        )

    def claim_idempotency_key(self, request, body: bytes, *, now: bool = False) -> Claim | None:
        """The request's claim of its key: deferred (written later) for a view that defers
        it, unless `now`; else claimed, or the key's stored answer raised as a replay."""
        if not self._claims(request):
            return None
        if self.defers_its_claim and not now:
            return idempotency_defer(
                merchant_id=request.auth.merchant_id, livemode=request.auth.livemode,
                key=idempotency_key(request), method=request.method, path=request.path,
                body=body, request_id=request.request_id,
            )  # fmt: skip
        claim = functools.partial(
            idempotency_claim,
            key=idempotency_key(request),
            method=request.method,
            path=request.path,
            body=body,
            request_id=request.request_id,
        )
        try:
            outcome = claim(merchant_id=request.auth.merchant_id, livemode=request.auth.livemode)
        except revision.Moved:
            # The key came from the cache under an older revision: looked up again (401 if it
            # was revoked meanwhile), then claimed under the revision just read.
            _authenticate_again(request)
            outcome = claim(merchant_id=request.auth.merchant_id, livemode=request.auth.livemode)
        if not isinstance(outcome, Claim):
            raise _Replay(replay_response(outcome, self.stored_response_cipher))
        return outcome

    def handle_exception(self, exc):
        if isinstance(exc, _Replay):
            return exc.response
        answered = _after_confirming_the_revision(self.request, exc)
        if self._held_claim is not None and self._held_claim.deferred:
            try:
                answered = self._claimed_before_refusing(answered, key_held=answered is exc)
            except _Replay as replay:
                return replay.response
        exc = answered
        claim = self._held_claim
        if claim is not None and claim.stored is not None and isinstance(exc, ServiceError):
            # A refusal the service committed with its answer (a refused capture): the answer
            # stored is the one sent.
            return self.answer_response(claim.stored)
        return super().handle_exception(exc)

    def claim(self, render: Render, *, deferred: bool = False) -> Claim | None:
        """The claim to pass to the one service that commits this request's work, with
        `render` (a pure function: the service's result and the request id -> its answer's
        bytes), which the service's last transaction stores with the work; None when the
        request holds no Idempotency-Key. A deferred claim is claimed now (its key's stored
        answer raised as a replay, or its 409) unless the service writes it (`deferred`)."""
        claim = self._held_claim
        if claim is not None and claim.deferred and not deferred:
            claim = self._claim_now()
        if claim is not None:
            claim.render = render
        return claim

    def run_claimed(self, render: Render, work, *, deferred: bool):
        """`work(claim)`, the service call given this request's claim (`claim(render,
        deferred=...)`). A deferred claim whose statement found its key held (KeyNotClaimed:
        nothing was written) is claimed as any other (replay, 409, or the key's record, its
        interrupted work resumed) and the work runs again."""
        try:
            return work(self.claim(render, deferred=deferred))
        except KeyNotClaimed:
            return work(self.claim(render))

    def _claimed_before_refusing(self, exc: Exception, *, key_held: bool) -> Exception:
        """-> what to answer a request refused before its work started, its claim still
        deferred: it claims its key first, so the key's own answer (a replay, raised, or a
        409) wins, as it would have had the key been claimed before the handler; else the
        refusal, stored under the claim as any. An error that is no refusal (a 500), or the
        API key's own refusal (`key_held` False: revoked meanwhile), claims nothing: nothing
        was written, and a retry runs again."""
        if not key_held or not isinstance(exc, ServiceError | APIException):
            self._held_claim = None
            return exc
        try:
            self._claim_now()
        except ServiceError as refusal:  # 409: the key is in use or holds another request
            return refusal
        return exc

    def _claim_now(self) -> Claim | None:
        """The deferred claim claimed now: the key's record, or its answer raised (a replay,
        a 409), which leaves the request holding no claim."""
        request, self._held_claim = self.request, None
        self._held_claim = self.claim_idempotency_key(request, request_body(request), now=True)
        return self._held_claim

    def respond(self, render: Render, result) -> HttpResponse:
        """The answer to `result`: the one stored with the work, if any, else rendered now."""
        claim = self._held_claim
        answer = claim.stored if claim is not None else None
        return self.answer_response(answer or render(result, self.request.request_id))

    def answer_response(self, answer: Answer) -> HttpResponse:
        if answer.error is not None:
            metrics.error_answered(answer.error, self.request)
        return HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)

    def dispatch(self, request, *args, **kwargs):
        """Runs the view, then stores its response under the idempotency claim (if any):
        outside any transaction of ours, since services commit their own."""
        if request.method == "OPTIONS":
            return self.answer_preflight(request)
        try:
            response = super().dispatch(request, *args, **kwargs)
            claim = self._held_claim
            if claim is not None and claim.deferred:
                raise RuntimeError("a view that defers its claim answered without claiming")
            if claim is not None and claim.stored is None:
                if hasattr(response, "render"):
                    response.render()  # the bytes stored are the bytes sent
                idempotency_settle(claim, response, self.stored_response_cipher)
        except BaseException:
            if self._held_claim is not None and not self._held_claim.deferred:
                idempotency_release(self._held_claim)
            raise
        return response

    def answer_preflight(self, request):
        """A browser's preflight carries no key, so it is answered before authentication:
        204 with CORS headers on browser endpoints, 404 like any unserved method elsewhere."""
        if not self.allow_publishable_key:
            return unrecognized_path(request)
        response = HttpResponse(status=204)
        methods = [method for method in self._allowed_methods() if method != "OPTIONS"]
        response["Access-Control-Allow-Methods"] = ", ".join(methods)
        for name, value in BROWSER_PREFLIGHT_HEADERS.items():
            response[name] = value
        return response

    def get_content_negotiator(self):
        return _ONE_FORMAT

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Service-Version"] = getattr(request, "api_version", settings.API_VERSION)
        if self.allow_publishable_key:
            for name, value in BROWSER_CORS_HEADERS.items():
                response[name] = value
        return response

    def paginated(self, queryset, *, id_prefix: str, serialize, **extra):
        """A list envelope of `serialize(item)` for the page the query parameters ask for."""
        items, has_more, next_cursor = paginate(
            queryset, self.request.query_params, id_prefix=id_prefix
        )
        return list_envelope([serialize(item) for item in items], has_more, next_cursor, **extra)


def _after_confirming_the_revision(request, exc: Exception) -> Exception:
    """A request that assumed the configuration revision (infra.revision.assume) and fails
    before its claim confirmed it reads it now: nothing is answered on an assumed revision. If
    it moved, the key is looked up again, and a refusal of it (revoked meanwhile) is the
    answer instead."""
    if revision.assumed() is None:
        return exc
    try:
        if revision.confirm(revision.read(revision.SQL, [])):
            return exc
        _authenticate_again(request)
    except (ServiceError, APIException) as refusal:
        return refusal
    except DatabaseError:
        pass  # the database is out of reach: the error the request met is answered
    return exc


def _authenticate_again(request) -> None:
    """The key looked up again, under the revision just read, as if for the first time: what
    the first lookup set on the request is dropped, so a refusal leaves none of it (the
    request log keeps no entry of a request no valid key made)."""
    for target in (request, request._request):
        for name in AUTHENTICATED_ATTRIBUTES:
            target.__dict__.pop(name, None)
    request._authenticate()


# What authentication sets on both requests (accounts.authentication.ApiKeyAuthentication).
AUTHENTICATED_ATTRIBUTES = ("merchant", "api_key", "livemode", "api_version")


class OneFormat(BaseContentNegotiation):
    """Every body is read by the one parser (JSON whatever its Content-Type, api.parsers) and
    every answer is JSON whatever `Accept` asks for (docs/request-safety.md): DRF's negotiation
    would refuse `Accept: application/xml` with a 406 it then failed to render (a 500), and
    matching media types cost CPU on every request for one possible parser and answer."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


_ONE_FORMAT = OneFormat()  # keeps no state: every request's
_ALLOW_HEADERS: dict[type, str] = {}
# Django's request attributes a DRF request holds itself (`request_id`: RequestIdMiddleware's).
_COPIED_ATTRIBUTES = ("method", "META", "path", "request_id")


@functools.cache
def _shared_instances(view_class, attribute: str) -> list:
    return [made() for made in getattr(view_class, attribute)]


@csrf_exempt  # as every /v1/ view: bearer keys, never cookies (docs/request-safety.md)
def unrecognized_path(request, *args, **kwargs):
    """Reserved and unknown paths: 404 in the envelope (spec "Common rules" 6)."""
    return error_response(unrecognized_url(request.method, request.path), request)


def handler404(request, exception=None):
    return unrecognized_path(request)


def handler500(request):
    return error_response(ApiFailure("An internal error occurred."), request)
