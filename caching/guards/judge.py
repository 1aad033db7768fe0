"""The serve/no-serve judgement for one (cached question, new question) pair.

In order, the first that refuses decides:

1. eligibility: both questions must be shareable (``eligibility.classify``);
2. a cosine floor: candidates the embedding puts far apart are not worth the judge's time;
3. vetoes (``signature.vetoes``): a number, id, amount, date, place, tier, audience, condition,
   negation or answer-type difference refuses, whatever the judge says; then, in English, the
   contrasts (``contrast.contrasts``): an opposite word, an opposite relation to the same thing, a
   different named thing of one kind, a different quantity word ("within" / "after a month",
   "enable" / "disable", "Android" / "iOS"). The contrasts apply at serve time only: the vetoes
   alone choose the judge's training pairs;
4. a strict match (every signature field, content term and word link equal) serves without the judge;
5. the learned judge (``LearnedJudge``: gradient-boosted trees over ``pair_features``, the MiniLM
   cosine and the guards' soft evidence, stacked with a fine-tuned MiniLM cross-encoder,
   ``guards.cross_encoder``; see ``modelbuild.judge_train``): serve when its calibrated
   probability that the cached answer answers the new question reaches the artefact's threshold
   and the cosine is at least its least cosine (chosen at training, ``modelbuild.judge_replay``;
   ``SEMANTIC_JUDGE_MIN_SIMILARITY`` overrides it). It reads English only: in another
   locale it abstains and the strict lexical match (every signature field, content term and word
   link equal) decides instead, as before the judge.

Every refusal carries a reason; ``Judgement.probability`` is the judge's probability (None when it
did not run) and ``judge_version`` the artefact it came from.
"""
from __future__ import annotations

import json
import logging
import pickle
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from caching.guards import judge_recipe
from caching.guards.contrast import contrasts
from caching.guards.cross_encoder import CrossEncoderScorer
from caching.guards.eligibility import INTENT_FAMILIES, _analyse, classify, soft_only
from caching.guards.lexicon import OPPOSITE_OF, STRICT_SYNONYMS, concept
from caching.guards.signature import (
    GUARDS_VERSION, SIGNATURE_FIELDS, _CONTENT_FIELDS, _operation_concepts, signature_difference, vetoes,
)

log = logging.getLogger(__name__)

# Cosine floors per intent class (MiniLM, normalised vectors): below it a candidate is refused
# without asking the judge. The judge and the vetoes carry the precision; the floor only keeps
# unrelated candidates away from it. The lead exposes them through settings/DB rows.
DEFAULT_THRESHOLDS: dict[str, float] = {
    "howto": 0.45,
    "policy": 0.45,
    "availability": 0.45,
    "pricing": 0.45,
    "duration": 0.45,
    "schedule": 0.45,
    "location": 0.45,
    "contact": 0.45,
    "reason": 0.45,
    "status": 0.90,
    "general": 0.45,
}

# Locales the judge reads (MiniLM was trained on English).
JUDGE_LOCALES = frozenset({"en"})


@dataclass(frozen=True)
class Judgement:
    serve: bool
    reason: str
    intent: str
    threshold: float
    difference: dict | None
    probability: float | None = None  # the learned judge's calibrated P(same answer); None when it did not run
    judge_version: str = ""


# --------------------------------------------------------------------------- the learned judge

_QUESTION_WORDS = ("how", "what", "when", "where", "why", "which", "who", "can", "do", "does", "is", "are", "will")


def _question_word(tokens: tuple[str, ...]) -> str:
    return next((t for t in tokens[:4] if t in _QUESTION_WORDS), "")


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _opposite_present(a_norm: str, b_norm: str) -> bool:
    """One question says a word and the other its opposite ("open" / "close"), and neither says both."""
    a_words, b_words = set(a_norm.split()), set(b_norm.split())
    for word, other in OPPOSITE_OF.items():
        if " " in word:
            if word in a_norm and other in b_norm and other not in a_norm and word not in b_norm:
                return True
        elif word in a_words and other in b_words and other not in a_words and word not in b_words:
            return True
    return False


