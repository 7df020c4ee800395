from django.urls import path

from webhooks import views

urlpatterns = [
    path("v1/webhook-endpoints", views.EndpointList.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>", views.EndpointDetail.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>/roll-secret", views.EndpointRollSecret.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>/enable", views.EndpointEnable.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>/pause", views.EndpointPause.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>/resume", views.EndpointResume.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>/recover", views.EndpointRecover.as_view()),
    path("v1/events", views.EventList.as_view()),
    # Before the event route: `feed` is no event id.
    path("v1/events/feed", views.EventFeed.as_view()),
    path("v1/events/<str:event_id>", views.EventDetail.as_view()),
    path("v1/events/<str:event_id>/resend", views.EventResend.as_view()),
]
