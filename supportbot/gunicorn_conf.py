"""gunicorn hooks for ``make run`` (``-c python:supportbot.gunicorn_conf``; the command line sets the rest)."""


def child_exit(server, worker):
    """A web worker exited: its live gauges leave the multiprocess metrics (supportbot.metrics)."""
    from supportbot import metrics

    metrics.process_dead(worker.pid)
