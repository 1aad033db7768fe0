"""gunicorn settings for Ask: ``gunicorn -c python:supportbot.gunicorn_conf supportbot.wsgi``
(``make run`` uses it; ``gunicorn.conf.py`` at the project root loads it for a plain ``gunicorn``
started there).

* The access log leaves out query strings and the Referer header: an address can carry what
  must not be written down (a customer token in an old-style link, a question in a query).
* The server refuses to start on a non-loopback address with a development secret
  (``supportbot.safety``).
* Prometheus multiprocess metrics (``core.metrics``): a dead worker's live gauges are
  dropped; a worker's start marks a deploy for the alerts."""
from supportbot.safety import refuse_public_bind

access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(M)sms'


def on_starting(server):
    refuse_public_bind(server.cfg.bind)


def child_exit(server, worker):
    """A web worker exited: its live gauges leave the multiprocess metrics."""
    from core import metrics  # deferred: gunicorn reads this file in its master; only the hooks need it

    metrics.process_dead(worker.pid)


def post_fork(server, worker):
    """A web worker started: the newest start time marks a deploy for the alerts (deploy/prometheus)."""
    from core import metrics  # deferred: gunicorn reads this file in its master; only the hooks need it

    metrics.WEB_STARTED.set_to_current_time()
