from django.urls import path

from webhooks import views

urlpatterns = [
    path("v1/webhook-endpoints", views.EndpointList.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>", views.EndpointDetail.as_view()),
    path("v1/webhook-endpoints/<str:endpoint_id>/roll-secret", views.EndpointRollSecret.as_view()),
]
