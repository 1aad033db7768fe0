"""Answerers: what turns retrieved passages into the answer a customer reads.

- ``base``: the interface (``Answerer``, ``AnswerRequest``, ``Answer``, ``AnswererSpec``) and
  ``get_answerer()``, which picks one from ``ASK_ANSWERER`` (empty: ``model`` when
  ``VLLM_BASE_URL`` is set, else ``extractive``).
- ``extractive``: quotes the sentences, list items and table rows of the passages that answer
  the question, chosen with the embedding model ("From the help centre").
- ``model``: the generative path: the static-first prompt, a generation backend (vLLM or the
  embedded CPU model) and the citations read back from its text.
"""
from supportbot.answerers.base import Answer, Answerer, AnswererSpec, AnswerRequest, answerer_name, get_answerer

__all__ = ["Answer", "Answerer", "AnswererSpec", "AnswerRequest", "answerer_name", "get_answerer"]
