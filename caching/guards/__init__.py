"""Guards for the semantic answer cache.

A semantic cache is a classifier with a false-positive rate. Sentence embeddings put "Where is
order 4417?" 0.78 away from "Where is order 4471?" and "transfers under 500" nearer to "transfers
over 500" than most true paraphrases, so cosine similarity alone can never separate paraphrases
from near misses. The guards, one module a job:

* ``lexicon``: normalisation, tokens, lemmas and the word lists the rules read;
* ``signature``: the answer-changing details of a question and the *vetoes*, the differences
  reliable enough to refuse a hit on their own (numbers, ids, money, dates, places, tiers,
  audiences, conditions, negation scope, comparatives next to a quantity, answer type);
* ``contrast``: at serve time, in English, the one-word swaps that flip an answer (an opposite word,
  an opposite relation to the same thing, a different named thing of one kind, a different quantity
  word), refused after the vetoes; not vetoes, so the judge's training pairs stay as they are;
* ``eligibility``: personal, action and time-dependent questions bypass every shared cache (rules, hard
  or soft; a question only soft rules refuse may still read the semantic cache, ``soft_only``);
* ``judge``: the serve/no-serve decision: eligibility, a cosine floor, the vetoes, then the learned
  judge (trees over pair features and a fine-tuned MiniLM cross-encoder, ``modelbuild.judge_train``) and its calibrated threshold.

Everything but the learned judge is pure Python on strings (results memoised per question text).
"""
from caching.guards.eligibility import (
    CATEGORIES, INTENT_CLASSES, INTENT_FAMILIES, RULES, Eligibility, classify, classify_rules, soft_only,
)
from caching.guards.contrast import CONTRAST_KINDS, contrasts
from caching.guards.judge import (
    CANDIDATES, DEFAULT_THRESHOLDS, JUDGE_LOCALES, JUDGE_REASON, Judgement, LearnedJudge, contender, judge, judge_version, learned_judge, least_cosine,
    prefetch, same_question, score_pair,
    set_learned_judge, veto,
)
from caching.guards.lexicon import _OPERATIONS, concept
from caching.guards.signature import (
    GUARDS_VERSION, SIGNATURE_FIELDS, VETO_FIELDS, signature, signature_difference, vetoes,
)

__all__ = [
    "CANDIDATES", "CATEGORIES", "CONTRAST_KINDS", "contrasts", "DEFAULT_THRESHOLDS", "RULES", "classify_rules", "GUARDS_VERSION", "INTENT_CLASSES", "INTENT_FAMILIES", "JUDGE_LOCALES", "JUDGE_REASON",
    "SIGNATURE_FIELDS", "VETO_FIELDS", "Eligibility", "Judgement", "LearnedJudge", "_OPERATIONS", "classify", "concept",
    "contender", "judge", "judge_version", "learned_judge", "least_cosine", "prefetch", "same_question", "score_pair", "set_learned_judge", "signature", "soft_only", "signature_difference", "veto", "vetoes",
]
