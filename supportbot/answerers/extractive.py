"""The extractive answerer: the help centre's own words, never a model's.

The retrieved passages are cut into units: the sentences of their paragraphs, their list
items and their table rows. Each unit is embedded with its section ("United Kingdom:
Standard (4-7 business days): ...") by the query embedder, through the embedding cache, so
a unit is computed once per model and then read back. The units most similar to the
question are kept: the best one, and the others within ``MARGIN`` of it, while they fit the
length budget. They are shown in document order, grouped by article (the most relevant
article first), each group ending with its citation marker, and streamed a line at a time.
With no unit at least ``ASK_EXTRACT_MIN_SIMILARITY`` similar to the question, the passages
do not answer it and the answer is "not covered".

Nothing here can state a fact the help centre does not: the answer is quoted text of the
tenant's own articles in the asked locale (retrieval filters both).
"""
from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from caching.answer_checks import asked as asking
from caching.answer_checks import text as words
from caching.answer_checks.counted import counted_thing, counts
from caching.answer_checks.facts import measured_kinds, quantities
from caching.answer_checks.places import foreign_countries_said
from caching.answer_checks.text import split_sentences, terms
from caching.keys import digest
from generation.base import GenerationResult, Passage
from retrieval.subject import EQUIVALENTS
from supportbot.answerers.base import Answer, AnswerRequest, Answerer, AnswererSpec
from supportbot.conversation import NAMING_NOTHING, TOPIC_MARK, quoted_labels

MARGIN = 0.15  # a unit this much less similar than the best one still answers the question
MAX_UNITS = 6
# Weight of the question's words found in a unit (or its section), rarer words weighing more: the
# embedding model is English, and "Kanada" in a German question must find the sentence naming it.
LEXICAL_WEIGHT = 0.3
# a follow-up's own words that its conversation did not say, again: what it asks about ("by text" after the email link)
FOLLOW_UP_WEIGHT = 0.2
_NAMING_NOTHING = frozenset(terms(" ".join(sorted(NAMING_NOTHING))))
# the words of the sentence that asks, after sentences that tell the customer's case, again
ASKED_WEIGHT = 0.15
# a follow-up's own words a unit must share to lead before one that shares none (``_fact_units``)
MIN_NEW_SHARED = 2


def _asked_words(question: str) -> frozenset[str]:
    """The words of a question's last asking sentence that its sentences before it do not say; empty for a question of
    one sentence (its words all weigh already) or a rewrite carrying its conversation's words."""
    if TOPIC_MARK in question:
        return frozenset()
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", " ".join(question.split())) if x]  # lower case typed too
    asking_at = max((i for i, x in enumerate(sentences) if x.rstrip().endswith("?")), default=None)
    if not asking_at:
        return frozenset()
    told = set().union(*(terms(x) for x in sentences[:asking_at]))
    return frozenset(asking.focus_terms(sentences[asking_at], cases=False) - told - _NAMING_NOTHING)
# A unit stating the kind of fact the question wants (a duration for "how long", an amount for "how
# much") gains KIND_WEIGHT; one labelled with the asked case (country, plan, product) gains CASE_WEIGHT,
# one labelled only with other cases of that family, or stating the own figure of a plan or product
# line the question does not name ("Premier: $19 per month" for the Pro plan), loses it.
KIND_WEIGHT = 0.1
CASE_WEIGHT = 0.1
# A figure with the question's words around it ("Plus costs $49" for "How much does Plus cost?") is
# what the question asks about; one beside other words ("a surcharge of $14.95, which also applies to
# Plus members") is a neighbour's: the share of the question's words near a figure, times this.
PROXIMITY_WEIGHT = 0.2
TRIGGER_WEIGHT = 0.1  # the question's own word for the kind ("costs", "kostet") beside the figure
# A figure counting the thing a count question counts ("up to 20 wishlists" for "How many wishlists can I
# have?"), not another thing beside the question's word ("on the wishlist, ... up to a maximum of 10").
COUNTED_WEIGHT = 0.15
# An article states its main rule first ("comes with a 2-year limited warranty"); a numbered step of a
# procedure states a deadline within it ("drop the parcel off within 7 days"), seldom the rule asked for.
INTRO_WEIGHT = 0.1
STEP_WEIGHT = 0.15
# An article whose title holds the question's words ("Acme Plus membership" for "How much does Acme Plus
# cost?") is about what the question asks; another article's unit is at best a neighbour's.
TITLE_WEIGHT = 0.15
# For a fact question, the share of a unit's similarity taken with its section's name before it
# ("How to start a return: Pack the items ...") rather than of the unit alone: a section's name
# says what the section is about, not which of its sentences holds the asked figure.
SECTION_SHARE = 0.0
# A fact question's answer: the leading unit is the best unit stating the fact for the case, if it is
# within LEAD_MARGIN of the best unit at all; at most FACT_MAX_UNITS units, within FACT_MARGIN of it.
LEAD_MARGIN = 0.3
FACT_MARGIN = 0.08
FACT_MAX_UNITS = 3
# A unit of an article about a plan the question does not name sets the lead's bar only when no unit of another
# article states the asked kind for the case within FOREIGN_MARGIN of it.
FOREIGN_MARGIN = 0.45
# One more unit stating a figure of the asked kind, of the asked case or of none, may follow the lead
# within this margin (the passages often say the rule twice, once in passing): never a third.
SECOND_FIGURE_MARGIN = 0.25
# A duration stated for the event the question asks the length of ("We email the PDF and XML files within 72
# hours" for "how long until I get it?") gains EVENT_WEIGHT, even as a numbered step of a procedure.
EVENT_WEIGHT = 0.15
# A sentence that says what the article is about ("This article explains what can be returned ...", "In diesem Artikel
# erfahren Sie, ... was Reparaturen nach Ablauf der Garantie kosten") holds the question's words but states no
# rule: for a question that asks for a fact or a yes or no, it loses ABOUT_ARTICLE_WEIGHT.
ABOUT_ARTICLE_WEIGHT = 0.2
# A unit that has a label the question quotes gains LABEL_WEIGHT.
LABEL_WEIGHT = 0.2
ABOUT_ARTICLE = re.compile(
    r"^(?:this article (?:explains|covers|describes|tells you|shows)|this page (?:explains|covers)|below(?:,)? you'll "
    r"find|here(?:'s| is) what happens|in (?:diesem|dem folgenden) artikel (?:erfahren|lesen|finden) sie|hier erfahren "
    r"sie|im folgenden erfahren sie|unten finden sie)\b", re.I)
