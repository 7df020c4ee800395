from django.urls import path

from sandbox import views
from sandbox.simulate_webhook import SimulateWebhook

urlpatterns = [
    path("v1/sandbox/tokens", views.TokenCreate.as_view()),
    path("v1/sandbox/test-cards", views.TestCardList.as_view()),
    path("v1/sandbox/advance/<str:payment_id>", views.Advance.as_view()),
    path("v1/sandbox/advance-clock/<str:payment_id>", views.AdvanceClock.as_view()),
    path("v1/sandbox/retry-now/<str:event_id>", views.RetryNow.as_view()),
    path("v1/sandbox/reset", views.Reset.as_view()),
    path("v1/sandbox/failure-profile", views.FailureProfileView.as_view()),
    path("v1/sandbox/simulate-webhook", SimulateWebhook.as_view()),
    path("sandbox/challenge/<str:session_id>", views.ChallengePage.as_view()),
]
