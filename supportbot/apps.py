from django.apps import AppConfig


class SupportbotConfig(AppConfig):
    name = "supportbot"
    verbose_name = "Ask"

    def ready(self):
        from supportbot import checks, receivers  # noqa: F401 - checks register themselves

        receivers.connect()