# A question for a minimum ("the least I can spend to pay by bank transfer"): a unit stating an amount as an inclusive
# lower bound ("$250 or more", "from $150") gains MINIMUM_WEIGHT.
MINIMUM_WEIGHT = 0.15
# A question for a name (which carrier, which app): a unit naming one, or under a section that does ("Carriers and
# tracking numbers"), gains NAME_WEIGHT.
NAME_WEIGHT = 0.15
# A question for a time of day on one day of the week ("close on a normal wednesday"): a unit stating hours for that
# day (by name, a range holding it, every day) gains DAY_WEIGHT, as a case it is labelled with does; a holiday's
# hours state none (admission's ``covers_day`` refuses an answer of other days' hours).
DAY_WEIGHT = 0.1
MODEL_NAME = "extractive"

_ITEM = re.compile(r"^\s*(?:[-*+•]|(\d{1,3})[.)])\s+(.*)$")
_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_RULE_ROW = re.compile(r"^[\s|:-]+$")
_MARKUP = ((re.compile(r"\*\*|__|`"), ""), (re.compile(r"\[([^\]]+)\]\((?:[^)]+)\)"), r"\1"),
           (re.compile(r"[ \t]+"), " "))


@dataclass(frozen=True)
class Unit:
    kind: str  # "sentence" | "item" | "row"
    text: str  # as shown: markup removed
    position: int  # order within the passage
    marker: str = ""  # "1." for a numbered list item, "" otherwise
    paragraph: int = 0  # sentences of one paragraph share a number


def clean_markup(text: str) -> str:
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text.strip()


@functools.lru_cache(maxsize=4096)
def split_units(text: str) -> tuple[Unit, ...]:
    """A passage's units in document order: sentences of paragraphs, list items, table rows."""
    units: list[Unit] = []
    paragraph: list[str] = []
    header: list[str] | None = None
    para_no = 0

    def flush() -> None:
        nonlocal para_no
        if paragraph:
            para_no += 1
            for sentence in split_sentences(clean_markup(" ".join(paragraph))):
                units.append(Unit("sentence", sentence, len(units), paragraph=para_no))
            paragraph.clear()

    for line in text.split("\n"):
        row = _ROW.match(line)
        item = _ITEM.match(line)
        if not line.strip():
            flush()
            header = None
        elif row:
            flush()
            cells = [clean_markup(c) for c in row.group(1).split("|")]
            if _RULE_ROW.match(line):
                continue
            if header is None:
                header = cells
                continue
            shown = " · ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c)
            units.append(Unit("row", shown, len(units)))
        elif item:
            flush()
            units.append(Unit("item", clean_markup(item.group(2)), len(units),
                              marker=f"{item.group(1)}." if item.group(1) else ""))
        elif units and units[-1].kind == "item" and line.startswith((" ", "\t")) and not paragraph:
            last = units[-1]  # an item's continuation line
            units[-1] = Unit("item", clean_markup(f"{last.text} {line}"), last.position, last.marker)
        else:
            paragraph.append(line.strip())
    flush()
    return tuple(units)


def section_of(passage: Passage) -> str:
    """The passage's section heading ("United Kingdom"), or its article's title."""
    return passage.heading.split(" — ")[-1].strip() if passage.heading else passage.title


@dataclass(frozen=True)
class Candidate:
    passage: Passage
    unit: Unit
    score: float
    fit: int = 0  # to the asked case: 1 labelled with it, -1 only with other cases, 0 neither
    states: bool = False  # states a fact of the asked kind
    about: bool = True  # its text, section or article holds a word of what the question asks about
    foreign_title: bool = False  # its article is about one plan ("Acme Plus membership") the question does not name
    event: bool = False  # states a duration of the event the question asks the length of
    named: bool | None = None  # a list item headed by a label: whether the question names it (``head_named``)