FEATURES: tuple[str, ...] = (
    "cosine", *(f"differs:{f}" for f in SIGNATURE_FIELDS), "terms_jaccard", "terms_only_cached", "terms_only_new",
    "links_jaccard", "words_jaccard", "operations_jaccard", "opposite", "same_intent", "same_family",
    "same_question_word", "length_ratio", "negations_delta", "ineligible",
)


def pair_features(cached_q: str, new_q: str, cosine: float) -> list[float]:
    """What the learned judge sees of a pair: the embedding cosine and the guards' view of the two
    questions (which signature fields differ, how much of the content and wording they share,
    whether one says the opposite of the other, whether they ask the same kind of question).
    Soft evidence: none of it refuses on its own."""
    a, b = _analyse(cached_q), _analyse(new_q)
    sa, sb = a.signature, b.signature
    diff = signature_difference(sa, sb) or {}
    ta, tb = set(sa.get("terms", ())), set(sb.get("terms", ()))
    wa, wb = set(a.tokens), set(b.tokens)
    return [
        float(cosine), *(float(f in diff) for f in SIGNATURE_FIELDS), _jaccard(ta, tb),
        len(ta - tb) / max(1, len(ta)), len(tb - ta) / max(1, len(tb)),
        _jaccard(set(sa.get("links", ())), set(sb.get("links", ()))), _jaccard(wa, wb),
        _jaccard(set(sa.get("operations", ())), set(sb.get("operations", ()))),
        float(_opposite_present(a.norm, b.norm)), float(a.eligibility.intent == b.eligibility.intent),
        float(INTENT_FAMILIES.get(a.eligibility.intent, a.eligibility.intent)
              == INTENT_FAMILIES.get(b.eligibility.intent, b.eligibility.intent)),
        float(_question_word(a.tokens) == _question_word(b.tokens)),
        min(len(a.tokens), len(b.tokens)) / max(1, len(a.tokens), len(b.tokens)),
        float(abs(len(sa.get("negations", ())) - len(sb.get("negations", ())))),
        float(not (a.eligibility.eligible and b.eligibility.eligible)),
    ]


class _Trees:
    """A fitted binary ``HistGradientBoostingClassifier`` as arrays, walked for all trees at once.

    scikit-learn's own ``predict_proba`` validates its input and fans out over OpenMP threads: for
    the one row of a lookup that costs a millisecond or more (far more on a busy host), while the
    walk below costs tens of microseconds. Same rule as scikit-learn (``x <= threshold`` goes left;
    the features are never missing), same result (``tests/caching/test_judge.py`` compares them)."""

    def __init__(self, model):
        nodes = [predictor[0].nodes for predictor in model._predictors]
        width = max(len(n) for n in nodes)

        def table(field, fill):
            out = np.full((len(nodes), width), fill, dtype=np.asarray(nodes[0][field]).dtype)
            for i, n in enumerate(nodes):
                out[i, :len(n)] = n[field]
            return out

        self.feature = table("feature_idx", 0).astype(np.intp)
        self.threshold = table("num_threshold", 0.0)
        self.left, self.right = table("left", 0).astype(np.intp), table("right", 0).astype(np.intp)
        self.leaf, self.value = table("is_leaf", 1).astype(bool), table("value", 0.0)
        self.depth = int(max(n["depth"].max() for n in nodes)) + 1
        self.rows = np.arange(len(nodes))
        self.baseline = float(np.ravel(model._baseline_prediction)[0])

    def probability(self, x: np.ndarray) -> float:
        node = np.zeros(len(self.rows), dtype=np.intp)
        for _ in range(self.depth):
            leaf = self.leaf[self.rows, node]
            if leaf.all():
                break
            left = x[self.feature[self.rows, node]] <= self.threshold[self.rows, node]
            nxt = np.where(left, self.left[self.rows, node], self.right[self.rows, node])
            node = np.where(leaf, node, nxt)
        raw = self.baseline + float(self.value[self.rows, node].sum())
        return 1.0 / (1.0 + np.exp(-raw))


