from django.urls import path

from processors.stripe import pages
from processors.stripe.webhooks import StripeWebhook
from processors.views import ProcessorTokenCreate

urlpatterns = [
    path("v1/processor-tokens", ProcessorTokenCreate.as_view()),
    path("processors/stripe/hosted-fields", pages.HostedFieldsPage.as_view()),
    path("processors/stripe/authenticate/<str:signed>", pages.AuthenticationPage.as_view()),
    path("processors/stripe/webhooks/<str:account_id>", StripeWebhook.as_view()),
]