class ExtractiveAnswerer(Answerer):
    name = "extractive"

    def spec(self) -> AnswererSpec:
        params = {"max_chars": settings.ASK_EXTRACT_MAX_CHARS, "min_similarity": settings.ASK_EXTRACT_MIN_SIMILARITY,
                  "margin": MARGIN, "max_units": MAX_UNITS, "fact_margin": FACT_MARGIN, "fact_max_units": FACT_MAX_UNITS}
        return AnswererSpec(model=MODEL_NAME, model_revision="", prompt_version=RULES_VERSION, params=params)

    def stream(self, request: AnswerRequest) -> Iterator[str | Answer]:
        started = time.perf_counter()
        chosen = self.select(request)
        if not chosen:
            yield Answer(text="", result=self._result("", started), not_covered=True,
                         reason="no sentence of the passages answers the question")
            return
        lines, cited = [], []
        country = asked_of(request).cases.get("country")
        for passage, units in chosen:
            if passage.article_id not in [p.article_id for p in cited]:
                cited.append(passage)
            number = [p.article_id for p in cited].index(passage.article_id) + 1
            lines.extend(askers_bracketed_item(asked_currency(line, country), country)
                         for line in render(passage, units, number))
        pieces = []
        for i, line in enumerate(lines):
            piece = ("\n" if i else "") + line
            pieces.append(piece)
            yield piece
        text = "".join(pieces)
        yield Answer(text=text, citations=[p for p, _ in chosen], result=self._result(text, started),
                     cited_explicitly=True)

    def select(self, request: AnswerRequest) -> list[tuple[Passage, list[Unit]]]:
        """The chosen units, grouped by passage: the leading unit's article first, then by relevance. A question
        that asks two or three things ("How long is the link valid, and how long must the password be?":
        ``asking.asks_of``) gets each ask's units, the first ask's first, within a budget of each ask's size."""
        told, asks = asking.asks_of(request.question)
        if not asks:
            wanted = asked_of(request)
            kept = self._kept(request, wanted)
            return group(kept, lead_first=wanted.wants_fact or wanted.kind == "yesno") if kept else []
        cases = asked_of(request).cases  # the case the customer told, for every ask
        kept, used, budget = [], 0, settings.ASK_EXTRACT_MAX_CHARS * len(asks)
        for ask in asks:
            one = dataclasses.replace(request, question=f"{told} {ask}".strip(), question_vector=None)
            own = ask.split(TOPIC_MARK, 1)[0]
            wanted = asking.Asked(kind=asking.ask_kind(ask), cases={**cases, **asking.asked_cases(own)})
            for i, c in enumerate(self._kept(one, wanted)):
                size = len(c.unit.text) + 4
                if any(k.unit == c.unit and k.passage.chunk_id == c.passage.chunk_id for k in kept) or (
                        i and used + size > budget):  # (the same text: another ask may quote another clause of a unit)
                    continue  # said already for an earlier ask; or past the budget (each ask's lead is said)
                kept.append(c)
                used += size
        return group(kept, lead_first=True) if kept else []

    def _kept(self, request: AnswerRequest, wanted: asking.Asked) -> list[Candidate]:
        """The units that answer one ask, best first (the lead first): [] when no unit is similar enough."""
        candidates = [(p, u) for p in request.passages for u in split_units(p.text)]
        if not candidates:
            return []
        embed = request.embed
        question = request.question_vector if request.question_vector is not None else embed([request.question])[0]
        vectors = embed([f"{section_of(p)}: {u.text}" for p, u in candidates])
        scores = vectors @ np.asarray(question, dtype=np.float32)
        texts = [f"{section_of(p)} {u.text}" for p, u in candidates]
        stated = set().union(*map(terms, texts))  # a word no unit has tells none apart
        scores = scores + LEXICAL_WEIGHT * lexical_overlap("", texts, wanted=said_as_the_articles_say(request.question,
                                                                                                      stated))
        abroad = terms(" ".join(foreign_countries_said(request.question))) & stated
        if abroad:  # a town abroad is asked of its country, which an article names ("nach Zürich": "nicht in die Schweiz")
            scores = scores + ASKED_WEIGHT * lexical_overlap("", texts, wanted=abroad)
        if TOPIC_MARK in request.question and wanted.kind:
            # a follow-up asking for a fact asks it of its own words that the conversation did not say ("I'd rather
            # get it by text. How long does that last?"): a unit that has them gains again
            message, said = request.question.split(TOPIC_MARK, 1)
            new = (asking.focus_terms(message, cases=False) - terms(said) - _NAMING_NOTHING) & stated  # not "how much extra?"
            if new:
                scores = scores + FOLLOW_UP_WEIGHT * lexical_overlap("", texts, wanted=new)
        else:
            new = frozenset()
        asked = _asked_words(request.question) & stated
        if asked and wanted.wants_fact:
            # a question that tells its case first ("got the email that my data export is ready but I'm travelling.")
            # asks its fact of the words it asks with ("how many days is the download link good for?")
            scores = scores + ASKED_WEIGHT * lexical_overlap("", texts, wanted=asked)
        if float(scores.max()) < settings.ASK_EXTRACT_MIN_SIMILARITY:
            return []
        if wanted.wants_fact and SECTION_SHARE < 1.0:  # the fact is in the unit, not in its section's name
            alone = embed([u.text for _, u in candidates]) @ np.asarray(question, dtype=np.float32)
            scores = scores - (1.0 - SECTION_SHARE) * (vectors @ np.asarray(question, dtype=np.float32) - alone)
        focus, triggers = asking.focus_terms(request.question), frozenset(asking.trigger_terms(request.question))
        # What the fact is about, as admission's completeness check reads it: the question's words, not the
        # words asking for the kind, not the asked case's name, not the company's.
        about = frozenset(asking.about_terms(request.question, wanted.kind) - terms(request.tenant_prompt.name))
        ranked = sorted((self._weigh(wanted, focus, p, u, float(s), triggers, about, request.question,
                                     request.tenant_prompt.name)
                         for (p, u), s in zip(candidates, scores)), key=lambda c: -c.score)
        if wanted.wants_fact or wanted.kind == "yesno":
            kept = self._fact_units(wanted, ranked, focus, new)
            if wanted.wants_fact and kept[0].states:
                kept[0] = dataclasses.replace(
                    kept[0], unit=askers_figure(wanted, pertinent_part(wanted.kind, focus, kept[0].unit, wanted.cases)))
            elif wanted.kind == "yesno" and wanted.cases:
                # "do you keep my invoices? I'm in Germany": of a rule listing each country's figure, Germany's
                kept[0] = dataclasses.replace(kept[0], unit=next(
                    (u for kind in ("duration", "amount")
                     if (u := askers_figure(dataclasses.replace(wanted, kind=kind), kept[0].unit)) != kept[0].unit),
                    kept[0].unit))
        else:
            kept = self._similar_units(ranked)
        # of a list with an item headed by what the question names ("PayPal: 1–2 Werktage"), not the items headed
        # by what it does not name ("Kredit- oder Debitkarte (…): 5–7 Werktage")
        lists = {(c.passage.chunk_id, lead_in(c.passage, c.unit)) for c in kept if c.named}
        kept = [c for c in kept
                if c.named is not False or (c.passage.chunk_id, lead_in(c.passage, c.unit)) not in lists]
        for c in list(kept):  # a sentence that introduces a list ("... can't be returned:") brings the list
            if c.unit.text.endswith(":"):
                used = sum(len(k.unit.text) + 4 for k in kept)
                items = list_after(c.passage, c.unit)
                named = [head_named(u, focus) for u in items]
                for u, is_named in zip(items, named):
                    item = self._weigh(wanted, focus, c.passage, u, c.score)
                    if item.fit < 0 or (wanted.wants_fact and wanted.cases and item.states and item.fit == 0):
                        continue  # another case's figure
                    if is_named is False and any(named):
                        continue  # an item headed by what the question does not name, beside one it names
                    if used + len(u.text) + 4 <= settings.ASK_EXTRACT_MAX_CHARS and all(k.unit != u for k in kept):
                        kept.append(item)
                        used += len(u.text) + 4
        for c in list(kept):  # a sentence that points back ("This window is the same for everyone") brings the one it
            if c.unit.kind == "sentence" and POINTS_BACK.match(c.unit.text):  # points at, when that is not quoted
                before = next((u for u in split_units(c.passage.text) if u.kind == "sentence"
                               and u.paragraph == c.unit.paragraph and u.position == c.unit.position - 1), None)
                if before and not quoted(kept, c.passage, before):
                    kept.append(self._weigh(wanted, focus, c.passage, before, c.score))
        return kept

    @staticmethod
    def _weigh(wanted: asking.Asked, focus: set[str], passage: Passage, unit: Unit, score: float,
               triggers: frozenset[str] = frozenset(), about: frozenset[str] = frozenset(), question: str = "",
               company: str = "") -> Candidate:
        labels = asking.labels_of(f"{lead_in(passage, unit)}\n{unit.text}", section_of(passage), passage.title,
                                  with_currency=wanted.kind in ("amount", "contact"))
        fit = asking.case_fit(wanted.cases, labels)
        if fit < 0 and _ASIDE.search(unit.text) and asking.case_fit(wanted.cases, asking.labels_of(
                f"{lead_in(passage, unit)}\n{_ASIDE.sub(' ', unit.text)}", section_of(passage), passage.title,
                with_currency=wanted.kind in ("amount", "contact"))) == 0:
            fit = 0  # the general rule, with other cases' own in brackets: "within 7 days of delivery (Pro and Premier:
            #          14 days)" is the Free plan's too
        if fit < 0 and wanted.wants_fact and _general_first(wanted, passage, unit):
            fit = 0  # the general rule, then another case's exception: "The surcharge is $14.99. Premier members get
            #          Saturday delivery free on up to 2 Express orders" answers a Pro member with its first sentence
        if wanted.kind == "yesno" and fit < 0 and EXCLUSIVE.search(unit.text):
            fit = 1  # "Usable in the US store only" answers "Can I use it in the Mexico store?" for Mexico too
        states = wanted.wants_fact and wanted.kind in asking.kinds_in(unit.text) and not (
            wanted.kind == "duration" and another_things_duration(question, unit.text))
        # an amount or a length of time said only in words ("at no extra cost" of standard orders, "answered straight
        # away" by the assistant) leads only where no unit states it as a figure: "What does Saturday delivery cost?"
        # wants "The surcharge is $14.99". ("Is it free?" asks yes or no, which no figure answers.) Words the question
        # says itself are its condition: "Ab welchem Bestellwert ist der Versand kostenlos?" wants the order value
        states = states and asking.figure_stated(wanted.kind, unit.text)
        if states and fit >= 0:
            fit = min(fit, asking.special_fit(wanted, unit.text), context_fit(wanted, passage, unit))
        # the asked event named in another word than the question's ("email" for "get"): the literal word
        # already counts in the lexical and proximity weights
        event_words, unit_words = asking.asked_event(question), terms(unit.text)
        event = (states and wanted.kind == "duration" and asking.same_event(event_words, unit_words)
                 and not event_words & unit_words)
        # the customer's own action whose deadline is asked ("abgeben": "geben Sie das Paket innerhalb von 7 Tagen ab")
        action = asking.asked_action(question) if states and wanted.kind == "duration" else ""
        stating = [s for s in words.sentences_of(unit.text) if "duration" in asking.kinds_in(s)] if action else []
        # a step's deadline is its own verb's ("drop the parcel off within 7 days"); a rule's may follow its figure
        # ("You have 30 days ... to start a return")
        acted = any(asking.holds_action(action, s, before_figure=is_step(unit)) for s in stating)
        event = event or acted
        score += KIND_WEIGHT * states + CASE_WEIGHT * fit + EVENT_WEIGHT * event
        if wanted.kind == "yesno" and all(case in labels.get(family, ()) for family, case in wanted.cases.items()
                                          if family in asking.NAMED_FAMILIES):
            # whether a rule holds after the customer's time or for their amount: the rule's own figure decides (of a
            # product or condition with a rule of its own, that rule's: not Plus's 60 days for a refurbished watch)
            score += KIND_WEIGHT * bool(measured_kinds(question.split(TOPIC_MARK, 1)[0]) & asking.kinds_in(unit.text))
        # a unit labelled with every asked case beats one labelled with some: a Plus member asking about sale items
        # wants "Items bought ... during a sale ... (Plus members: 30 days)", not the standard window's Plus figure
        score += CASE_WEIGHT * max(0, sum(case in labels.get(family, ()) for family, case in wanted.cases.items()) - 1)
        if states and wanted.kind == "clock":
            day = asking.asked_day(question)
            score += DAY_WEIGHT * (day is not None and asking.covers_day(day, f"{lead_in(passage, unit)}\n{unit.text}"))
        if states and wanted.kind == "count":  # "up to 20 wishlists" for "How many wishlists ...?"
            thing = counted_thing(question)
            score += COUNTED_WEIGHT * bool(thing and counts(thing, unit.text))
        # a minimum asked for: an amount stated as one ("for orders of $250 or more"), not one a rule starts above
        score += MINIMUM_WEIGHT * (states and wanted.kind == "amount" and asking.asks_minimum(question)
                                   and asking.states_minimum(unit.text))
        if states:
            score += PROXIMITY_WEIGHT * asking.proximity(focus - words_of_title(passage), wanted.kind, unit.text)
            score += TRIGGER_WEIGHT * asking.proximity(triggers, wanted.kind, unit.text)
            score += INTRO_WEIGHT * (" — " not in passage.heading)
        if wanted.wants_fact:
            score += TITLE_WEIGHT * len(focus & words_of_title(passage)) / max(1, len(focus))
        if wanted.kind == "name":  # a unit that names what is asked for: a carrier, an app
            head = asking.name_head(question)
            score += NAME_WEIGHT * bool(head and asking.names_head(head, unit.text, f"{passage.heading}\n{lead_in(passage, unit)}",
                                                                  company))
        if wanted.kind is not None:
            score -= ABOUT_ARTICLE_WEIGHT * bool(ABOUT_ARTICLE.match(unit.text))
        # a label of the product's screens the question quotes ("the 'This wasn't me' link") names the very thing:
        # the unit that has it is about it, not the neighbouring step with the same words ("the link is valid ...")
        score += LABEL_WEIGHT * any(label.casefold() in unit.text.casefold() for label in quoted_labels(question))
        named = head_named(unit, focus)
        if wanted.kind is not None:  # unless the step is the asked event ("4. ... repairs the product within 10 days")
            score -= STEP_WEIGHT * (is_step(unit) and not (event or states and asking.asked_event(question) & terms(unit.text)))
            score -= STEP_WEIGHT * (is_step(unit) and bool(action) and not acted)  # another step's deadline
        on_about = not about or asking.same_event(about, terms(f"{passage.title}\n{passage.heading}\n{lead_in(passage, unit)}\n{unit.text}"))
        foreign_title = asking.foreign_plan(wanted, question, passage.title, company)
        return Candidate(passage, unit, score, fit, states, on_about, foreign_title, event, named)

    @staticmethod
    def _similar_units(ranked: list[Candidate]) -> list[Candidate]:
        """The best unit and the others within MARGIN of it, while they fit the budget."""
        best = ranked[0].score
        kept: list[Candidate] = []
        used = 0
        for c in ranked:
            if len(kept) >= MAX_UNITS or c.score < best - MARGIN:
                break
            size = len(c.unit.text) + 4
            if kept and used + size > settings.ASK_EXTRACT_MAX_CHARS:
                continue
            kept.append(c)
            used += size
        return kept

    @staticmethod
    def _fact_units(wanted: asking.Asked, ranked: list[Candidate], focus: set[str],
                    new: frozenset[str] = frozenset()) -> list[Candidate]:
        """The unit that states the asked fact for the asked case (a yes/no question: that speaks of
        the asked case), and a little context of its article that states no other figure of the kind.
        ``new``: a rewritten follow-up's own words that its conversation did not say (what it asks about)."""
        # near the best unit that may lead: a special case the question does not name ("Deliveries to Yukon ...
        # take 3–5 business days longer" for Canada) never leads, so it sets no bar for the units that may
        eligible = next((c for c in ranked if c.fit >= 0 and asking.special_fit(wanted, c.unit.text) >= 0),
                        None) if wanted.wants_fact else None
        if eligible is not None and eligible.foreign_title:
            # nor does a plan's figure the customer did not name ("Kostenloser Express-Versand für Bestellungen über
            # 75 €" of Plus, for "Was kostet der Versand nach Deutschland mit Express?"), when a unit of no such
            # article states the asked kind for the case within FOREIGN_MARGIN of it
            eligible = next((c for c in ranked if c.score >= eligible.score - FOREIGN_MARGIN and c.states
                             and c.fit >= 0 and c.about and not c.foreign_title
                             and asking.special_fit(wanted, c.unit.text) >= 0), eligible)
        best = (eligible or ranked[0]).score
        near = [c for c in ranked if c.score >= best - LEAD_MARGIN]
        if wanted.wants_fact:  # else the best unit of no other case: admission finds it incomplete
            # else the best unit of no other case, and of no special case the question does not name ("Deliveries
            # to Yukon ... take 3–5 business days longer" for Canada): admission then finds it incomplete
            # a unit labelled with the asked case that says much less of what is asked than another stating unit
            # ("Pro: free Standard shipping ..." for "I'm on Pro. How much does Saturday delivery cost on an Express
            # order?", beside "The surcharge is $14.99") does not lead for its label alone
            plain = focus - asking.case_terms(" ".join(wanted.cases.values()))
            most = max((_shared(plain, terms(c.unit.text)) for c in near if c.states and c.fit >= 0), default=0)
            labelled_only = {id(c) for c in near if c.fit > 0 and _shared(plain, terms(c.unit.text)) <= min(1, most - 3)}
            lead = next((c for tier in LEAD_TIERS for c in near if c.states and c.fit >= 0 and tier(c)
                         and not (id(c) in labelled_only and tier is LEAD_TIERS[0])), None) or \
                eligible or next((c for c in ranked if c.fit >= 0), ranked[0])
            # an item of a list whose sibling is headed by what the question names: the sibling ("PayPal: 3–5 business
            # days" for "I paid with PayPal", not "Visa, Mastercard, American Express: 7–10 business days")
            if lead.named is False:
                lead = next((c for c in ranked if c.named and c.states and c.fit >= 0 and c.passage is lead.passage
                             and lead_in(c.passage, c.unit) == lead_in(lead.passage, lead.unit)), lead)
            # a follow-up asks its fact of what its own words name ("how long is the link in the email good for?"
            # after an account lock): a near unit stating the kind with two of them leads before one with none
            # ("After 5 failed sign-in attempts, your account is locked for 15 minutes"; twenty-first session). One
            # word is too little: "wait" of "if i just wait, how long till it unlocks?", "after" of "After that, ..."
            if new and lead.states and not _shared(new, terms(lead.unit.text)):
                lead = next((c for c in near if c.states and c.fit >= min(0, lead.fit)
                             and _shared(new, terms(c.unit.text)) >= MIN_NEW_SHARED
                             and asking.special_fit(wanted, c.unit.text) >= 0), lead)
        else:  # yes/no: the best unit, another case's rule too ("Klarna ... in the UK, Germany and Austria")
            lead = ranked[0]
            if any(family in wanted.cases for family in asking.NAMED_FAMILIES):
                # of a product or condition with a rule of its own, the near unit labelled with the most asked cases:
                # "Got an Acme Renewed GPS watch. I'm a Plus member, so I get the 60 days ...?" is answered by the
                # refurbished items' 15 days that "Plus membership does not extend", not by Plus's 60
                lead = max(near, key=lambda c: c.fit)
        kept, used, figures = [lead], len(lead.unit.text) + 4, 0
        lead_names_new = bool(new) and bool(_shared(new, terms(lead.unit.text)))
        for c in ranked:
            if len(kept) >= FACT_MAX_UNITS:
                break
            if c is lead or c.passage.article_id != lead.passage.article_id or c.fit < min(0, lead.fit):
                continue
            if c.unit.text == lead.unit.text:
                continue  # the lead's own sentence again, in another passage of its article (overlapping chunks)
            if ABOUT_ARTICLE.match(c.unit.text):
                continue  # what the article covers is no context of a rule
            if c.states and lead.states and lead.named and (not c.named or (
                    c.passage is lead.passage and lead_in(c.passage, c.unit) == lead_in(lead.passage, lead.unit)
                    and head_share(c.unit, focus) < head_share(lead.unit, focus))):
                continue  # the item the question names leads: no figure of another ("PayPal: ..." without "Visa: ..."),
                #           nor of one it names less ("Apple Pay: ..." without "Pay by Bank (ACH): ...")
            if c.states and lead.states:  # a second figure of the kind
                same_case = lead.fit > 0 and c.fit > 0 and c.passage is lead.passage  # UK Standard, UK Express
                if c.score < lead.score - SECOND_FIGURE_MARGIN:
                    continue
                if not same_case:
                    if figures or (wanted.cases and c.fit <= 0):
                        continue  # a third figure, or an unlabelled one: a neighbour's
                    if focus and not _shared(focus, terms(c.unit.text)):
                        continue  # a figure of nothing the question names: "locked for 15 minutes" for a link's life
                    if lead_names_new and not _shared(new, terms(c.unit.text)):
                        continue  # nor, of a follow-up, of nothing its own words name (only its conversation's)
                    figures += 1
            elif c.states and not (follows(lead, c) and c.fit >= 0 and not lead.states and wanted.wants_fact):
                continue  # the lead states nothing: nor may an unsuitable unit; but the sentence right after it may
                #           state the fact ("... wenden Sie sich an den Kundenservice. Nachdem wir Ihre Identität
                #           geprüft haben, entfernen wir 2FA nach einer Sicherheitswartezeit von 48 Stunden ...")
            elif c.score < lead.score - FACT_MARGIN and not follows(lead, c):
                continue
            size = len(c.unit.text) + 4
            if used + size > settings.ASK_EXTRACT_MAX_CHARS:
                continue
            kept.append(c)
            used += size
        if wanted.kind == "yesno" and wanted.cases:
            # the list item headed by the asked case is its own rule ("Pro: the owner plus 1 member" for "i have the
            # pro plan, can i add both my roommates?"), quoted beside the general sentence that leads
            # (near the best unit, or of the leading unit's own article: "Can I add my sister as well?" on Pro)
            item = next((c for c in ranked if c.unit.kind != "sentence" and c.named and c.fit > 0
                         and (c in near or c.passage.article_id == lead.passage.article_id)
                         and not quoted(kept, c.passage, c.unit)), None)
            if item and used + len(item.unit.text) + 4 <= settings.ASK_EXTRACT_MAX_CHARS:
                kept.append(item)
        return kept

    @staticmethod
    def _result(text: str, started: float) -> GenerationResult:
        elapsed = round((time.perf_counter() - started) * 1000, 2)
        return GenerationResult(text=text, finish_reason="stop", model=MODEL_NAME, prompt_tokens=0,
                                completion_tokens=0, cached_tokens=None, ttft_ms=elapsed, total_ms=elapsed)


