"""Loaded by pytest before Django's settings (``-p tests.dev_secrets`` in pytest.ini): the tests ask
for the public development secrets explicitly, and the servers and workers they start inherit it."""
import os

os.environ.setdefault("ASK_DEV_SECRETS", "1")
