"""Test-mode endpoints (spec "Test-mode endpoints") and the simulated challenge page."""

import datetime

from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.views import View
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from api.currencies import format_amount
from api.errors import NotFound, ProcessingFailed
from api.fields import StrictChoiceField
from api.pagination import list_envelope, paginate_fixed
from api.validation import Input, validated
from api.views import ServiceAPIView
from payments.models import Token
from payments.serializers import StrictCharField, token_to_dict
from payments.services import payment_resolve
from payments.states import Status
from payments.views import PaymentMixin, rendered
from sandbox import openapi, overrides
from sandbox.cards import CARDS
from sandbox.clock import MAX_TRAVEL, event_retries_now, payment_advance_clock
from sandbox.models import MAX_DELAY_SECONDS, TOO_MUCH
from sandbox.overrides import MAX_LATENCY_MS
from sandbox.profiles import SHARES, WEBHOOK_SHARES, profile_get, profile_set, profile_to_dict
from sandbox.reset import sandbox_reset
from sandbox.services import challenge_answer, challenge_open, token_create
from webhooks.selectors import event_get
from webhooks.serializers import event_with_attempts


class TokenInput(Input):
    type = StrictChoiceField(choices=Token.Type.choices, default=Token.Type.CARD)
    number = StrictCharField(max_length=64)
    exp_month = serializers.IntegerField(min_value=1, max_value=12)
    exp_year = serializers.IntegerField(min_value=0, max_value=9999)
    cvc = serializers.RegexField(
        r"^[0-9]{3,4}$",
        max_length=4,
        error_messages=dict.fromkeys(("invalid", "max_length"), "Must be 3 or 4 digits."),
    )
    name = StrictCharField(required=False, allow_null=True, max_length=200)

    def validate_exp_year(self, value):
        return value + 2000 if value < 100 else value  # "27" means 2027


class TokenCreate(ServiceAPIView):
    allow_publishable_key = True
    test_mode_only = True
    accepts_card_data = True
    ignores_idempotency_key = True

    @openapi.token_create
    @extend_schema(
        request=TokenInput, responses=openapi.TOKEN_CREATED, examples=openapi.TOKEN_EXAMPLES
    )
    def post(self, request):
        data = validated(TokenInput, request.data)
        # The cvc and the name are checked, then dropped: nothing needs them after this call.
        token = token_create(
            merchant=request.merchant,
            livemode=request.livemode,
            type=data["type"],
            number=data["number"],
            exp_month=data["exp_month"],
            exp_year=data["exp_year"],
        )
        return Response(token_to_dict(token), status=201)


class TestCardList(ServiceAPIView):
    allow_publishable_key = True
    test_mode_only = True

    @openapi.test_card_list
    def get(self, request):
        # Nine cards fit the default page, but `limit` and cursors hold here as on every list.
        cards, has_more, next_cursor = paginate_fixed(
            list(CARDS), request.query_params, key=lambda card: f"card_{card.number[-4:]}"
        )
        return Response(
            list_envelope(
                [card.as_listed() for card in cards],
                has_more=has_more,
                next_cursor=next_cursor,
                metadata_overrides=overrides.DESCRIPTIONS,
            )
        )


class Advance(PaymentMixin, ServiceAPIView):
    test_mode_only = True

    @openapi.advance
    def post(self, request, payment_id):
        payment = payment_resolve(
            payment=self.payment(request, payment_id),
            api_version=request.api_version,
            claim=self.claim(rendered),
        )
        return self.respond(rendered, payment)


class AdvanceClockInput(Input):
    seconds = serializers.IntegerField(min_value=1, max_value=int(MAX_TRAVEL.total_seconds()))


class AdvanceClock(PaymentMixin, ServiceAPIView):
    """Sandbox time travel (docs/sandbox.md): the payment's timed transitions due within
    `seconds` happen now."""

    test_mode_only = True

    @openapi.advance_clock
    @extend_schema(request=AdvanceClockInput)
    def post(self, request, payment_id):
        data = validated(AdvanceClockInput, request.data)
        payment = payment_advance_clock(
            payment=self.payment(request, payment_id),
            by=datetime.timedelta(seconds=data["seconds"]),
            api_version=request.api_version,
            claim=self.claim(rendered),
        )
        return self.respond(rendered, payment)