# Which unit stating the asked kind leads, among those near the best: first one labelled with the asked case
# whose words are what the question asks about and whose article is no other plan's ("Free Standard shipping"
# in "Acme Plus membership" is no answer to "From what order value is standard shipping free in Germany?"),
# then one stating the length of the asked event ("We email the PDF and XML files within 72 hours" for "how long
# until I get it?", not "you can ask until the 3rd day"), then one of no other case, then one whose article is
# another plan's, then any: a figure about other words
# ("kostenlos" in a sentence about engraving, for "Was kostet der Standardversand?") is admission's to refuse.
LEAD_TIERS = (lambda c: c.fit > 0 and c.about and not c.foreign_title,
              lambda c: c.event and c.about and not c.foreign_title,
              lambda c: c.about and not c.foreign_title,
              lambda c: c.about,
              lambda c: True)


# A sentence whose subject points back at the sentence before it: quoted alone it says nothing.
POINTS_BACK = re.compile(r"^(?:This|That|These|Those|It|Such|They|Dies(?:e[rsmn]?)?|Das|Diese[rsmn]?|Er|Sie|Es)\b(?!\s+is\s+how\b)")


# A unit restricting a rule to other cases ("Usable in the US store only") states it for the asked case too.
EXCLUSIVE = re.compile(r"\b(?:only|exclusively|nur|ausschließlich)\b", re.I)


