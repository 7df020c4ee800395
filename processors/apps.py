from django.apps import AppConfig


class ProcessorsConfig(AppConfig):
    name = "processors"