class LearnedJudge:
    """A built judge artefact (``modelbuild.judge_train``) loaded for scoring: ``probability`` is the
    calibrated probability that the cached question's answer is the right answer to the new one.
    Its ``model`` is the kind chosen at training: ``trees`` (or ``linear``) over ``pair_features``,
    ``cross_encoder`` (the fine-tuned MiniLM cross-encoder's logit), or ``stacked`` (a logistic
    regression over the trees' score and the cross-encoder's logit)."""

    def __init__(self, path: Path, kind: str | None = None):
        """``kind``: another of the models the artefact was trained with (``meta["alternatives"]``,
        with its own calibration and threshold) instead of the chosen one; for ``bench.judge_eval``."""
        self.path = Path(path)
        meta = json.loads((self.path / "judge.json").read_text())
        if tuple(meta["features"]) != FEATURES:
            raise ValueError(f"judge {self.path.name} was built with other features; rebuild it (manage.py train_judge)")
        self.version: str = meta["version"] or self.path.name
        self.kind: str = kind or meta.get("model", "trees")
        chosen = self.kind == meta.get("model", "trees")
        point = meta if chosen else meta["alternatives"][self.kind]
        self.threshold: float = float(point["threshold"])
        # the least cosine at which it alone serves, chosen at training for the chosen model at its
        # threshold (``modelbuild.judge_replay``); None for an alternative model or an artefact without one
        least = meta.get("min_similarity") if chosen else None
        self.min_similarity: float | None = None if least is None else float(least)
        self.meta = meta
        with open(self.path / "model.pkl", "rb") as fh:
            self._model = pickle.load(fh)  # noqa: S301 - our own artefact, written by modelbuild.judge_train
        self._calibration = (np.array(point["calibration_map"]["x"]), np.array(point["calibration_map"]["y"]))
        self._trees = _Trees(self._model) if hasattr(self._model, "_predictors") else None
        self.cross_encoder = None
        if self.kind in ("cross_encoder", "stacked"):
            self.cross_encoder = CrossEncoderScorer(self.path / "cross_encoder", int(meta["config"]["ce_max_length"]),
                                                    quantize=bool(meta["config"].get("ce_quantize", False)))

    def scores(self, features: np.ndarray) -> np.ndarray:
        """The trees' (or linear model's) raw P(same answer) for rows of ``pair_features``."""
        if self._trees is not None:
            return np.array([self._trees.probability(row) for row in features])
        return self._model.predict_proba(features)[:, 1]

    def pair_scores(self, rows: list[tuple[str, str, float]]) -> np.ndarray:
        """The chosen model's raw score for (cached question, new question, cosine) rows, before calibration."""
        pairs = [(c, n) for c, n, _ in rows]
        if self.kind == "cross_encoder":
            return self.cross_encoder.logits(pairs)
        tree = self.scores(np.array([pair_features(c, n, s) for c, n, s in rows], dtype=np.float64))
        if self.kind != "stacked":
            return tree
        stack = self.meta["stack"]
        tree = np.clip(tree, 1e-6, 1 - 1e-6)
        raw = (stack["intercept"] + stack["coef"][0] * np.log(tree / (1 - tree))
               + stack["coef"][1] * self.cross_encoder.logits(pairs))
        return 1.0 / (1.0 + np.exp(-raw))

    def calibrate(self, scores: np.ndarray) -> np.ndarray:
        return np.interp(scores, *self._calibration)

    def probabilities(self, rows: list[tuple[str, str, float]]) -> np.ndarray:
        return self.calibrate(self.pair_scores(rows))

    def probability(self, cached_q: str, new_q: str, similarity: float) -> float:
        return float(self.probabilities([(cached_q, new_q, similarity)])[0])

    @property
    def wants_prefetch(self) -> bool:
        """Whether ``prefetch`` scores anything ahead: a cross-encoder that batches (not trees, not int8)."""
        return self.cross_encoder is not None and self.cross_encoder.wants_prefetch

    def prefetch(self, new_q: str, cached_questions: list[str]) -> None:
        """Score a lookup's candidates with the cross-encoder in one forward pass (see ``wants_prefetch``)."""
        if self.wants_prefetch:
            self.cross_encoder.prefetch([(c, new_q) for c in cached_questions])


