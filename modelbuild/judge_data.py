"""Training and evaluation pairs for the semantic judge, built by code from the public data in ``data/``.

A pair is ``(cached question, new question, label)``: label 1 when the cached answer is the right
answer to the new question, 0 when it is not. Nothing here is hand-labelled:

* positives: two questions with the same intent (BANKING77, CLINC150; NLU++ with the same intent
  modules and slot values), the GPTCache mock paraphrase pairs, PAWS pairs labelled paraphrase, and
  harmless rewrites of real questions (greetings, fillers, "how do I" vs "how can I");
* hard negatives: each question's nearest neighbour (TF-IDF cosine, so the wording overlaps) with a
  different intent in the same domain, NLU++ questions with the same intents and other slot values,
  out-of-scope CLINC150 questions against their nearest in-scope one, PAWS word-swap pairs, and
  one-detail perturbations of real questions: a number, place, month, weekday, currency or tier
  swapped, a negation added, an opposite operation ("open" / "close"), an added condition, the
  answer type switched (cost / duration, when / where, how / why);
* one-word changes the vetoes cannot see (``lexical_pairs``): a word swapped for its opposite (a
  general English list, and the un-/in-/dis-/non- forms of words that both occur in the questions),
  "do X" turned into "avoid X" / "stop X" (negatives), and a word swapped for a synonym (positives),
  so a changed word alone does not tell the judge which way the answer goes.

Pure Python with numpy and scikit-learn: no Django, no model. Every choice draws from a seeded
``random.Random``, so the same data and seed give the same pairs.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caching.guards.judge_recipe import DATA_DIR, PairConfig, data_files, data_hash  # noqa: F401 - the recipe's, shared
from caching.guards.lexicon import OPPOSITE_OF


# Dataset names, as the leave-one-dataset-out splits use them.
BANKING77, CLINC150, NLUPP = "banking77", "clinc150", "nlupp"


@dataclass(frozen=True)
class Question:
    text: str
    intent: str  # dataset-qualified: "banking77:card_arrival"
    dataset: str
    domain: str
    split: str  # "train" | "test"


@dataclass(frozen=True)
class Pair:
    cached: str
    new: str
    label: int
    kind: str  # how the pair was made: same_intent, neighbour, perturb:number, paraphrase, ...
    intents: tuple[str, ...] = ()  # the intents the pair's questions come from (for the held-out checks)


# --------------------------------------------------------------------------- loading

def _read_gz_text(path: Path) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read()


def load_banking77(data_dir: Path = DATA_DIR) -> list[Question]:
    out = []
    for split in ("train", "test"):
        rows = csv.DictReader(io.StringIO(_read_gz_text(data_dir / "banking77" / f"{split}.csv.gz")))
        out += [Question(r["text"].strip(), f"{BANKING77}:{r['category']}", BANKING77, "banking", split)
                for r in rows if r["text"].strip()]
    return out


def load_clinc150(data_dir: Path = DATA_DIR, with_oos: bool = False) -> list[Question]:
    data = json.loads(_read_gz_text(data_dir / "clinc150" / "data_full.json.gz"))
    domains = json.loads((data_dir / "clinc150" / "domains.json").read_text())
    domain_of = {intent: d for d, intents in domains.items() for intent in intents}
    out = []
    for key, split in (("train", "train"), ("val", "train"), ("test", "test")):
        out += [Question(t.strip(), f"{CLINC150}:{i}", CLINC150, domain_of[i], split) for t, i in data[key]]
    if with_oos:
        for key, split in (("oos_train", "train"), ("oos_val", "train"), ("oos_test", "test")):
            out += [Question(t.strip(), f"{CLINC150}:oos", CLINC150, "oos", split) for t, _ in data[key]]
    return out


# NLU++ intent modules that make a dialogue turn, not a question with an answer of its own.
_NLUPP_DIALOGUE = {"affirm", "deny", "dont_know", "acknowledge", "greet", "end_call", "handoff", "thank", "repeat"}


def _slot_key(slots: dict) -> str:
    return json.dumps({k: v.get("value", v.get("values")) for k, v in (slots or {}).items()}, sort_keys=True)


def load_nlupp(data_dir: Path = DATA_DIR) -> list[Question]:
    """NLU++ banking questions; the "intent" is the set of intent modules plus the slot values, so two
    questions share it only when the same answer fits both. Folds 0-15 train, 16-19 test."""
    rows = json.loads(_read_gz_text(data_dir / "nlupp_banking" / "folds.json.gz"))
    out = []
    for r in rows:
        intents = set(r.get("intents") or ())
        if not intents or intents & _NLUPP_DIALOGUE:
            continue
        key = "+".join(sorted(intents)) + "|" + _slot_key(r.get("slots"))
        out.append(Question(r["text"].strip(), f"{NLUPP}:{key}", NLUPP, "banking",
                            "test" if r["fold"] >= 16 else "train"))
    return out


def load_gptcache(data_dir: Path = DATA_DIR) -> list[tuple[str, str]]:
    rows = json.loads(_read_gz_text(data_dir / "gptcache_mock" / "mock_data.json.gz"))
    return [(r["origin"].strip(), r["similar"].strip()) for r in rows]


def load_paws(data_dir: Path = DATA_DIR) -> list[tuple[str, str, int]]:
    with open(data_dir / "paws_ni_sample" / "paws_wiki_sample.csv", newline="", encoding="utf-8") as fh:
        return [(r["sentence1"], r["sentence2"], int(r["label"])) for r in csv.DictReader(fh)]


def load_questions(datasets: tuple[str, ...] = (BANKING77, CLINC150, NLUPP), data_dir: Path = DATA_DIR) -> list[Question]:
    loaders = {BANKING77: load_banking77, CLINC150: load_clinc150, NLUPP: load_nlupp}
    return [q for name in datasets for q in loaders[name](data_dir)]


# --------------------------------------------------------------------------- perturbations

_SWAP_SETS = [
    "monday tuesday wednesday thursday friday saturday sunday".split(),
    "january february march april june july august september october november december".split(),
    "uk usa canada germany france spain italy australia india japan mexico ireland china brazil".split(),
    "london paris berlin madrid rome tokyo dublin sydney toronto amsterdam".split(),
    "dollars euros pounds yen francs pesos rupees".split(),
    "visa mastercard amex paypal".split(),
    "free basic premium pro enterprise gold silver platinum student business".split(),
    "adults children seniors students infants pets".split(),
    "iphone android ipad mac windows linux".split(),
    "morning afternoon evening night".split(),
]
_SWAP_OF = {w: s for s in _SWAP_SETS for w in s}


# Answer-type switches: the same topic, a different question about it.
_ANSWER_TYPE = [
    (r"\bhow long does (.+?) take\b", r"how much does \1 cost"),
    (r"\bhow much does (.+?) cost\b", r"how long does \1 take"),
    (r"\bhow long\b", "how much"), (r"\bhow much\b", "how long"), (r"\bhow many\b", "how often"),
    (r"\bwhen\b", "where"), (r"\bwhere\b", "when"), (r"\bwhy\b", "how"), (r"^how\b", "why"),
    (r"\bfees?\b", "processing time"), (r"\bcosts?\b", "time"), (r"\bcharges?\b", "limits"), (r"\blimits?\b", "fees"),
    (r"\bwhat\b", "which documents"),
]

_CONDITIONS = [
    "if it is damaged", "for international orders", "on weekends", "for business accounts", "without a receipt",
    "after 30 days", "for children", "in euros", "over $500", "with a credit card", "if I live abroad",
    "on a public holiday", "for a joint account", "if I'm under 18", "outside the EU", "for the premium plan",
    "after the deadline", "by phone", "for a second time", "if the card has expired", "for someone else",
    "using the mobile app", "while travelling", "in cash", "for an unregistered user",
]

_AUX = re.compile(r"\b(do|does|did|is|are|can|will|should|would|could|was|were|has|have)\b", re.I)
_NEG_FORM = {"can": "can't", "will": "won't"}

_HARMLESS_PREFIX = ["hi, ", "hello, ", "hey, ", "please, ", "ok, ", "so "]
_HARMLESS_SUFFIX = [" thanks", " thank you!", " please", "?", "??", "!", " please?"]
_REPHRASE = [
    (r"^how do i\b", "how can i"), (r"^how can i\b", "how do i"), (r"^how do i\b", "what is the way to"),
    (r"^can i\b", "is it possible to"), (r"^is it possible to\b", "can i"), (r"^what is\b", "what's"),
    (r"^what's\b", "what is"), (r"\bdon't\b", "do not"), (r"\bdo not\b", "don't"), (r"\bi'm\b", "i am"),
    (r"\bhow do i\b", "how should i"), (r"\bcan you tell me\b", "i'd like to know"), (r"\bwhere can i\b", "where do i"),
]


def _swap_word(text: str, rng: random.Random) -> str | None:
    words = text.split()
    spots = [i for i, w in enumerate(words) if w.lower().strip("?,.!") in _SWAP_OF]
    if not spots:
        return None
    i = rng.choice(spots)
    core = words[i].lower().strip("?,.!")
    other = rng.choice([w for w in _SWAP_OF[core] if w != core])
    words[i] = words[i].lower().replace(core, other)
    return " ".join(words)


def _swap_number(text: str, rng: random.Random) -> str | None:
    nums = list(re.finditer(r"\d+(?:\.\d+)?", text))
    if not nums:
        return None
    m = rng.choice(nums)
    value = float(m.group(0))
    new = rng.choice([value + 1, value * 2, max(value - 1, 0) if value > 1 else value + 5, value * 10])
    new_text = f"{new:g}"
    if new_text == m.group(0):
        return None
    return text[: m.start()] + new_text + text[m.end():]


def _opposite(text: str, rng: random.Random) -> str | None:
    low = text.lower()
    hits = [(m, w) for w in OPPOSITE_OF for m in re.finditer(rf"\b{re.escape(w)}\b", low)]
    if not hits:
        return None
    m, w = rng.choice(hits)
    return low[: m.start()] + OPPOSITE_OF[w] + low[m.end():]


def _negate(text: str, rng: random.Random) -> str | None:
    m = _AUX.search(text)
    if not m or re.search(r"n't\b|\bnot\b|\bnever\b", text, re.I):
        return None
    aux = m.group(1).lower()
    return text[: m.start()] + _NEG_FORM.get(aux, aux + "n't") + text[m.end():]


def _answer_type(text: str, rng: random.Random) -> str | None:
    low = text.lower()
    options = [(p, r) for p, r in _ANSWER_TYPE if re.search(p, low)]
    if not options:
        return None
    p, r = rng.choice(options)
    return re.sub(p, r, low, count=1)


def _add_condition(text: str, rng: random.Random) -> str | None:
    base = text.rstrip(" ?.!")
    if len(base.split()) < 3:
        return None
    return f"{base} {rng.choice(_CONDITIONS)}?"


# --------------------------------------------------------------------------- one-word changes

# Opposites in general English, beyond the guards' ``OPPOSITE_OF`` (which the vetoes and the
# ``opposite`` feature already see). Written from general knowledge, for any domain.
ANTONYMS = [
    ("accept", "refuse"), ("accept", "reject"), ("allow", "block"), ("allow", "prevent"), ("allow", "deny"),
    ("permit", "forbid"), ("permitted", "prohibited"), ("include", "omit"), ("win", "lose"), ("gain", "lose"),
    ("pass", "fail"), ("succeed", "fail"), ("success", "failure"), ("increase", "reduce"),
    ("raise", "lower"), ("enter", "exit"), ("entrance", "exit"), ("arrive", "depart"), ("arrival", "departure"),
    ("borrow", "lend"), ("push", "pull"), ("save", "spend"), ("show", "hide"), ("visible", "hidden"),
    ("public", "private"), ("working", "broken"), ("right", "wrong"), ("true", "false"), ("legal", "illegal"),
    ("full", "empty"), ("cheap", "expensive"), ("fast", "slow"), ("long", "short"), ("large", "small"),
    ("big", "small"), ("high", "low"), ("hot", "cold"), ("light", "heavy"), ("easy", "hard"), ("easy", "difficult"),
    ("safe", "dangerous"), ("good", "bad"), ("best", "worst"), ("better", "worse"), ("same", "different"),
    ("always", "never"), ("inside", "outside"), ("above", "below"),
    ("start", "finish"), ("begin", "end"), ("remember", "forget"), ("keep", "discard"),
    ("hire", "fire"), ("mandatory", "optional"), ("required", "optional"), ("profit", "loss"), ("young", "old"),
    ("inbound", "outbound"), ("north", "south"), ("east", "west"), ("front", "back"), ("top", "bottom"),
    ("positive", "negative"), ("love", "hate"), ("like", "dislike"), ("healthy", "unhealthy"), ("strong", "weak"),
    ("rich", "poor"), ("wet", "dry"), ("clean", "dirty"), ("online", "offline"), ("present", "absent"),
    ("encrypt", "decrypt"), ("attach", "detach"), ("approve", "deny"), ("grant", "revoke"), ("give", "take"),
    ("come", "go"), ("arrive", "leave"), ("most", "least"), ("more", "fewer"), ("plus", "minus"),
    ("multiply", "divide"), ("sooner", "later"), ("ahead", "behind"), ("beginner", "advanced"), ("basic", "advanced"),
    ("junior", "senior"), ("simple", "complex"), ("temporary", "permanent"), ("partial", "full"),
    ("single", "multiple"), ("internal", "external"), ("manual", "automatic"), ("local", "foreign"),
    ("input", "output"), ("sign in", "sign out"), ("log in", "log out"), ("check in", "check out"),
    ("pick up", "drop off"), ("speed up", "slow down"), ("plug in", "unplug"), ("fill", "empty"),
    ("asleep", "awake"), ("agree", "refuse"), ("clear", "unclear"), ("ready", "not ready"),
    ("cause", "prevent"), ("raise", "cut"), ("protect", "expose"),
    ("open", "shut"), ("hold", "release"), ("catch", "miss"), ("attend", "miss"), ("obey", "break"),
    ("build", "destroy"), ("create", "delete"), ("allow", "ban"), ("ally", "enemy"), ("friend", "enemy"),
    ("cheaper", "more expensive"), ("faster", "slower"), ("bigger", "smaller"),
    ("newer", "older"), ("easier", "harder"), ("safer", "riskier"), ("quiet", "loud"), ("dark", "bright"),
]

# Words that mean the same in a question, whichever is used (positives: a changed word is not
# enough to change the answer). General English, for any domain.
SYNONYMS = [
    ("buy", "purchase"), ("shop", "store"), ("begin", "start"), ("help", "assist"), ("fix", "repair"),
    ("error", "mistake"), ("problem", "issue"), ("choose", "select"), ("change", "modify"), ("delete", "erase"),
    ("cost", "price"), ("need", "require"), ("quick", "fast"), ("quickly", "fast"), ("big", "large"),
    ("little", "small"), ("reach", "contact"), ("telephone", "phone"), ("cell phone", "mobile phone"),
    ("smartphone", "phone"), ("website", "site"), ("email", "e-mail"), ("money", "funds"), ("wrong", "incorrect"),
    ("allowed", "permitted"), ("forbidden", "prohibited"), ("find", "locate"), ("look for", "search for"),
    ("check", "verify"), ("want", "would like"), ("anytime", "whenever"), ("usually", "normally"),
    ("often", "frequently"), ("maybe", "perhaps"), ("simple", "easy"), ("difficult", "hard"), ("end", "finish"),
    ("return", "send back"), ("shipping", "delivery"), ("ship", "deliver"), ("trip", "journey"),
    ("car", "vehicle"), ("kids", "children"), ("kid", "child"), ("documents", "paperwork"),
    ("identification", "id"), ("broken", "faulty"), ("damaged", "broken"), ("enough", "sufficient"),
    ("speak to", "talk to"), ("agent", "representative"),
    ("tell me", "let me know"), ("cancel", "call off"), ("cancel", "terminate"),
    ("rapidly", "quickly"), ("soon", "shortly"), ("correct", "right"), ("photo", "picture"), ("movie", "film"),
    ("sofa", "couch"), ("holiday", "vacation"), ("begin", "commence"), ("answer", "reply"), ("ask", "enquire"),
    ("talk", "speak"), ("stop", "halt"), ("guarantee", "warranty"), ("bill", "invoice"), ("present", "gift"),
    ("near", "close to"), ("nearby", "close by"), ("appointment", "booking"), ("reserve", "book"),
    ("reservation", "booking"), ("cheap", "inexpensive"), ("costly", "expensive"), ("amount", "sum"),
    ("use", "utilise"), ("use", "utilize"), ("go to", "visit"), ("explain", "describe"), ("fee", "charge"),
    ("parcel", "package"), ("postcode", "zip code"), ("mail", "post"), ("mailbox", "inbox"),
]

# Prefixes that make a word's opposite ("able" / "unable", "correct" / "incorrect").
_NEGATING_PREFIXES = ("non-", "non", "un", "in", "im", "il", "ir", "dis")
# Prefixed words that are not the opposite of what follows the prefix.
_NOT_PREFIX_OPPOSITES = frozenset("""
disable disappointed disclose disclosed discontent discount discover discovered disease display displayed
displaying displays dispose impaired import impose improve improving imshow images incase income incoming
incorporate increase increased indefinitely indoor inform informed informing inputs inputting inside insight
instruct insure intake intent invoice indict non-city non-string uncased unlike unless unsuppress unusually
intend intense invest invent inside install instead index infer inner insist inspect indeed unite united
universe university until unto disarm dispatch distance distant dismiss distribute district disturb
""".split())


def prefix_opposites(texts: list[str]) -> list[tuple[str, str]]:
    """(word, its prefixed opposite) for every such pair whose both words occur in ``texts``
    ("able" / "unable", "correct" / "incorrect", "physical" / "non-physical"): the questions' own
    vocabulary, so the words are the data's. Words of fewer than 4 letters after the prefix, and
    prefixed words that are not opposites (``_NOT_PREFIX_OPPOSITES``), are left out."""
    vocab = {w for t in texts for w in re.findall(r"[a-z]+(?:-[a-z]+)?", t.lower())}
    out = []
    for w in sorted(vocab):
        if w in _NOT_PREFIX_OPPOSITES:
            continue
        for prefix in _NEGATING_PREFIXES:
            base = w[len(prefix):]
            if w.startswith(prefix) and len(base) >= 4 and base in vocab:
                out.append((base, w))
                break
    return out


def word_pairs_part(pairs: list[tuple[str, str]], part: str) -> list[tuple[str, str]]:
    """``all`` the word pairs, or the ``train`` (about 70%) / ``heldout`` (the rest) part, split by a
    stable hash of the pair: ``bench.judge_eval`` trains on one part and evaluates on the other."""
    if part == "all":
        return list(pairs)
    if part not in ("train", "heldout"):
        raise ValueError(f"word pairs part {part!r}: choose all, train or heldout")
    held = [p for p in pairs if int(hashlib.sha256(" / ".join(sorted(p)).encode()).hexdigest()[:8], 16) % 10 < 3]
    return held if part == "heldout" else [p for p in pairs if p not in held]


def _table(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    table: dict[str, list[str]] = defaultdict(list)
    for a, b in pairs:
        table[a].append(b)
        table[b].append(a)
    return table


def _swap_from(text: str, table: dict[str, list[str]], rng: random.Random) -> str | None:
    """``text`` (lower-cased) with one word or phrase of ``table`` replaced by one of its counterparts."""
    low = text.lower()
    hits = [(m, w) for w in sorted(table) for m in re.finditer(rf"(?<![\w-]){re.escape(w)}(?![\w-])", low)]
    if not hits:
        return None
    m, w = rng.choice(hits)
    return low[: m.start()] + rng.choice(sorted(table[w])) + low[m.end():]


_DOUBLE_FINAL = frozenset("admit transfer refer prefer submit commit forget regret".split())
_DO_FRAME = re.compile(r"^((?:how (?:do|can|should|could|would) (?:i|we|you)|can i|could i|should i|is it possible to|"
                       r"i (?:want|need|would like|have) to|i'd like to|what do i do to|help me)) ([a-z]+)\b")
_NOT_A_VERB = frozenset("not a an the my your this that it there to be still also just really".split())


def _gerund(verb: str) -> str:
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    if verb in _DOUBLE_FINAL or re.fullmatch(r"[^aeiou]*[aeiou][^aeiouwxy]", verb):  # stop -> stopping
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _avoid(text: str, rng: random.Random) -> str | None:
    """"how do I X ..." -> "how do I avoid X-ing ..." / "... stop X-ing ...": the opposite request."""
    low = text.lower().strip()
    m = _DO_FRAME.match(low)
    if not m or m.group(2) in _NOT_A_VERB or m.group(2).endswith("ing"):
        return None
    return f"{m.group(1)} {rng.choice(('avoid', 'stop'))} {_gerund(m.group(2))}{low[m.end():]}"


LEXICAL_KINDS = ("perturb:antonym", "perturb:avoid", "synonym")  # the kinds ``lexical_pairs`` makes


def lexical_pairs(questions: list[Question], rng: random.Random, n: int, part: str = "all",
                  extra_texts: list[str] = ()) -> list[Pair]:
    """About ``n`` one-word negatives of real questions (a word swapped for its opposite from
    ``ANTONYMS`` or ``prefix_opposites`` of the questions' own words, or "do X" made "avoid/stop X")
    and about ``n`` positives (a word swapped for a synonym from ``SYNONYMS``). ``part`` chooses the
    word pairs (``word_pairs_part``)."""
    if n <= 0:
        return []
    opposite = _table(word_pairs_part(ANTONYMS + prefix_opposites([q.text for q in questions] + list(extra_texts)), part))
    synonym = _table(word_pairs_part(SYNONYMS, part))
    makers = {"antonym": lambda t: _swap_from(t, opposite, rng), "avoid": lambda t: _avoid(t, rng)}
    pairs, negatives, positives = [], 0, 0
    for i in rng.sample(range(len(questions)), len(questions)):
        if negatives >= n and positives >= n:
            break
        q = questions[i]
        if negatives < n:
            for kind in rng.sample(sorted(makers), len(makers)):
                out = makers[kind](q.text)
                if out and out != q.text.lower().strip():
                    first, second = (q.text, out) if rng.random() < 0.5 else (out, q.text)
                    pairs.append(Pair(first, second, 0, f"perturb:{kind}", (q.intent,)))
                    negatives += 1
                    break
        if positives < n:
            out = _swap_from(q.text, synonym, rng)
            if out and out != q.text.lower().strip():
                first, second = (q.text, out) if rng.random() < 0.5 else (out, q.text)
                pairs.append(Pair(first, second, 1, "synonym", (q.intent,)))
                positives += 1
    return pairs


PERTURBATIONS = {"number": _swap_number, "entity": _swap_word, "opposite": _opposite, "negation": _negate,
                 "answer_type": _answer_type, "condition": _add_condition}


def perturb(text: str, kind: str, rng: random.Random) -> str | None:
    """A one-detail change of ``text`` that changes its answer, or None when ``kind`` does not apply."""
    out = PERTURBATIONS[kind](text, rng)
    if out is None or out.strip().lower() == text.strip().lower():
        return None
    return out


def harmless_rewrite(text: str, rng: random.Random) -> str | None:
    """The same question with greetings, fillers, casing or a different question frame."""
    low = text.lower().strip()
    options = [p for p, _ in _REPHRASE if re.search(p, low)]
    choice = rng.random()
    if options and choice < 0.5:
        p = rng.choice(options)
        r = rng.choice([rr for pp, rr in _REPHRASE if pp == p])
        out = re.sub(p, r, low, count=1)
    elif choice < 0.75:
        out = rng.choice(_HARMLESS_PREFIX) + low
    else:
        out = low.rstrip(" ?.!") + rng.choice(_HARMLESS_SUFFIX)
    return None if out == low else out


# --------------------------------------------------------------------------- pairs

def _neighbours(questions: list[Question]) -> list[list[int]]:
    """For each question, the indices of the others ordered by TF-IDF cosine, nearest first (top 20)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [q.text for q in questions]
    matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1).fit_transform(texts)
    out = []
    step = 512
    for start in range(0, len(texts), step):
        sims = (matrix[start:start + step] @ matrix.T).toarray()
        for row, i in enumerate(range(start, min(start + step, len(texts)))):
            sims[row, i] = -1.0
            top = np.argpartition(-sims[row], 20)[:20] if len(texts) > 21 else np.arange(len(texts))
            out.append([int(j) for j in sorted(top, key=lambda j: (-sims[row, j], j))])
    return out


