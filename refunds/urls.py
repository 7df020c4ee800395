from django.urls import path

from refunds import views

urlpatterns = [
    path("v1/payments/<str:payment_id>/refunds", views.PaymentRefundCreate.as_view()),
    path("v1/payments/<str:payment_id>/timeline", views.PaymentTimeline.as_view()),
    path("v1/refunds/<str:refund_id>", views.RefundDetail.as_view()),
]