_learned: LearnedJudge | None = None
_learned_missing: str = ""
_learned_looked = 0.0  # time.monotonic() of the last look for a judge that was not built
_learned_lock = threading.Lock()


def _setting(name: str, default):
    from django.conf import settings

    return getattr(settings, name, default) if settings.configured else default


def recipe_name() -> str:
    """``SEMANTIC_JUDGE_RECIPE``: which recipe's artefact this process serves ("full"; the tests: "small")."""
    return _setting("SEMANTIC_JUDGE_RECIPE", "full")


@cache
def _artefact_version(name: str) -> str:
    return judge_recipe.artefact_version(FEATURES, judge_recipe.RECIPES[name])


def artefact_version(name: str | None = None) -> str:
    """The version a recipe builds (``guards.judge_recipe``; by default the one this process serves),
    computed once a process: it hashes the training data and the base model's weights."""
    return _artefact_version(name or recipe_name())


def judge_root() -> Path:
    """``SEMANTIC_JUDGE_DIR``; ``var/judge`` where Django is not configured (training, pure tests)."""
    return Path(_setting("SEMANTIC_JUDGE_DIR", judge_recipe.DEFAULT_ROOT))


def judge_path() -> Path:
    """Where the artefact this process serves is, or will be once built."""
    return judge_root() / artefact_version()


def _look_again() -> bool:
    return time.monotonic() - _learned_looked >= _setting("SEMANTIC_JUDGE_RECHECK_S", 30)


def learned_judge() -> LearnedJudge | None:
    """The process's judge: the artefact built for the current data and configs, loaded once. None while
    it is not built (logged once): the judge abstains and only a strict match serves. Meanwhile the
    process looks again every ``SEMANTIC_JUDGE_RECHECK_S`` seconds (one ``stat``), so a judge built in
    the background (``modelbuild``'s judge build job) is served without a restart."""
    global _learned, _learned_missing, _learned_looked
    if _learned is not None or (_learned_missing and not _look_again()):
        return _learned
    with _learned_lock:
        if _learned is None and (not _learned_missing or _look_again()):
            path = judge_path()
            _learned_looked = time.monotonic()
            if (path / "judge.json").exists():  # a build renames its complete folder into place
                _learned = LearnedJudge(path)
                if _learned_missing:
                    log.warning("semantic judge: %s is built, loaded; it decides from now on", path.name)
                _learned_missing = ""
            elif not _learned_missing:
                _learned_missing = f"judge abstains: not built ({path.name} missing; run manage.py train_judge)"
                log.warning("semantic judge: %s", _learned_missing)
    return _learned


def set_learned_judge(judge: LearnedJudge | None) -> None:
    """Swap the process's judge (a rebuilt artefact, or tests); None loads it again on next use."""
    global _learned, _learned_missing
    _learned, _learned_missing = judge, ""


def judge_version() -> str:
    j = learned_judge()
    return j.version if j is not None else ""


# --------------------------------------------------------------------------- the judgement

def _threshold_for(intent_a: str, intent_b: str, thresholds: dict[str, float]) -> float:
    ta = thresholds.get(intent_a, DEFAULT_THRESHOLDS.get(intent_a, 1.0))
    tb = thresholds.get(intent_b, DEFAULT_THRESHOLDS.get(intent_b, 1.0))
    return max(ta, tb)


