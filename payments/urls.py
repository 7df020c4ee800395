from django.urls import path

from payments import views

urlpatterns = [
    path("v1/payments", views.PaymentListCreate.as_view()),
    path("v1/payments/<str:payment_id>", views.PaymentDetail.as_view()),
    path("v1/payments/<str:payment_id>/confirm", views.PaymentConfirm.as_view()),
    path("v1/payments/<str:payment_id>/captures", views.PaymentCapture.as_view()),
    path("v1/payments/<str:payment_id>/cancel", views.PaymentCancel.as_view()),
]
