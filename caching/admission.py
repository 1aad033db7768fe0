"""Admission: only verified answers enter the shared answer caches.

An answer is stored only if it is whole (finish reason ``stop``, not cut off
(``truncated``), not interrupted), cited (at least one citation resolved to a passage it was
given), eligible (a general question, not personal, action or time-dependent),
grounded (its facts come from the passages it cites: no URL, e-mail, phone
number, number, duration, amount, percentage or name that they lack), not a
refusal or fallback, not degenerate (loops, repeated sentences, the prompt's
scaffolding), stating the fact the question asks for, for the asked case (else
``incomplete``: shown, never cached), agreeing with the passages on yes or no, about the question
asked, and, from a generator of low trust (``GENERATION_TRUST``: the embedded SmolLM2 server by
default), restating one passage sentence near-verbatim in every sentence (``caching.answer_checks``); with ``ADMISSION_MODEL_CHECK`` the model is
asked too. How often a question was asked plays no part: a popular wrong answer
is still wrong. Customer input alone can never place text in a shared cache: the
stored text is the answerer's, checked against the knowledge base. A refusal's
reason starts with its code ("polarity: ...") and is recorded as the admission
decision; the staff dashboard counts them by code (``refusal_code``)."""
from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings

from caching.answer_checks import CHECKS, Evidence, Refusal
from core.cachelayer import LayerResult

MAX_ANSWER_CHARS = 4000
_REFUSAL = re.compile(
    r"\b(i\s*(?:'m| am)\s*sorry|i\s*can(?:no|')t\s+(?:help|answer|assist)|as an ai|i do not have|i don't have|"
    r"not (?:able|allowed) to|unable to (?:help|answer)|NOT_COVERED|"
    r"(?:not|n't)\s+(?:available|mentioned|provided|given|specified|listed|stated|included|found)\s+(?:in|on)\s+"
    r"(?:the|this|our)\s+(?:passages?|context|text|articles?|help\s*cent(?:re|er)))\b", re.I)
_INJECTION = re.compile(
    r"(ignore|disregard|forget)\s+(all\s+|any\s+|the\s+|your\s+)?(previous|prior|above|earlier)?\s*"
    r"(instructions|rules|prompts?)|system prompt|you are now|act as|jailbreak|developer mode|"
    r"<\s*/?\s*(system|script|assistant|user|question|passage|previous_answer)\b|<\|[a-z_]{2,20}\|>|\[/?INST\]",
    re.I)
_FACT = re.compile(r"https?://\S+|[\w.+-]+@[\w-]+\.[\w.]+|\+?\d[\d ()./-]{5,}\d|[$€£]\s?\d[\d,.]*|\d[\d,.]*\s?(?:%|usd|eur)",
                   re.I)
_WORD = re.compile(r"[^\W_]{3,}", re.U)


def _facts(text: str) -> set[str]:
    return {re.sub(r"[\s()./-]", "", m.group(0).lower().rstrip(".,;:)")) for m in _FACT.finditer(text)}


def ungrounded_facts(answer: str, passages_text: str) -> set[str]:
    """Concrete facts (links, e-mails, phone numbers, amounts) in the answer that no passage contains."""
    return _facts(answer) - _facts(passages_text)


def looks_like_injection(question: str) -> bool:
    return bool(_INJECTION.search(question))


def refusal_code(reason: str) -> str:
    """The stable code of a refusal reason ("polarity: says no, ..." -> "polarity")."""
    return re.split(r"[:(]", reason, maxsplit=1)[0].strip().replace(" ", "_") or "other"


def evidence_of(state) -> Evidence:
    """What the answer is checked against: the passages it cites (title, section and text)."""
    cited = {c["article_pk"] for c in state.citations}
    passages = [p for p in state.passages if state.article_pks.get(p.chunk_id) in cited] or state.passages
    return Evidence(question=state.question, answer=state.answer, locale=state.asker.locale,
                    passages_text="\n".join(f"{p.title}\n{p.heading}\n{p.text}" for p in passages),
                    sections=tuple((p.heading or p.title, p.text) for p in passages),
                    retrieved=tuple((p.heading or p.title, p.text) for p in state.passages),
                    known_names=state.asker.tenant.name, tenant_slug=state.asker.tenant.slug,
                    tenant_id=state.asker.tenant.pk,
                    trust=generation_trust(), answerable=cites_answering_passage(state),
                    confidently_answerable=cites_answering_passage(state, storable=True))


def cites_answering_passage(state, storable: bool = False) -> bool | None:
    """Whether an article the answer cites has a passage that passed the answerability check (None: not checked);
    ``storable``: one that also reached the store threshold (None when ``ANSWERABILITY_STORE_CHECK`` is off)."""
    verdict = getattr(state, "answerability", None)
    if verdict is None or (storable and not settings.ANSWERABILITY_STORE_CHECK):
        return None
    answering = {state.article_pks.get(chunk) for chunk in (verdict.storable if storable else verdict.passing)}
    return verdict.answerable and any(c["article_pk"] in answering for c in state.citations)


def generation_trust() -> str:
    """How far admission trusts the generator: ``GENERATION_TRUST``, or "standard" for a configured vLLM
    deployment and "low" for the embedded SmolLM2 server."""
    return settings.GENERATION_TRUST or ("standard" if settings.VLLM_BASE_URL else "low")


def check(state, model_check: Callable[[Evidence], Refusal | None] | None = None,
          content_checks: bool = True) -> LayerResult:
    """Admit or refuse ``state``'s answer; ``model_check`` is a further check by a model, run last.
    ``content_checks=False`` (placeholder text in tests of other layers) skips ``CHECKS`` and the model."""
    def refuse(reason: str) -> LayerResult:
        return LayerResult("admission", "refused", reason=reason,
                           intent=state.eligibility.intent if state.eligibility else "")

    if state.status != "answered" or not state.covered:
        return refuse(f"not an answer ({state.status})")
    if state.eligibility is None or not state.eligibility.eligible:
        return refuse(f"ineligible: {state.eligibility.reason if state.eligibility else 'unclassified'}")
    if state.result is None:
        return refuse("no model result")
    if state.result.finish_reason != "stop":
        return refuse(f"truncated: finish reason {state.result.finish_reason!r}")
    if state.assist is not None:
        return refuse("assisted answer: shaped by a cached answer that is not part of the key")
    if not state.citations:
        return refuse("uncited")
    answer = state.answer.strip()
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return refuse("empty or oversized answer")
    if _REFUSAL.search(answer):
        return refuse("refusal or fallback")
    if looks_like_injection(state.question):
        return refuse("question looks like a prompt injection")
    passages_text = "\n".join(f"{p.title}\n{p.url}\n{p.text}" for p in state.passages)
    extra = ungrounded_facts(answer, passages_text)
    if extra:
        return refuse("ungrounded facts: " + ", ".join(sorted(extra))[:200])
    evidence = evidence_of(state)
    checks = (*CHECKS, *([model_check] if model_check is not None else [])) if content_checks else ()
    for answer_check in checks:
        refusal = answer_check.refusal(evidence) if hasattr(answer_check, "refusal") else answer_check(evidence)
        if refusal is not None:
            return refuse(str(refusal))
    return LayerResult("admission", "stored", reason="verified: complete, cited, eligible, grounded, checked",
                       intent=state.eligibility.intent)