def _surface(analysis, concepts: list[str]) -> list[str]:
    """The words the customer typed for some canonical concepts (for reasons people read)."""
    seen = {}
    for tok in analysis.tokens:
        if tok.isalpha():
            seen.setdefault(concept(tok), tok)
    return [seen.get(c, c) for c in concepts]


def _describe(diff: dict) -> str:
    return "; ".join(f"{f} (cached {d['cached']} vs new {d['new']})" for f, d in diff.items())


# The answer type a strict match must agree on: a price is an answer of its own, whatever the
# content words share. (The other intent classes are not compared: "where do I reset my PIN" and
# "how do I reset my PIN" share an answer.)
_COST = "pricing"


def _links_agree(cached_links: set, new_links: set) -> bool:
    """Whether two questions with the same content words arrange them alike: one's word links are
    all among the other's. A phrase moved to the other end ("is there an extra fee to exchange
    currencies?" / "when exchanging currencies, is there an extra fee?") only joins two words the
    other wording keeps in separate clauses; swapped modifiers ("ceremonial metate ... human
    figures" / "human metate ... ceremonial figures") give each wording a link the other lacks.
    Serve time only: the signature, and so the judge's features and training pairs, are unchanged."""
    return cached_links <= new_links or new_links <= cached_links


@cache
def _strict_synonyms() -> dict[str, str]:
    """``STRICT_SYNONYMS`` as signature tokens (``concept``): a term -> its synonym's, "" to drop it."""
    return {concept(w): concept(s) if s else "" for w, s in STRICT_SYNONYMS.items()}


def _strict_signature(sig: dict) -> dict:
    """A signature with the strict match's synonyms read: a term that stands for an operation
    ("validate" for "verify") becomes that operation, as the other wording's signature records it."""
    table = _strict_synonyms()
    if not any(t in table for t in sig.get("terms", ())):
        return sig
    operations = _operation_concepts()
    terms = {table.get(t, t) for t in sig.get("terms", ())} - {""}
    links = set()
    for link in sig.get("links", ()):
        a, b = (table.get(w, w) for w in link.split("|"))
        if a and b and a != b:
            links.add("|".join(sorted((a, b))))
    mapped = {table[t] for t in sig.get("terms", ()) if table.get(t) in operations}
    return {**sig, "terms": sorted(terms), "links": sorted(links),
            "operations": sorted(set(sig.get("operations", ())) | mapped)}


def _strict_match(new_a, cached_a, new_sig: dict, cached_sig: dict) -> str | None:
    """Where the judge cannot read the language (and, by default, alone): every signature field,
    content term and word link equal (the strict match's own synonyms read, ``STRICT_SYNONYMS``, and
    one wording's links among the other's) and, if either asks what something costs, both do; or the
    reason why not."""
    new_sig, cached_sig = _strict_signature(new_sig), _strict_signature(cached_sig)
    diff = signature_difference(cached_sig, new_sig)
    if diff:
        return "signature differs: " + _describe(diff)
    a, b = set(cached_sig.get("terms", ())), set(new_sig.get("terms", ()))
    if a != b:
        return f"content words differ: cached {_surface(cached_a, sorted(a - b))}, new {_surface(new_a, sorted(b - a))}"
    if not _links_agree(set(cached_sig.get("links", ())), set(new_sig.get("links", ()))):
        return "same words, different arrangement"
    if set(cached_sig.get("mood", ())) != set(new_sig.get("mood", ())):  # also a veto; same_question has no vetoes
        return "one asks us to act, the other asks about it"
    new_cost, cached_cost = new_a.eligibility.intent == _COST, cached_a.eligibility.intent == _COST
    if new_cost != cached_cost:  # "how much does it cost to top up by card" / "how do I top up my card"
        return (f"one asks what it costs, the other not (cached {cached_a.eligibility.intent}, "
                f"new {new_a.eligibility.intent})")
    return None


_DEFAULT = object()