def intent_pairs(questions: list[Question], rng: random.Random, positives_per_intent: int,
                 negatives_per_question: float) -> list[Pair]:
    """Same-intent positives and nearest-other-intent negatives (same dataset and domain)."""
    pairs: list[Pair] = []
    by_intent: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_intent[q.intent].append(i)
    for intent, idx in sorted(by_intent.items()):
        if len(idx) < 2:
            continue
        for _ in range(positives_per_intent):
            a, b = rng.sample(idx, 2)
            pairs.append(Pair(questions[a].text, questions[b].text, 1, "same_intent", (intent,)))
    by_group: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_group[(q.dataset, q.domain)].append(i)
    for group, idx in sorted(by_group.items()):
        members = [questions[i] for i in idx]
        if len(members) < 3:
            continue
        near = _neighbours(members)
        chosen = rng.sample(range(len(members)), min(len(members), int(len(members) * negatives_per_question)))
        for i in chosen:
            other = next((j for j in near[i] if members[j].intent != members[i].intent), None)
            if other is not None:
                pairs.append(Pair(members[other].text, members[i].text, 0, "neighbour",
                                  (members[i].intent, members[other].intent)))
        # and a few random other-intent questions of the domain: the easy negatives, so the judge
        # has seen what an unrelated question looks like (low cosine, little shared)
        for i in chosen[: len(chosen) // 3]:
            j = rng.randrange(len(members))
            if members[j].intent != members[i].intent:
                pairs.append(Pair(members[j].text, members[i].text, 0, "random", (members[i].intent, members[j].intent)))
    return pairs


def perturbation_pairs(questions: list[Question], rng: random.Random, n: int) -> list[Pair]:
    """``n`` one-detail negatives and about ``n / 2`` harmless-rewrite positives of real questions."""
    pairs = []
    kinds = list(PERTURBATIONS)
    order = rng.sample(range(len(questions)), len(questions))
    made = 0
    for i in order:
        if made >= n:
            break
        q = questions[i]
        for kind in rng.sample(kinds, len(kinds)):
            out = perturb(q.text, kind, rng)
            if out:
                first, second = (q.text, out) if rng.random() < 0.5 else (out, q.text)
                pairs.append(Pair(first, second, 0, f"perturb:{kind}", (q.intent,)))
                made += 1
                break
    # as many harmless rewrites of the same questions: a pair that shares almost every word is then
    # as often the same question as a one-detail change, and the judge must look at the detail
    for i in order[:n]:
        out = harmless_rewrite(questions[i].text, rng)
        if out:
            first, second = (questions[i].text, out) if rng.random() < 0.5 else (out, questions[i].text)
            pairs.append(Pair(first, second, 1, "rewrite", (questions[i].intent,)))
    return pairs


def paraphrase_pairs(rng: random.Random, data_dir: Path = DATA_DIR) -> list[Pair]:
    """GPTCache mock paraphrases (positives, plus each paired with a lexically near other row's
    origin as a negative) and the PAWS sample (both labels, both directions)."""
    pairs = []
    rows = load_gptcache(data_dir)
    for origin, similar in rows:
        pairs.append(Pair(origin, similar, 1, "paraphrase"))
    origins = [Question(o, f"gptcache:{k}", "gptcache", "docs", "train") for k, (o, _) in enumerate(rows)]
    near = _neighbours(origins)
    for k, (origin, similar) in enumerate(rows):
        j = next((j for j in near[k] if origins[j].text != origin), None)
        if j is not None and rng.random() < 0.5:
            pairs.append(Pair(origins[j].text, similar, 0, "paraphrase_neighbour"))
    for s1, s2, label in load_paws(data_dir):
        pairs.append(Pair(s1, s2, label, "paws"))
        pairs.append(Pair(s2, s1, label, "paws"))
    return pairs


def oos_pairs(data_dir: Path, rng: random.Random, split: str) -> list[Pair]:
    """CLINC150 out-of-scope questions against their nearest in-scope question: no answer fits."""
    qs = [q for q in load_clinc150(data_dir, with_oos=True) if q.split == split]
    near = _neighbours(qs)
    out = []
    for i, q in enumerate(qs):
        if q.domain == "oos":
            j = next((j for j in near[i] if qs[j].domain != "oos"), None)
            if j is not None:
                out.append(Pair(qs[j].text, q.text, 0, "out_of_scope", (qs[j].intent,)))
    return out


def build_pairs(questions: list[Question], config: PairConfig, *, with_paraphrases: bool = True,
                with_oos: bool = False, data_dir: Path = DATA_DIR) -> list[Pair]:
    """All pairs for a set of questions (intent pairs, perturbations, and the paraphrase sets),
    shuffled with the config's seed."""
    rng = random.Random(config.seed)
    pairs = intent_pairs(questions, rng, config.positives_per_intent, config.negatives_per_question)
    pairs += perturbation_pairs(questions, rng, config.perturbations)
    if with_paraphrases:
        pairs += paraphrase_pairs(rng, data_dir)
    if with_oos:
        pairs += oos_pairs(data_dir, rng, "train")
    texts = [t for p in paraphrase_pairs(random.Random(0), data_dir) for t in (p.cached, p.new)] if with_paraphrases else []
    pairs += lexical_pairs(questions, random.Random(f"lexical:{config.seed}"), config.lexical, config.word_pairs, texts)
    rng.shuffle(pairs)
    return pairs


def split_intents(questions: list[Question], share: float, salt: str) -> tuple[set[str], set[str]]:
    """Split the intents (not the rows) by a stable hash: ``(kept, held_out)``."""
    kept, held = set(), set()
    for intent in sorted({q.intent for q in questions}):
        h = int(hashlib.sha256(f"{salt}:{intent}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        (held if h < share else kept).add(intent)
    return kept, held
