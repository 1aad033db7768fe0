"""Answers the help centre does not give: an answer is cached only when a passage it cites passed the
answerability check made before it was written (``supportbot.answerability``, ``Evidence.answerable``)."""
from __future__ import annotations

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal


class AnswerableCheck(AnswerCheck):
    code = "not_answerable"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        if evidence.answerable is False:
            return Refusal(self.code, "no passage the answer cites answers the question")
        return None
