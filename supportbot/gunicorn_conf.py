"""gunicorn hooks for ``make run`` (``-c python:supportbot.gunicorn_conf``; the command line sets the rest)."""


def child_exit(server, worker):
    """A web worker exited: its live gauges leave the multiprocess metrics (supportbot.metrics)."""
    from supportbot import metrics

    metrics.process_dead(worker.pid)


def post_fork(server, worker):
    """A web worker started: the newest start time marks a deploy for the alerts (deploy/prometheus)."""
    from supportbot import metrics

    metrics.WEB_STARTED.set_to_current_time()