def _pair(new_q: str, cached_q: str, new_sig: dict | None, cached_sig: dict | None,
          thresholds: dict[str, float] | None) -> tuple:
    """Both questions analysed, their signatures (a stored one only if of this ``GUARDS_VERSION``)
    and the pair's cosine floor."""
    new_a, cached_a = _analyse(new_q), _analyse(cached_q)
    if new_sig is None or new_sig.get("version") != [GUARDS_VERSION]:
        new_sig = new_a.signature
    if cached_sig is None or cached_sig.get("version") != [GUARDS_VERSION]:
        cached_sig = cached_a.signature
    floor = _threshold_for(new_a.eligibility.intent, cached_a.eligibility.intent, thresholds or DEFAULT_THRESHOLDS)
    return new_a, cached_a, new_sig, cached_sig, floor


def _gate(new_a, cached_a, new_sig: dict, cached_sig: dict, similarity: float, floor: float, locale: str,
          reads: bool = False) -> str | None:
    """The steps before the judge (eligibility, the cosine floor, the vetoes, content): the first
    refusal's reason, or None when the pair reaches the judge or the strict match. ``reads``: the
    new question only reads the cache (``_reads``: only soft rules refuse it), so that refusal does
    not stop the pair."""
    new_e, cached_e = classify(new_a.question), classify(cached_a.question)  # the rules and the nets
    if not new_e.eligible and not reads:
        return f"new question ineligible: {new_e.reason}"
    if not cached_e.eligible:
        return f"cached question ineligible: {cached_e.reason}"
    if similarity < floor:
        return f"similarity {similarity:.3f} below the {new_e.intent} floor {floor:.2f}"
    language = (locale or "en").split("-")[0].lower()
    veto = vetoes(cached_sig, new_sig, (cached_e.intent, new_e.intent), products=language in JUDGE_LOCALES)
    if veto:
        return "veto: " + _describe(veto)
    # at serve time only, not in ``vetoes``: those choose the judge's training pairs (``veto``)
    contrast = contrasts(cached_a.question, new_a.question) if language in JUDGE_LOCALES else None
    if contrast:
        return "contrast: " + _describe(contrast)
    if not any(new_sig.get(f) for f in _CONTENT_FIELDS):
        return "no content words: too vague to share an answer"
    return None


def _reads(new_q: str, soft_reads: bool) -> bool:
    """Whether ``new_q`` reads the cache although a soft rule refused it (``eligibility.soft_only``,
    ``SEMANTIC_SOFT_READS``): the pair then goes on to the floor, the vetoes and the judge."""
    return soft_reads and soft_only(new_q)


def contender(new_q: str, cached_q: str, similarity: float, new_sig: dict | None = None,
              cached_sig: dict | None = None, thresholds: dict[str, float] | None = None, *,
              locale: str = "en", soft_reads: bool = False) -> bool:
    """Whether a cached question is still a plausible answer-giver for ``new_q`` before the judge:
    both eligible, over the cosine floor, no veto, the new question not too vague. No model runs.
    The semantic layer's ambiguity check (``caching.layers.semantic``) asks it of the other
    candidates of a lookup: a veto proves a candidate is about something else, a judge's refusal
    does not."""
    new_a, cached_a, new_sig, cached_sig, floor = _pair(new_q, cached_q, new_sig, cached_sig, thresholds)
    return _gate(new_a, cached_a, new_sig, cached_sig, similarity, floor, locale, _reads(new_q, soft_reads)) is None


def same_question(a_q: str, b_q: str, a_sig: dict | None = None, b_sig: dict | None = None) -> bool:
    """Whether two questions ask the same thing by the strict match alone (both eligible, every
    signature field, content term and word link equal, cost asked by both or neither): answers
    written for them are interchangeable however they are worded. No model runs and no cosine floor
    applies. The ambiguity check asks it of two cached entries, so that two entries for one
    question ("What is your return policy?" and "What is your return policy? Thanks") do not block
    each other."""
    a, b, a_sig, b_sig, _ = _pair(a_q, b_q, a_sig, b_sig, None)
    if not (a.eligibility.eligible and b.eligibility.eligible):
        return False
    return _strict_match(a, b, a_sig, b_sig) is None


