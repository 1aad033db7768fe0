"""Answers to a different question: the answer's embedding must be at least
``ADMISSION_MIN_RELEVANCE`` similar to the question's."""
from __future__ import annotations

import numpy as np
from django.conf import settings

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.text import CITATION_MARKER
from retrieval.embeddings import embed_texts


class RelevanceCheck(AnswerCheck):
    code = "off_topic"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        question, answer = embed_texts([evidence.question, CITATION_MARKER.sub("", evidence.answer)])
        similarity = float(np.dot(question, answer))
        if similarity < settings.ADMISSION_MIN_RELEVANCE:
            return Refusal(self.code, f"answer similarity to the question {similarity:.2f} "
                                      f"< {settings.ADMISSION_MIN_RELEVANCE:.2f}")
        return None
