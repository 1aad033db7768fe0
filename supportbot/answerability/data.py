"""The answerability data: which questions of the knowledge base folder are answerable (with their
articles) and which are not, and which of them are held out from training.

Held out, never trained or calibrated on (``held_out``): the German holdout files, the ``test`` split of
``retrieval_questions.jsonl``, the questions of ``questions.jsonl`` whose article falls in fold 0 of 3
(a hash of tenant, locale and article: whole articles are held out), the ``holdout`` classes of
``unanswerable.jsonl`` and CLINC150's ``oos_test`` queries. ``bench.answerability`` reports on these.
"""
from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

ANSWERABLE_FILES = ("questions.jsonl", "retrieval_questions.jsonl", "questions_de_dev.jsonl", "questions_de_train.jsonl",
                    "questions_facts_dev.jsonl", "questions_de_holdout.jsonl", "questions_de_holdout2.jsonl",
                    "questions_facts_holdout.jsonl", "questions_de_holdout3.jsonl",
                    "questions_de_holdout4.jsonl")
# The unanswerable questions we wrote: the first file over every demo tenant and locale, the second more
# German ones (the German help centre had too few to calibrate on), the third a held-out set written before the
# lexical subject check (``retrieval.subject``) existed, the fourth one written before the German
# calibration was reworked (never tuned on), the fifth a fresh one written before the next round of German
# changes (never tuned on), the sixth development probes of the classes a held-out set still found answered
# (the company itself, an app on a device no article names, a city as a support base, a named device brand in
# German; all ``dev``); a question's ``split`` says which are held out.
UNANSWERABLE_FILES = ("unanswerable.jsonl", "unanswerable_de.jsonl", "unanswerable_holdout2.jsonl",
                      "unanswerable_holdout3.jsonl", "unanswerable_holdout4.jsonl", "unanswerable_dev2.jsonl")
CLINC = Path(settings.BASE_DIR) / "data" / "clinc150" / "data_full.json.gz"
ARTICLE_FOLDS = 3


@dataclass(frozen=True)
class Question:
    tenant: str
    locale: str
    question: str
    answerable: bool
    articles: tuple[str, ...]  # the articles that answer it (answerable questions)
    source: str  # file name, or "clinc150"
    kind: str  # answerable: the file's kind; unanswerable: its class ("oos" for CLINC150)
    held_out: bool


def article_fold(tenant: str, locale: str, article: str) -> int:
    return zlib.crc32(f"{tenant}/{locale}/{article}".encode()) % ARTICLE_FOLDS


def kb_questions(root: Path) -> list[Question]:
    out = []
    for name in ANSWERABLE_FILES:
        path = root / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            articles = tuple(q.get("articles") or ([q["article"]] if q.get("article") else []))
            kind = q.get("kind") or ",".join(q.get("kinds", []))
            if not articles:  # an off-topic question of the retrieval set
                out.append(Question(q["tenant"], q["locale"], q["question"], False, (), name, "off_topic",
                                    q.get("split") == "test"))
                continue
            held = ("holdout" in name or q.get("split") == "test"
                    or (name == "questions.jsonl" and article_fold(q["tenant"], q["locale"], articles[0]) == 0))
            out.append(Question(q["tenant"], q["locale"], q["question"], True, articles, name, kind, held))
    for name in UNANSWERABLE_FILES:
        path = root / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                q = json.loads(line)
                out.append(Question(q["tenant"], q["locale"], q["question"], False, (), name, q["class"],
                                    q["split"] != "dev"))
    held = {q.question for q in out if q.held_out}  # a question in two files (or of two tenants) is held out in both
    return [replace(q, held_out=True) if q.question in held and not q.held_out else q for q in out]


def clinc_oos(scopes: list[tuple[str, str]], *, train_limit: int | None = None,
              test_limit: int | None = None, root: Path | None = None) -> list[Question]:
    """CLINC150's out-of-scope queries asked of each (tenant, locale): ``oos_train`` and ``oos_val``
    for training, ``oos_test`` held out.

    CLINC150 calls them out of scope for its own assistant (banking, travel, small talk), not for a shop's
    help centre: "how long do I have to wait to get my refund" is one of them. ``root``'s
    ``clinc_oos_scope.jsonl`` labels the first 200 ``oos_test`` queries per demo tenant (labelled blind to
    the system, from the articles alone); a query labelled as answered by an article the (tenant, locale)
    has comes back answerable, of kind ``in_scope``, with that article."""
    data = json.loads(gzip.decompress(CLINC.read_bytes()))
    train = [t for t, _ in data["oos_train"] + data["oos_val"]][:train_limit]
    test = [t for t, _ in data["oos_test"]][:test_limit]
    labels = scope_labels(root) if root is not None else {}

    def question(tenant: str, locale: str, text: str, held: bool) -> Question:
        article = labels.get(text, {}).get(tenant) if held else None
        if article and (root / tenant / locale / f"{article}.md").exists():
            return Question(tenant, locale, text, True, (article,), "clinc150", "in_scope", held)
        return Question(tenant, locale, text, False, (), "clinc150", "oos", held)

    return [question(tenant, locale, text, held)
            for tenant, locale in scopes for texts, held in ((train, False), (test, True)) for text in texts]


def scope_labels(root: Path) -> dict[str, dict[str, str]]:
    """Per CLINC150 ``oos_test`` query, the demo tenants whose help centre answers it, with the article."""
    path = root / "clinc_oos_scope.jsonl"
    if not path.exists():
        return {}
    return {row["query"]: row["in_scope"] for row in map(json.loads, path.read_text().splitlines()) if row}