# How every reason the learned judge gives starts: a hit with such a reason is one it alone served.
JUDGE_REASON = "judge: "
# How many nearest cached entries a semantic lookup judges (``caching.layers.semantic``, and the
# replay that chooses the judge's least cosine, ``modelbuild.judge_replay``).
CANDIDATES = 3


def judge(new_q: str, cached_q: str, similarity: float, new_sig: dict | None = None,
          cached_sig: dict | None = None, thresholds: dict[str, float] | None = None, *, locale: str = "en",
          learned=_DEFAULT, judge_threshold: float | None = None, judge_serves: bool = True,
          judge_min_similarity: float | None = 0.0, soft_reads: bool = False) -> Judgement:
    """Decide whether the cached answer to ``cached_q`` may be served for ``new_q`` (see the module
    docstring for the order). ``thresholds`` are the per-intent cosine floors; ``learned`` the judge
    to ask (default: the process's, ``learned_judge()``); ``judge_threshold`` overrides the
    artefact's calibrated operating point. ``judge_serves`` False (``SEMANTIC_JUDGE_SERVES`` off):
    the judge's probability is computed and recorded, but only a strict match serves; a pair the
    judge alone would serve is refused with a reason that says so. ``judge_min_similarity``
    (``SEMANTIC_JUDGE_MIN_SIMILARITY``): below this cosine the judge alone does not serve either;
    None: the judge's own, chosen at training (``LearnedJudge.min_similarity``; none chosen, 1.0). A
    strict match serves without consulting the judge (it could not change the decision).
    ``soft_reads`` (``SEMANTIC_SOFT_READS``): a new question only soft rules refused is judged as if
    eligible (``_reads``), except that only a strict match serves it (the judge never saw such a
    question in training or calibration); it only reads, the caller never stores its answer."""
    new_a, cached_a, new_sig, cached_sig, floor = _pair(new_q, cached_q, new_sig, cached_sig, thresholds)
    intent = new_a.eligibility.intent
    difference = signature_difference(cached_sig, new_sig)

    def refuse(reason: str, probability: float | None = None, version: str = "") -> Judgement:
        return Judgement(False, reason, intent, floor, difference, probability, version)

    reads = _reads(new_q, soft_reads)
    early = _gate(new_a, cached_a, new_sig, cached_sig, similarity, floor, locale, reads)
    if early:
        return refuse(early)
    language = (locale or "en").split("-")[0].lower()
    if language not in JUDGE_LOCALES:
        why = _strict_match(new_a, cached_a, new_sig, cached_sig)
        if why:
            return refuse(f"judge abstains: locale {locale}; strict match refused: {why}")
        return Judgement(True, f"judge abstains: locale {locale}; strict match (similarity {similarity:.3f})",
                         intent, floor, None)
    model = learned_judge() if learned is _DEFAULT else learned
    strict = _strict_match(new_a, cached_a, new_sig, cached_sig)
    held = "SEMANTIC_JUDGE_SERVES off"
    if judge_serves and reads:
        # the judge was trained and calibrated on eligible questions only: for a read-only question
        # its probability is recorded, but only a strict match serves
        judge_serves, held = False, "a read-only question"
    elif judge_serves and similarity < (least := least_cosine(model, judge_min_similarity)):
        judge_serves, held = False, f"similarity {similarity:.3f} below its least, {least:.2f}"
    if strict is None and model is not None:
        # The judge would not change this decision: a strict match serves whatever it says, whether
        # the judge serves or not, so the request does not pay for its forward pass. A staff label on
        # the pair is scored when it is made (``score_pair``); the version says which judge was
        # loaded, the probability stays None.
        return Judgement(True, f"strict match, no veto (similarity {similarity:.3f}; judge not consulted)",
                         intent, floor, None, None, model.version)
    if model is None:
        missing = _learned_missing or "judge abstains: no judge loaded"
        if strict:
            return refuse(f"{missing}; strict match refused: {strict}")
        return Judgement(True, f"{missing}; strict match (similarity {similarity:.3f})", intent, floor, None)
    probability = model.probability(cached_q, new_q, similarity)
    cut = model.threshold if judge_threshold is None else judge_threshold
    if probability >= cut and judge_serves:
        return Judgement(True, f"{JUDGE_REASON}p={probability:.3f} >= {cut:.3f} (similarity {similarity:.3f}), no veto",
                         intent, floor, difference, probability, model.version)
    if probability >= cut:
        return refuse(f"{JUDGE_REASON}p={probability:.3f} >= {cut:.3f}, but the judge does not serve "
                      f"({held}); strict match refused: {strict}", probability, model.version)
    return refuse(f"{JUDGE_REASON}p={probability:.3f} below {cut:.3f} (similarity {similarity:.3f}); strict match refused: "
                  f"{strict}", probability, model.version)