def asked_of(request: AnswerRequest) -> asking.Asked:
    """What a question asks for; for a rewritten follow-up ("How long does that take? (about: ...)"), the
    kind its own message asks for and the case the customer named: its own, else the one case of a family
    the customer's earlier turns name. The rewrite also carries the assistant's words, which may list every
    country ("... delivers to the United States, Canada, ..."): they are not the asker's case."""
    if TOPIC_MARK not in request.question:
        return asking.asked(request.question)
    message = request.question.split(TOPIC_MARK)[0]
    cases = asking.asked_cases(message)
    said = asking.asked_cases("\n".join(content for role, content in request.history if role == "user"))
    return asking.Asked(kind=asking.kind_of(message) or asking.kind_of(request.question),
                        cases={**said, **cases})


# A sentence or clause of a unit, ending before the next sentence or after a semicolon.
_PART_END = re.compile(r";\s+")
# What a sentence's clauses are all about, named before a colon at its start ("Germany: ...; ...").
_PART_LABEL = re.compile(r"^[^:;.]{1,60}:\s+")


_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ])")


def _general_first(wanted: asking.Asked, passage: Passage, unit: Unit) -> bool:
    """Whether a unit of several sentences states the asked kind first in a sentence that names none of the asked
    families' cases, before a sentence naming another case ("The surcharge is $14.99. Premier members get ... free")."""
    sentences = _SENTENCES.split(unit.text.strip())  # "... is $14.99. Premier ..." (a figure ends the sentence)
    first = next((s for s in sentences if wanted.kind in asking.kinds_in(s)), None)
    return (len(sentences) > 1 and first is not None and asking.figure_stated(wanted.kind, first)
            and asking.case_fit(wanted.cases, asking.labels_of(first, with_currency=wanted.kind in ("amount", "contact")))
            == 0)