class RetryNow(ServiceAPIView):
    """A test event's retries made due now (docs/sandbox.md "Time travel"); 202: the workers
    make the attempts, which appear on GET /v1/events/:id."""

    test_mode_only = True

    @openapi.retry_now
    def post(self, request, event_id):
        event = event_get(merchant=request.merchant, livemode=request.livemode, event_id=event_id)
        event_retries_now(event=event)
        return Response(event_with_attempts(event), status=202)


class ResetInput(Input):
    webhook_endpoints = serializers.BooleanField(default=False)


class Reset(ServiceAPIView):
    """The merchant's test data deleted in bounded batches (docs/sandbox.md "Reset")."""

    test_mode_only = True

    @openapi.reset
    @extend_schema(request=ResetInput)
    def post(self, request):
        data = validated(ResetInput, request.data)
        result = sandbox_reset(
            merchant=request.merchant, webhook_endpoints=data["webhook_endpoints"]
        )
        return Response(result.as_dict())


def share_field():
    return serializers.FloatField(min_value=0.0, max_value=1.0, default=0.0)


class FailureProfileInput(Input):
    error_share = share_field()
    rate_limit_share = share_field()
    latency_share = share_field()
    latency_ms = serializers.IntegerField(min_value=0, max_value=MAX_LATENCY_MS, default=0)
    duplicate_share = share_field()
    delay_share = share_field()
    delay_seconds = serializers.IntegerField(min_value=0, max_value=MAX_DELAY_SECONDS, default=0)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)

    def validate(self, data):
        for shares in (SHARES, WEBHOOK_SHARES):
            if sum(data[name] for name in shares) > 1.0:
                raise serializers.ValidationError({shares[0]: TOO_MUCH})
        return data


class FailureProfileView(ServiceAPIView):
    """The merchant's test-mode failure profile (docs/sandbox.md "Failure profiles")."""

    test_mode_only = True

    @openapi.failure_profile_get
    def get(self, request):
        return Response(profile_to_dict(profile_get(merchant=request.merchant)))

    @openapi.failure_profile_set
    @extend_schema(request=FailureProfileInput)
    def post(self, request):
        data = validated(FailureProfileInput, request.data)
        return Response(profile_to_dict(profile_set(merchant=request.merchant, **data)))


CHALLENGE_ACTIONS = ("approve", "decline", "timeout")


class ChallengePage(View):
    """The payer's side of a simulated 3-D Secure challenge: a plain HTML page, no API key.

    The session id in the URL is the credential (256 random bits, single use, one payment);
    the form carries Django's CSRF token since we serve the form ourselves.
    """

    template_name = "sandbox/challenge.html"

    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        # The URL is the credential: keep it out of caches and out of the Referer the
        # merchant's return page would otherwise receive. `same-origin`, not `no-referrer`:
        # under the latter a browser's form POST says `Origin: null`, which Django's CSRF
        # check refuses (docs/request-safety.md "Browser pages").
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "same-origin"
        return response

    def get(self, request, session_id):
        try:
            session, payment = challenge_open(session_id=session_id)
        except NotFound:
            return self.page(request, status=404, state="gone")
        if payment.status != Status.REQUIRES_ACTION:
            return self.page(request, status=410, state="gone")
        return self.page(request, status=200, state="open", payment=payment)

    def post(self, request, session_id):
        action = request.POST.get("action")
        if action not in CHALLENGE_ACTIONS:
            return self.page(request, status=400, state="bad_action")
        try:
            payment = challenge_answer(session_id=session_id, action=action)
        except NotFound:
            return self.page(request, status=404, state="gone")
        except ProcessingFailed:
            return self.page(request, status=410, state="gone")  # canceled or expired meanwhile
        if payment.return_url:
            return HttpResponseRedirect(payment.return_url, status=303)
        return self.page(request, status=200, state="done", payment=payment)

    def page(self, request, *, status, state, payment=None):
        return render(
            request,
            self.template_name,
            {
                "state": state,
                "payment": payment,
                # As the payer reads it: "30.00 EUR", never minor units.
                "amount": format_amount(payment.amount, payment.currency) if payment else None,
            },
            status=status,
        )
