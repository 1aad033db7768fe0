"""The answer-check interface: ``refusal(evidence)`` returns why the answer may not be cached, or None."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class Evidence:
    question: str
    answer: str  # the answer as the customer reads it (citation markers included)
    passages_text: str  # title, section and text of every passage the answer cites
    locale: str
    known_names: str = ""  # names the answer may use without a passage: the tenant's own name
    tenant_slug: str = ""
    tenant_id: int | None = None  # the question's vector is cached in this tenant's scope only (erasure finds it)
    trust: str = "standard"  # of the generator that wrote the answer: "low" | "standard" (grounding)
    # whether a passage the answer cites passed the answerability check before the answer was written
    # (supportbot.answerability); None when no check ran
    answerable: bool | None = None
    # whether such a passage also reached the locale's store threshold (``ANSWERABILITY_STORE_CHECK``); None: not checked
    confidently_answerable: bool | None = None
    sections: tuple[tuple[str, str], ...] = ()  # (section heading, text) of each cited passage, when known
    # (section heading, text) of every retrieved passage, cited or not: where completeness looks for the asked fact the
    # answer should have quoted instead ("$250 or more" for a minimum, the asked step's deadline); () = the cited ones
    retrieved: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Refusal:
    code: str  # stable reason code, counted on the dashboard: "ungrounded_facts", "polarity", ...
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}" if self.detail else self.code


class AnswerCheck(ABC):
    code: str

    @abstractmethod
    def refusal(self, evidence: Evidence) -> Refusal | None:
        """Why this answer must not enter a shared cache, or None if it passes."""