def least_cosine(model: LearnedJudge | None, override: float | None = None) -> float:
    """The least cosine at which ``model`` alone serves: ``override`` (``SEMANTIC_JUDGE_MIN_SIMILARITY``)
    when set, else the one chosen with it at training (``LearnedJudge.min_similarity``), else 1.0 (a
    judge without one, or none loaded, never serves alone)."""
    if override is not None:
        return float(override)
    return 1.0 if model is None or model.min_similarity is None else model.min_similarity


def prefetch(new_q: str, candidates: list[tuple[str, float, dict | None]], thresholds: dict[str, float] | None = None,
             *, locale: str = "en", learned=_DEFAULT, soft_reads: bool = False) -> int:
    """Before judging a lookup's candidates one by one, score with the cross-encoder, in one forward
    pass, those the judge will be asked about (eligible, over the cosine floor, no veto, English,
    not a strict match: a strict match serves without the judge);
    the judgements then read its memo. ``candidates``: (cached question, cosine, cached signature).
    Returns how many were scored: none, and nothing analysed, when the judge does not score ahead
    (``LearnedJudge.wants_prefetch``)."""
    model = learned_judge() if learned is _DEFAULT else learned
    language = (locale or "en").split("-")[0].lower()
    if model is None or not model.wants_prefetch or language not in JUDGE_LOCALES:
        return 0
    asked, reads = [], _reads(new_q, soft_reads)
    for cached_q, similarity, cached_sig in candidates:
        new_a, cached_a, new_sig, cached_sig, floor = _pair(new_q, cached_q, None, cached_sig, thresholds)
        # the steps ``judge`` takes before the model (``_gate``), then no strict match
        if (_gate(new_a, cached_a, new_sig, cached_sig, similarity, floor, locale, reads) is None
                and _strict_match(new_a, cached_a, new_sig, cached_sig) is not None):
            asked.append(cached_q)
    model.prefetch(new_q, asked)
    return len(asked)


def score_pair(cached_q: str, new_q: str, similarity: float | None, *, locale: str = "en",
               learned=_DEFAULT) -> tuple[float | None, str]:
    """(probability, judge version) of one pair, off the request path (a staff label on a strict
    match, which served without the judge); (None, "") where the judge cannot say."""
    model = learned_judge() if learned is _DEFAULT else learned
    language = (locale or "en").split("-")[0].lower()
    if model is None or similarity is None or language not in JUDGE_LOCALES:
        return None, ""
    return model.probability(cached_q, new_q, similarity), model.version


def veto(cached_q: str, new_q: str) -> str | None:
    """The vetoes' reason for a pair of questions, or None (used to pick the judge's operating point
    on pairs the vetoes let through)."""
    cached_a, new_a = _analyse(cached_q), _analyse(new_q)
    diff = vetoes(cached_a.signature, new_a.signature, (cached_a.eligibility.intent, new_a.eligibility.intent))
    return _describe(diff) if diff else None