def pertinent_part(kind: str, focus: set[str], unit: Unit, cases: dict[str, str] | None = None) -> Unit:
    """The leading unit reduced to the sentence or clause that states the asked fact about what the question
    names, where it holds several facts of the kind about different things: "Card reservations are released by
    your bank within 3–5 business days; PayPal payments are refunded within 1–2 business days" answers how long a
    PayPal refund takes with its second clause only. Unchanged unless one stating part shares strictly more of
    the question's words than every other."""
    parts = []
    for sentence in split_sentences(unit.text):
        first, *rest = [p.strip() for p in _PART_END.split(sentence) if p.strip()] or [""]
        label = _PART_LABEL.match(first)  # "December 24 and December 31: the store ...; US support ..."
        parts += [first] + [f"{label.group(0)}{p}" if label else p for p in rest]
    stating = [p for p in parts if kind in asking.kinds_in(p)]
    if len(stating) < 2:
        return unit
    own = [p for p in stating if asking.case_fit(cases or {}, asking.labels_of(p)) >= 0]
    if len(own) == 1:  # of the general rule and another case's exception, the rule ("The surcharge is $14.99.")
        part = own[0]
    else:
        shared = sorted(((_shared(focus, terms(p)), p) for p in stating), key=lambda sp: -sp[0])
        (best, part), (second, _) = shared[0], shared[1]
        if best == 0 or best == second:
            return unit
    text = part[0].upper() + part[1:]
    text = text if text[-1] in ".!?" else f"{text}."
    return dataclasses.replace(unit, text=text, marker="")


# Where a figure starts: a currency or a digit.
_FIGURE_START = re.compile(r"(?:ca\$|mx\$|us\$|[$€£]|\d)", re.I)
# Where a figure of a list of cases ends: a comma, a bracket, a semicolon, or "and"/"und" before the next figure,
# or before the next case's name and its figure ("20% in the UK, 19% in Germany and 20% in Austria"; "Pro costs
# MX$159 per month and Premier MX$329 per month"); "Germany and Austria" stays one case
_CASE_ITEM_END = re.compile(
    rf"\s*(?:[,;()]|\b(?:and|und|or|oder)\b(?=\s*(?:[A-Z][\w+-]*\s+)?{_FIGURE_START.pattern}))\s*", re.I)
# The families a unit's figures are listed by, case by case: the asker's country, then their plan
_LISTED_FAMILIES = ("country", "plan")


def askers_figure(wanted: asking.Asked, unit: Unit) -> Unit:
    """A unit that lists the asked kind's figure case by case ("The standard rates are 20% in the UK, 19% in
    Germany and 20% in Austria"; "Plus costs $49 per year (CA$65 in Canada, £42 in the UK, €45 in Germany and
    Austria)"; "In the Mexico store, Pro costs MX$159 per month and Premier MX$329 per month") reduced, for a
    question about one of those cases (a country, else a plan), to its words before the first figure and the asked
    case's item, the cut marked: "Plus costs … £42 in the UK.", "In the Mexico store, Pro costs MX$159 per month."
    Each clause (";") on its own; a clause is unchanged unless at least two of its items each state a figure of
    the kind and name a case of the family, and exactly one of them names the asked one."""
    if not wanted.wants_fact:
        return unit
    for family in _LISTED_FAMILIES:
        case = wanted.cases.get(family)
        if not case:
            continue
        clauses = [c for c in _PART_END.split(unit.text) if c.strip()]
        reduced = [_askers_item(wanted.kind, family, case, c) for c in clauses]
        if reduced == clauses:
            continue
        text = "; ".join(r.rstrip(" .") if i < len(reduced) - 1 else r for i, r in enumerate(reduced))
        text = text[0].upper() + text[1:]
        return dataclasses.replace(unit, text=text if text[-1] in ".!?" else f"{text}.", marker="")
    return unit


