from django.apps import AppConfig


class ModelbuildConfig(AppConfig):
    """Building the learned models off the request path: the judge's training data, training, replay and
    calibration. The request path loads what it builds (``caching.guards.judge``) and never imports it."""

    name = "modelbuild"
    verbose_name = "Model building"
