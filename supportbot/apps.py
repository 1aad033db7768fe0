from django.apps import AppConfig


class SupportbotConfig(AppConfig):
    name = "supportbot"
    verbose_name = "Ask"

    def ready(self):
        from supportbot import checks, receivers, tracing  # noqa: F401 - checks register themselves

        receivers.connect()
        receivers.connect_metrics()
        tracing.setup_from_settings()