def _askers_item(kind: str, family: str, case: str, clause: str) -> str:
    """One clause of ``askers_figure``: reduced, or as it is."""
    items, start = [], 0
    for m in list(_CASE_ITEM_END.finditer(clause)) + [None]:
        end = m.start() if m else len(clause)
        if clause[start:end].strip():
            items.append((start, clause[start:end].strip()))
        start = m.end() if m else len(clause)
    labelled = [(a, piece, named) for a, piece in items
                if kind in asking.kinds_in(piece) and (named := asking.all_cases_in(piece).get(family))]
    askers = [(a, piece) for a, piece, named in labelled if case in named]
    if len(labelled) < 2 or len(askers) != 1:
        return clause
    a, piece = askers[0]
    figure = _FIGURE_START.search(clause)
    subject = clause[:figure.start()].rstrip(" (,;:") if figure else ""
    if not subject or a <= figure.start():  # the asked case's item comes first: it holds the subject
        return clause[:a] + piece
    if family == "plan":  # the subject names the first plan ("Pro costs"): the asked plan's item says it all
        return piece
    return f"{subject} … {piece}"


def _shared(focus: set[str], stems: set[str]) -> int:
    """How many of the question's words a text states, a stem the start of another counting ("rat" of "rates",
    "rate")."""
    return sum(any(f == t or (min(len(f), len(t)) >= 3 and (f.startswith(t) or t.startswith(f))) for t in stems)
               for f in focus)


def another_things_duration(question: str, text: str) -> bool:
    """Whether every duration a unit states is another thing's (a warranty's length) or another event's
    (leaving the warehouse), not the asked event's: admission's completeness check reads it so too."""
    stating = [s for s in words.sentences_of(text) if "duration" in asking.kinds_in(s)]
    return bool(question and stating) and all(asking.duration_of_another_thing(question, s) for s in stating)


def quoted(kept: list[Candidate], passage: Passage, unit: Unit) -> bool:
    """Whether a unit of a passage is among the kept ones already, maybe as its pertinent part (``pertinent_part``,
    ``askers_figure`` quote a clause of the unit at its position)."""
    return any(k.passage.chunk_id == passage.chunk_id and k.unit.position == unit.position for k in kept)


def follows(lead: Candidate, c: Candidate) -> bool:
    """Whether a unit is the sentence right after the leading one, in its paragraph: a yes/no answer's
    rule often ends there ("... Pick up in store at checkout. Pickup at our Denver store is free ...")."""
    return (c.passage is lead.passage and c.unit.kind == lead.unit.kind == "sentence"
            and c.unit.paragraph == lead.unit.paragraph and c.unit.position == lead.unit.position + 1)


def is_step(unit: Unit) -> bool:
    return bool(unit.marker) or asking.instruction_verb(unit.text) is not None


@functools.lru_cache(maxsize=1024)
def _title_terms(title: str) -> frozenset[str]:
    return frozenset(words.terms(title))


def words_of_title(passage: Passage) -> frozenset[str]:
    """The content words of a passage's article title: what every unit of it is about."""
    return _title_terms(passage.title)


def context_fit(wanted: asking.Asked, passage: Passage, unit: Unit) -> int:
    """-1 when what a unit's list or paragraph opens with makes it another case's: a list under "Pro
    (everything in Free, plus)", a paragraph opening "Plus members can ask for an advance replacement:
    ..." (its later sentences spell that out); else 1."""
    if unit.kind == "item":
        plan = asking.plan_subject(lead_in(passage, unit))
        return 1 if plan is None or wanted.cases.get("plan") == plan else -1
    if unit.kind != "sentence":
        return 1
    first = next(u for u in split_units(passage.text) if u.kind == "sentence" and u.paragraph == unit.paragraph)
    return asking.special_fit(wanted, first.text) if first != unit and ":" in first.text else 1


_ITEM_HEAD = re.compile(r"^([^:\n]{1,80}?):\s")


_ASIDE = re.compile(r"\([^()]*\)")  # a unit's words in brackets


def head_named(unit: Unit, focus: set[str]) -> bool | None:
    """For a list item headed by a label ("PayPal: 3–5 business days"), whether the question names a word of the
    label (``focus``: its content words); None for a unit without such a head."""
    share = head_share(unit, focus)
    return None if share is None else bool(share)


def head_share(unit: Unit, focus: set[str]) -> int | None:
    """For a list item headed by a label, how many of the label's words the question names ("paid with apple pay":
    two of "Apple Pay", one of "Pay by Bank (ACH)"); None for a unit without such a head."""
    m = _ITEM_HEAD.match(unit.text) if unit.kind == "item" else None
    return len(terms(m.group(1)) & focus) if m else None


def lead_in(passage: Passage, unit: Unit) -> str:
    """For a list item, the sentence that introduces its list ("Pro (everything in Free, plus)"), or ""."""
    if unit.kind != "item":
        return ""
    units = split_units(passage.text)
    for u in reversed(units[:unit.position]):
        if u.kind != "item":
            return u.text if u.kind == "sentence" else ""
    return ""


def list_after(passage: Passage, unit: Unit) -> list[Unit]:
    """The list items right after a unit of a passage."""
    units = split_units(passage.text)
    out = []
    for u in units[unit.position + 1:]:
        if u.kind != "item":
            break
        out.append(u)
    return out


@functools.lru_cache(maxsize=1)
def _equivalent_groups() -> tuple[frozenset[str], ...]:
    return tuple(frozenset(terms(group)) for groups in EQUIVALENTS.values() for group in groups)


def said_as_the_articles_say(question: str, stated: set[str]) -> set[str]:
    """The question's terms, a word no unit states (``stated``) traded for the words of its ``EQUIVALENTS`` group that
    units do state: "can I still fix that?" for "change", "how long do you hang on to my invoices?" for "keep"."""
    out = terms(question)
    for group in _equivalent_groups():
        unstated = out & group - stated
        if unstated and group & stated:
            out = (out - unstated) | (group & stated)
    return out


def lexical_overlap(question: str, texts: list[str], wanted: set[str] | None = None) -> np.ndarray:
    """Per text, the share of the question's words (or of the terms ``wanted``) it contains, each word weighted by
    its rarity among these texts (inverse document frequency), so a word every unit has counts little."""
    wanted = terms(question) if wanted is None else wanted
    if not wanted or not texts:
        return np.zeros(len(texts), dtype=np.float32)
    sets = [terms(t) for t in texts]
    n = len(texts)
    weight = {w: float(np.log((n + 1) / (1 + sum(w in s for s in sets))) + 1.0) for w in wanted}
    total = sum(weight.values())
    return np.array([sum(weight[w] for w in wanted if w in s) / total for s in sets], dtype=np.float32)


def group(kept: list[Candidate], lead_first: bool = False) -> list[tuple[Passage, list[Unit]]]:
    """Articles in order of their best unit; within one, passages and units in document order
    (``lead_first``: the first kept unit's passage leads, and the unit itself when it is a sentence)."""
    article_rank: dict[str, int] = {}
    for c in kept:  # kept is best first
        article_rank.setdefault(c.passage.article_id, len(article_rank))
    by_passage: dict[int, tuple[Passage, list[Unit]]] = {}
    for c in kept:
        by_passage.setdefault(c.passage.chunk_id, (c.passage, []))[1].append(c.unit)
    lead = kept[0] if lead_first and kept else None

    def passage_order(pu):
        return article_rank[pu[0].article_id], lead is None or pu[0].chunk_id != lead.passage.chunk_id, pu[0].chunk_id

    def unit_order(u: Unit):  # the lead first, unless it is one item of a list quoted in its order or points back
        return lead is None or u != lead.unit or u.kind != "sentence" or bool(POINTS_BACK.match(u.text)), u.position

    ordered = sorted(by_passage.values(), key=passage_order)
    return [(p, sorted(units, key=unit_order)) for p, units in ordered]


