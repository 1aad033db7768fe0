"""Checks an answer must pass before admission puts it in a shared cache.

Each check is one small class (``base.AnswerCheck``) in its own module, refusing with a reason
code and a detail, or passing: ``facts`` (every number, duration, amount, percentage and name
is in the cited passages), ``context`` (each is where the passages say it of the same thing, and a
range is a range of the passages), ``polarity`` (a yes or no agrees with the passages), ``degenerate``
(loops, repeated sentences, prompt scaffolding, an answer stating nothing), ``grounding`` (from a generator
of low trust, every sentence restates one passage sentence near-verbatim), ``relevance`` (the answer is to this
question) and ``answerable`` (a cited passage passed the answerability check: ``not_answerable``). ``text``
holds the word and sentence helpers they share with the extractive answerer.
"""
from caching.answer_checks.answerable import AnswerableCheck
from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.completeness import CompletenessCheck
from caching.answer_checks.context import FactContextCheck
from caching.answer_checks.degenerate import DegenerateCheck
from caching.answer_checks.facts import FactsCheck
from caching.answer_checks.grounding import LowTrustGroundingCheck
from caching.answer_checks.polarity import PolarityCheck
from caching.answer_checks.relevance import RelevanceCheck

# Cheapest first: the relevance check embeds the answer. Completeness last: an answer to another
# question, or a wrong one, is refused for that, not for lacking the asked fact.
CHECKS: tuple[AnswerCheck, ...] = (AnswerableCheck(), DegenerateCheck(), FactsCheck(), FactContextCheck(),
                                   LowTrustGroundingCheck(), PolarityCheck(), RelevanceCheck(), CompletenessCheck())

__all__ = ["AnswerCheck", "CHECKS", "Evidence", "Refusal"]
