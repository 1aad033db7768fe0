"""The contrast guard (``caching.guards.contrast``): two questions that differ in one word that flips
the answer are never served each other's answer, whatever the judge says; true paraphrases are left
to the judge. Pure code on strings, no database, no model:

    .venv/bin/python -m pytest tests/caching/test_contrast.py -q -p no:django
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from caching import guards  # noqa: E402
from caching.guards.contrast import CONTRAST_KINDS, contrasts  # noqa: E402


def refused_by_contrast(cached: str, new: str, kind: str) -> None:
    """``kind`` found both ways, and the judgement refuses with it before any model is asked (a cosine
    of 0.99: only the guards can refuse)."""
    for a, b in ((cached, new), (new, cached)):
        found = contrasts(a, b)
        assert found and kind in found, (a, b, found)
        j = guards.judge(b, a, 0.99, learned=None)
        assert not j.serve and j.reason.startswith("contrast: "), j.reason
        assert not guards.contender(b, a, 0.99)  # the ambiguity check sees it too


@pytest.mark.parametrize("cached,new", [
    ("How do I enable two-factor authentication?", "How do I disable two-factor authentication?"),
    ("How do I turn on notifications?", "How do I switch off notifications?"),
    ("How do I add a colleague to my workspace?", "How do I remove a colleague from my workspace?"),
    ("How do I import contacts?", "How do I export contacts?"),
    ("What is the first step of the setup?", "What is the last step of the setup?"),
    ("Are pets allowed in the cabin?", "Are pets forbidden in the cabin?"),
    ("Why is the item available?", "Why is the item unavailable?"),
    ("How do I install the desktop app?", "How do I uninstall the desktop app?"),
    ("What is the cheapest plan?", "What is the most expensive plan?"),
    ("Why is the tank shown as full?", "Why is the tank shown as empty?"),
    ("When does the sale start?", "When does the sale end?"),
])
def test_an_opposite_word_is_a_contrast(cached, new):
    refused_by_contrast(cached, new, "opposite")


@pytest.mark.parametrize("cached,new", [
    ("Can I return it within a month?", "Can I return it after a month?"),
    ("Can I cancel the order before shipping?", "Can I cancel the order after shipping?"),
    ("Can I change the date prior to check-in?", "Can I change the date after check-in?"),
    ("Is there a fee for withdrawals over the limit?", "Is there a fee for withdrawals under the limit?"),
    ("What happens if I use more data?", "What happens if I use less data?"),
    ("What is the minimum deposit?", "What is the maximum deposit?"),
    ("How do I move money to PayPal?", "How do I move money from PayPal?"),
    ("Can I use the card inside the EU?", "Can I use the card outside the EU?"),
    ("Are returns accepted within the warranty period?", "Are returns accepted beyond the warranty period?"),
])
def test_an_opposite_relation_to_the_same_thing_is_a_contrast(cached, new):
    refused_by_contrast(cached, new, "relation")


@pytest.mark.parametrize("cached,new", [
    # in lower case: capitalised, two disjoint names are a veto already ("products")
    ("does the app work on android?", "does the app work on ios?"),
    ("can i pay with visa?", "can i pay with amex?"),
    ("Does Apple Pay work with the card?", "Does Google Pay work with the card?"),
    ("Is support available in french?", "Is support available in german?"),
    ("Can I pay in euros?", "Can I pay in dollars?"),
    ("Does the jacket come in red?", "Does the jacket come in blue?"),
    ("do you ship with dhl?", "do you ship with fedex?"),
    ("What time is breakfast served?", "What time is dinner served?"),
    ("Can I link the Zendesk Suite?", "Can I link the Freshdesk Suite?"),  # names, by their capitals
])
def test_a_different_named_thing_of_one_kind_is_a_contrast(cached, new):
    refused_by_contrast(cached, new, "entity")


@pytest.mark.parametrize("cached,new", [
    ("Can I take a loan over thirteen months?", "Can I take a loan over fourteen months?"),
    ("Can I order a third card?", "Can I order a fourth card?"),
    ("Is half the fee refunded?", "Is a quarter of the fee refunded?"),
    ("Can I change my name twice?", "Can I change my name thrice?"),
])
def test_a_different_quantity_word_is_a_contrast(cached, new):
    refused_by_contrast(cached, new, "quantity")


@pytest.mark.parametrize("cached,new", [
    ("Can I log in with a code?", "Can I not log in with a code?"),
    ("Can I return an item with a receipt?", "Can I return an item without a receipt?"),
    ("Can I pay by card?", "Why can't I pay by card?"),
    ("Do you ship within 30 days?", "Do you ship after 30 days?"),
    ("Do you ship domestic orders on weekends?", "Do you ship international orders on weekends?"),
])
def test_polarity_and_compared_quantities_are_the_vetoes_already(cached, new):
    """can / cannot, with / without, a compared quantity, domestic / international: the signature's
    vetoes refuse them first (and they choose the judge's training pairs)."""
    assert guards.veto(cached, new)
    j = guards.judge(new, cached, 0.99, learned=None)
    assert not j.serve and j.reason.startswith("veto: "), j.reason


@pytest.mark.parametrize("cached,new", [
    ("How do I enable two-factor authentication?", "How can I turn on two-factor authentication?"),
    ("My PIN is blocked, what should I do?", "How do I unblock my PIN?"),  # a state and the act that undoes it
    ("Will I be sent a new card before the old one expires?", "Will I receive a new card before the old one expires?"),
    ("How can I receive money from a friend?", "How can a friend send me money?"),
    ("How do I contact support over the phone?", "Can I call support under my company name?"),  # no same object
    ("Can I return an item within the EU?", "Can I return an item in the EU?"),  # "in" is no opposite of "within"
    ("Does PayPal work with the card?", "Does paypal work with the card?"),  # a name in another case
    ("What is your return policy?", "How do I send an item back?"),
    ("How do I Cancel my Subscription?", "How can I Stop my Subscription?"),  # title case: common words, no names
    ("Wait a second, is delivery free?", "Is delivery free?"),  # a moment, no ordinal
    ("What is the 9th step?", "What is the ninth step?"),
    ("Can I add a card to Apple Pay?", "How do I add my card to Apple Pay?"),
    ("Is there a discount on shoes?", "Is there 10% off shoes?"),
])
def test_paraphrases_have_no_contrast(cached, new):
    assert contrasts(cached, new) is None and contrasts(new, cached) is None


def test_the_contrasts_are_no_vetoes_so_the_judges_training_pairs_do_not_change():
    """The judge trains on the pairs the vetoes let through (``modelbuild.judge_train.judge_sees``,
    which calls ``guards.veto``): the contrasts stay out of it (the recipe tripwire in
    ``tests/caching/test_judge.py`` checks the count on the built judge)."""
    pairs = [("Can I return it within a month?", "Can I return it after a month?"),
             ("How do I import contacts?", "How do I export contacts?"),
             ("does the app work on android?", "does the app work on ios?")]
    for a, b in pairs:
        assert contrasts(a, b) and guards.veto(a, b) is None


def test_the_contrasts_read_english_only():
    j = guards.judge("Kann ich es nach einem Monat zurückgeben?", "Kann ich es innerhalb eines Monats zurückgeben?",
                     0.99, locale="de", learned=None)
    assert not j.reason.startswith("contrast: "), j.reason
    j = guards.judge("does the app work on ios?", "does the app work on android?", 0.99, locale="de", learned=None)
    assert not j.reason.startswith("contrast: "), j.reason


def test_every_kind_is_tested():
    assert set(CONTRAST_KINDS) == {"opposite", "relation", "entity", "quantity"}


# The two classes (issue 32), through the whole judgement: a question about the asker's own
# state and a bare request for an action, with a trailing period, never read a general answer even at
# a cosine of 1.0, and never leave one.
@pytest.mark.parametrize("personal,general", [
    ("What plan am I on?", "What plans do you have?"),
    ("Do I have two-factor turned on?", "How do I turn on two-factor?"),
    ("Which currency is my account in?", "Which currencies can an account be in?"),
    ("Am I subscribed to the newsletter?", "How do I subscribe to the newsletter?"),
])
def test_a_state_question_never_shares_an_answer(personal, general):
    e = guards.classify(personal)
    assert not e.eligible and e.category == "personal" and guards.RULES[e.rule] == "hard", e.reason
    for new, cached in ((personal, general), (general, personal), (personal, personal)):
        j = guards.judge(new, cached, 1.0, learned=None, soft_reads=True)
        assert not j.serve and "ineligible" in j.reason, j.reason


@pytest.mark.parametrize("imperative,howto", [
    ("Delete my account.", "How do I delete my account?"),
    ("Export my data.", "How do I export my data?"),
    ("Reset my password.", "How do I reset my password?"),
    ("Upgrade me to the annual plan.", "How do I upgrade to the annual plan?"),
    ("Unsubscribe me.", "How do I unsubscribe?"),
])
def test_a_bare_imperative_with_a_period_is_an_action_that_never_shares_an_answer(imperative, howto):
    e = guards.classify(imperative)
    assert not e.eligible and e.category == "action" and guards.RULES[e.rule] == "hard", e.reason
    assert guards.classify(howto).eligible, guards.classify(howto).reason
    for new, cached in ((imperative, howto), (howto, imperative), (imperative, imperative)):
        j = guards.judge(new, cached, 1.0, learned=None, soft_reads=True)
        assert not j.serve and "ineligible" in j.reason, j.reason