def render(passage: Passage, units: list[Unit], number: int) -> list[str]:
    """Lines of one passage's quoted units: list items and rows under their section's name (and any
    unit under it when the section names a case its units do not: "United Kingdom"), the sentences
    of a paragraph together, the citation marker at the end."""
    lines: list[str] = []
    section = section_of(passage)
    if passage.heading and " — " in passage.heading and (
            any(u.kind != "sentence" for u in units) or
            asking.all_cases_in(section).keys() - asking.all_cases_in(" ".join(u.text for u in units)).keys()):
        lines.append(f"{section}:")
    last_paragraph = None
    for u in units:
        if u.kind == "sentence" and lines and last_paragraph == u.paragraph and not lines[-1].endswith(":"):
            lines[-1] += " " + u.text
        elif u.kind == "sentence":
            lines.append(u.text)
        else:
            lines.append(f"{u.marker or '•'} {u.text}")
        last_paragraph = u.paragraph if u.kind == "sentence" else None
    lines[-1] += f" [{number}]"
    return lines


# One amount in each country's currency, with no country named: "$5.95 (CA$7.95, £4.95 or €5.95)", "The return label
# fee ($5.95, CA$7.95, £4.95 or €5.95)", "5,95 € (5,95 $, 7,95 CA$ bzw. 4,95 £)".
_AMOUNT = r"(?:(?:ca\$|mx\$|us\$|[$€£])\s?\d+(?:[.,]\d+)*|\d+(?:[.,]\d+)*\s?(?:ca\$|mx\$|us\$|[$€£]))"
_AMOUNT_SEP = r"(?:\s*,\s*|\s+(?:or|oder|bzw\.|and|und)\s+)"
CURRENCY_ALTERNATIVES = re.compile(
    rf"(?:(?P<lead>{_AMOUNT})(?P<bound>\s+(?:or more|or above|oder mehr))?\s*)?"
    rf"\((?P<alternatives>{_AMOUNT}(?:{_AMOUNT_SEP}{_AMOUNT})+)\)", re.I)


def asked_currency(line: str, country: str | None) -> str:
    """For a question about one country, a line's list of one amount in every country's currency reduced to that
    country's amount ("How much is the return label fee in Canada?": "$5.95 (CA$7.95, £4.95 or €5.95)" ->
    "CA$7.95"), so no other country's figure stands beside it unlabelled; unchanged when the list does not hold the
    country's currency once, or without a country."""
    if not country:
        return line

    def one(m: re.Match) -> str:
        amounts = ([m.group("lead")] if m.group("lead") else []) + re.findall(_AMOUNT, m.group("alternatives"), re.I)
        currencies = [next(iter(quantities(a)[2]), ("", ""))[0] for a in amounts]
        if len(set(currencies)) != len(currencies):
            return m.group(0)  # a range or several amounts of one currency, not one amount per country
        mine = [a for a, c in zip(amounts, currencies) if country in asking.currency_countries(c)]
        if len(mine) != 1:
            return m.group(0)
        return mine[0] + (m.group("bound") or "") if m.group("lead") else f"({mine[0]})"

    return CURRENCY_ALTERNATIVES.sub(one, line)


# A bracketed list of one thing per country, each item naming its country: "(UPS in the US, Canada Post in Canada, Royal
# Mail in the UK, DHL in Germany and Austria)", "(DHL in Deutschland, Royal Mail in Großbritannien)"
_BRACKETED_LIST = re.compile(r"\((?P<items>[^()]*?\b(?:in|im|für)\b[^()]*?(?:,|;)[^()]*)\)")
_LIST_ITEM_SEP = re.compile(r"\s*[,;]\s*(?:and\s+|or\s+|und\s+|oder\s+)?|"
                            r"\s+(?:and|or|und|oder)\s+(?=\S+\s+(?:in|im)\b)")


def askers_bracketed_item(line: str, country: str | None) -> str:
    """For a question about one country, a bracketed list naming one thing per country reduced to the asker's
    country's item ("Where do I drop the parcel off? I'm in Manchester": "(UPS in the US, Canada Post in Canada, Royal
    Mail in the UK, ...)" -> "(… Royal Mail in the UK)"), so no other country's carrier stands beside it; unchanged
    unless every item names a country, two or more do, and exactly one names the asker's. A list of figures, each
    labelled with its case, is ``askers_figure``'s: that one cuts the leading unit's clause of the asked kind; this one
    cuts any quoted line's bracket of names, which state no figure."""
    if not country:
        return line

    def one(m: re.Match) -> str:
        items = [i for i in _LIST_ITEM_SEP.split(m.group("items")) if i.strip()]
        named = [asking.named_countries(i) for i in items]
        if len(items) < 2 or not all(named):
            return m.group(0)
        mine = [i for i, n in zip(items, named) if country in n]
        return f"(… {mine[0].strip()})" if len(mine) == 1 else m.group(0)

    return _BRACKETED_LIST.sub(one, line)


RULES_VERSION = digest([MARGIN, MAX_UNITS, LEXICAL_WEIGHT, FOLLOW_UP_WEIGHT, POINTS_BACK.pattern, KIND_WEIGHT, CASE_WEIGHT, TITLE_WEIGHT, PROXIMITY_WEIGHT, TRIGGER_WEIGHT,
                        INTRO_WEIGHT, STEP_WEIGHT, SECTION_SHARE, LEAD_MARGIN,
                        FACT_MARGIN, FACT_MAX_UNITS, SECOND_FIGURE_MARGIN, asking.VERSION, words.VERSION, _ITEM.pattern, _ROW.pattern,
                        "section: unit", "lead tiers", "pertinent part", _PART_END.pattern, _PART_LABEL.pattern, LABEL_WEIGHT, "quoted labels", "another thing's duration", "no other case's figure as the fallback", EVENT_WEIGHT, EXCLUSIVE.pattern, "event in another word", CURRENCY_ALTERNATIVES.pattern, ABOUT_ARTICLE.pattern, ABOUT_ARTICLE_WEIGHT,
                        "customer's action", MINIMUM_WEIGHT, NAME_WEIGHT, "near the best that may lead", _CASE_ITEM_END.pattern, "asker's figure", "every asked case",
                        DAY_WEIGHT, _BRACKETED_LIST.pattern, _LIST_ITEM_SEP.pattern,
                        sorted((config, list(groups)) for config, groups in EQUIVALENTS.items()), "v10"])[:16]
