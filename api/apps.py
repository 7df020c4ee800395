from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    # The back office's section heading: where its requests are read (a place, not a topic).
    verbose_name = "API requests"
