"""Answers to a different question: the answer's embedding must be at least
``ADMISSION_MIN_RELEVANCE`` similar to the question's. The question's vector is read from and kept in its
tenant's scope of the embedding cache (where the Ask path put it and erasure finds it), never under the
shared knowledge-base key; the answer's is not cached."""
from __future__ import annotations

import numpy as np
from django.conf import settings

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.text import CITATION_MARKER
from retrieval.embeddings import embed_texts, question_scope


class RelevanceCheck(AnswerCheck):
    code = "off_topic"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        scope = question_scope(evidence.tenant_id) if evidence.tenant_id is not None else None
        question = embed_texts([evidence.question], cache=scope)[0]
        answer = embed_texts([CITATION_MARKER.sub("", evidence.answer)], cache=None)[0]
        similarity = float(np.dot(question, answer))
        if similarity < settings.ADMISSION_MIN_RELEVANCE:
            return Refusal(self.code, f"answer similarity to the question {similarity:.2f} "
                                      f"< {settings.ADMISSION_MIN_RELEVANCE:.2f}")
        return None
