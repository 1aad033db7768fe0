"""gunicorn's worker for the async server: ``uvicorn_worker.UvicornWorker`` that drains open
streams within gunicorn's graceful timeout (``WEB_DRAIN_GRACE_S``).

On shutdown (a deploy, ``make run``'s Ctrl-C) a worker stops accepting connections and lets open
streams finish. uvicorn would wait for them without limit, until gunicorn's master kills the worker
at the graceful timeout, which ends every stream mid-answer with no record. Here uvicorn itself
cancels what is still open a moment before that: each stream's generation is cancelled (its model
stream closed), its Ask recorded as interrupted, its in-flight slot released."""
from uvicorn_worker import UvicornWorker as _UvicornWorker

DRAIN_MARGIN_S = 2  # what the cancelled streams get to record and release before the master's deadline


class UvicornWorker(_UvicornWorker):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config.timeout_graceful_shutdown = max(1, self.cfg.graceful_timeout - DRAIN_MARGIN_S)
