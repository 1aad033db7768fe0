"""Answerers: what turns retrieved passages into the answer a customer reads.

- ``base``: the interface (``Answerer``, ``AnswerRequest``, ``Answer``, ``AnswererSpec``).
- here, ``get_answerer()`` picks one from ``ASK_ANSWERER`` (empty: ``model`` when
  ``VLLM_BASE_URL`` is set, else ``extractive``), one instance a process.
- ``extractive``: quotes the sentences, list items and table rows of the passages that answer
  the question, chosen with the embedding model ("From the help centre").
- ``model``: the generative path: the static-first prompt, a generation backend (vLLM or the
  embedded CPU model) and the citations read back from its text.
"""
import threading

from django.core.signals import setting_changed
from django.dispatch import receiver

from core.localcache import MISSING, LocalCache
from supportbot.answerers.base import ANSWERERS, Answer, AnswerRequest, Answerer, AnswererSpec, answerer_name
from supportbot.answerers.extractive import ExtractiveAnswerer
from supportbot.answerers.model import ModelAnswerer

__all__ = ["Answer", "Answerer", "AnswererSpec", "AnswerRequest", "answerer_name", "get_answerer"]

_lock = threading.Lock()  # one answerer a name: built under the lock
_answerers: LocalCache[Answerer] = LocalCache("answerers", max_entries=len(ANSWERERS))


def get_answerer() -> Answerer:
    name = answerer_name()
    answerer = _answerers.lookup(name)  # built already: no lock (every Ask asks)
    if answerer is MISSING:
        with _lock:
            answerer = _answerers.get(name, lambda: _build(name))
    return answerer


def _build(name: str) -> Answerer:
    if name == "extractive":
        return ExtractiveAnswerer()
    if name == "model":
        return ModelAnswerer()
    raise ValueError(f"ASK_ANSWERER must be one of {ANSWERERS}, not {name!r}")


@receiver(setting_changed)
def _forget_answerers(*, setting: str, **kwargs) -> None:
    if setting.startswith(("ASK_", "VLLM_")):
        _answerers.forget()
