from django.urls import path

from config.urls import urlpatterns as service_urlpatterns
from tests.support import views

urlpatterns = [
    path("v1/test/keys", views.KeyList.as_view()),
    path("v1/test/keys/<str:key_id>", views.KeyDetail.as_view()),
    path("v1/test/echo", views.Echo.as_view()),
    path("v1/test/publishable", views.PublishableEcho.as_view()),
    path("v1/test/test-mode-only", views.TestModeOnly.as_view()),
    path("v1/test/boom", views.Boom.as_view()),
    path("v1/test/accept", views.Accept.as_view()),
    path("v1/test/work", views.Work.as_view()),
    path("v1/test/work/<str:ref>", views.Work.as_view()),
    path("v1/test/tokenize", views.Tokenize.as_view()),
    *service_urlpatterns,
]

handler404 = "api.views.handler404"
handler500 = "api.views.handler500"
