"""The extractive answerer answers the question that was asked, over the demo help centre: the
fact asked for (not the article's neighbouring sentences), for the asker's case (not beside
another plan's or country's figure), from the article that states it (not a neighbouring
article's number), and a yes/no rule quoted for the asked case. Each class failed on the answerer
before it looked for the asked fact: the failing answers are quoted with each test."""
from __future__ import annotations

import pytest

from caching.answer_checks import asked as asking
from caching.models import AskEvent
from supportbot import pipeline
from supportbot.answerers.extractive import askers_figure, split_units
from supportbot.conversation import Conversation, Turn


@pytest.fixture(autouse=True)
def extractive(settings):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"


def ask(tenant, question: str, locale: str = "en") -> pipeline.AskOutcome:
    outcome = pipeline.ask(pipeline.Asker(tenant, locale), question)
    assert outcome.status == "answered", outcome.status
    return outcome


def admission(outcome) -> dict:
    return next(d for d in outcome.decisions if d["layer"] == "admission")


@pytest.mark.parametrize("question, locale, fact", [
    # was: "Join or cancel: • To join, go to Account > Plus and click Join Plus or Start free trial."
    ("Is there a free trial for Plus?", "en", "30-day trial"),
    # was: "Der Kundenservice ... ist für alle Acme-Kundinnen und -Kunden kostenlos, mit oder ohne Plus. Acme Plus
    # ist unsere Jahresmitgliedschaft ..."
    ("Was kostet Acme Plus?", "de", "45 €"),
    # was: "Neue Mitglieder können Plus 30 Tage kostenlos testen, einmal pro Person und Zahlungskarte." ("pro Jahr"
    # named the Pro plan beside Plus, so the Plus article was another plan's)
    ("Was kostet Plus pro Jahr in Österreich?", "de", "45 €"),
])
def test_the_answer_states_the_asked_fact_not_its_neighbours(acme, question, locale, fact):
    outcome = ask(acme, question, locale)
    assert fact in outcome.answer, outcome.answer
    assert admission(outcome)["disposition"] == "stored"


@pytest.mark.parametrize("question, fact, others", [
    # was: "Shipping with a Pro or Premier plan: • Pro: free Standard shipping on US orders over $60 instead of
    # $120. • Premier: free Standard shipping on every order, ... Freight for $39 instead of $79."
    ("How much is standard shipping in the US?", "$6.99", ("Pro:", "Premier:", "$60")),
    # was: "United States: • Express (2–3 business days): $19.99 / Shipping with a Pro or Premier plan:
    # • Premier: free Standard shipping on every order, free Express on US orders over $120, ..."
    ("How much is express shipping?", "$19.99", ("Premier:", "$39")),
])
def test_no_other_plans_figure_stands_beside_the_askers(initech, question, fact, others):
    outcome = ask(initech, question)
    assert fact in outcome.answer, outcome.answer
    assert not [o for o in others if o in outcome.answer], outcome.answer


def test_a_billing_period_asked_for_is_the_one_the_plan_states(initech):
    # was: "Care+ protection: • Premier members pay $14.50 (50% off)." ("pay" was the only word of the question a unit
    # shared; "yearly" and the plan's "per year ... annual billing" were not one word), admitted
    outcome = ask(initech, "how much is Premier if I pay yearly?")
    assert "$190" in outcome.answer and "$14.50" not in outcome.answer, outcome.answer
    assert outcome.citations[0]["article_id"] == "subscription-plans"


def test_the_figure_comes_from_the_article_that_states_it_not_a_neighbouring_one(acme):
    # was: "Bulky items such as inflatable kayaks and tents ... carry a surcharge of $14.95 (CA$19.95, £12.95,
    # €14.95), which also applies to Plus members." (Shipping times and costs)
    outcome = ask(acme, "How much does Acme Plus cost?")
    assert outcome.answer.startswith("Plus costs $49 per year"), outcome.answer
    assert "$14.95" not in outcome.answer and outcome.citations[0]["article_id"] == "plus-membership"


def test_a_plans_benefit_is_no_answer_for_a_customer_who_asks_about_no_plan(acme):
    # was: "What's included: • Free Standard shipping on every order, with no minimum order value [1]" (Acme Plus
    # membership) first, then "Germany and Austria: • Standard with DHL (2–4 business days): €4.95, ..." [2]
    outcome = ask(acme, "From what order value is standard shipping free in Germany?")
    assert outcome.answer.startswith("Germany and Austria:") and "€75" in outcome.answer, outcome.answer
    assert "no minimum order value" not in outcome.answer, outcome.answer
    assert [c["article_id"] for c in outcome.citations] == ["shipping-times-and-costs"]
    assert admission(outcome)["disposition"] == "stored"


def test_a_neighbouring_articles_number_is_never_cached(acme):
    """The German shipping article is not among the passages retrieved for this question: the answer
    must not quote the Plus article's price for Germany, and what it quotes is not cached."""
    # was: "Plus kostet 45 € pro Jahr in Deutschland und Österreich (...)", admitted and served again
    question = "Was kostet der Standardversand nach Deutschland?"
    first = ask(acme, question, "de")
    assert "45 €" not in first.answer, first.answer
    if "4,95 €" not in first.answer:
        assert admission(first)["disposition"] == "refused", first.answer
        assert admission(first)["reason"].startswith("incomplete:"), admission(first)
        assert ask(acme, question, "de").layer == "none"


@pytest.mark.parametrize("tenant_slug, question, case_words", [
    ("acme", "Is Saturday delivery available in the UK?", ("Royal Mail", "United Kingdom")),
    ("acme", "Can I get Saturday delivery in Canada?", ("Canad",)),
    ("initech", "Do you offer Saturday delivery in Mexico?", ("Mexic",)),
])
def test_a_yes_or_no_question_is_answered_with_the_asked_cases_rule(demo, tenant_slug, question, case_words):
    """The answer leads with the sentence about the asked country, never with another country's rule,
    and adds no "Yes" or "No" of its own."""
    outcome = ask(demo[tenant_slug], question)
    first = outcome.answer.split("\n")[0] + "\n" + outcome.answer.split("\n")[1] if "\n" in outcome.answer \
        else outcome.answer
    assert any(w in first for w in case_words), outcome.answer
    assert not outcome.answer.lower().startswith(("yes", "no,", "no.")), outcome.answer


@pytest.mark.parametrize("question, fact, special", [
    # was: "Where exactly we deliver: • Canada: all provinces and territories. Deliveries to Yukon, the Northwest
    # Territories and Nunavut take 3–5 business days longer." (admitted and served again), though the Canada
    # section of "Shipping times and costs" was among the passages
    ("How long does shipping to Canada take?", "5–8 business days", "Yukon"),
])
def test_the_general_case_leads_unless_the_asker_names_the_special_one(acme, question, fact, special):
    """A figure for a place with rules of its own within the asked country (remote territories, Alaska and
    Hawaii) is not the country's: the country's own figure leads, and the special one is not quoted."""
    outcome = ask(acme, question)
    assert fact in outcome.answer and special not in outcome.answer, outcome.answer
    assert admission(outcome)["disposition"] == "stored"


def test_the_length_of_the_asked_event_leads_even_as_a_step_of_a_procedure(initech):
    # was: "Mexico: CFDI tax invoices (facturas): For orders placed in the last 3 days of a month, you can ask until
    # the 3rd day of the following month. Facturas must be requested in the same calendar month ..." (the numbered
    # step "4. We email the PDF and XML files within 72 hours." is how long until the customer gets it)
    outcome = ask(initech, "I requested a factura, how long until I get it?")
    assert "72 hours" in outcome.answer, outcome.answer


def test_a_yes_or_no_rule_restricted_to_another_case_answers_for_the_asked_one(initech):
    # was: "Mexico store: • Mexican and international Visa, Mastercard and American Express cards" (labelled with the
    # asked country, silent on gift cards), admitted as complete and served again
    outcome = ask(initech, "Can I use my Initech gift card when I order from the Mexico store?")
    assert "US store only" in outcome.answer or "only be used in the US store" in outcome.answer, outcome.answer
    assert not outcome.answer.lower().startswith(("yes", "no")), outcome.answer


FOLLOW_UP = Conversation((
    Turn("user", "Do you ship to Canada?"),
    Turn("assistant", "Acme Outfitters delivers to five countries: the United States, Canada, the United Kingdom, "
                      "Germany and Austria. [1]"),
    Turn("user", "How long does that take?")))


def test_a_follow_up_without_the_customers_case_figure_is_never_cached(acme):
    """"Do you ship to Canada?" then "How long does that take?" (was: the territories' "Deliveries to Yukon ... take
    3–5 business days longer", stored and served again): no other case's figure is quoted, and an answer without
    Canada's delivery time is refused at admission."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), FOLLOW_UP)
    assert outcome.status == "answered", outcome.status
    assert "Yukon" not in outcome.answer and "3–5 business days" not in outcome.answer, outcome.answer
    if "5–8 business days" not in outcome.answer:
        assert admission(outcome)["disposition"] == "refused", outcome.answer


def test_a_follow_up_is_answered_for_the_case_the_customer_named(acme):
    """The rewrite also carries the assistant's words, which list every country; the customer's case is Canada,
    and Canada's delivery time leads (was: the list of countries, or the Yukon sentence: the rewrite was
    searched and answered only with the assistant's list in it). It is searched and answered in the customer's
    own words too, and still keyed by the whole conversation."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), FOLLOW_UP)
    assert "5–8 business days" in outcome.answer, outcome.answer
    assert "Yukon" not in outcome.answer
    event = AskEvent.objects.get(request_id=outcome.request_id)
    assert "(about: delivery to-canada acme outfitter five country united state" in event.question


def test_a_special_case_the_question_does_not_name_sets_no_bar_for_the_fact_that_leads(acme):
    """"Deliveries to Yukon ... take 3–5 business days longer" is Canada's best unit by its words but never leads
    for a question that does not name the territories; Canada's delivery times lead (was: "Canada Post delivers
    our parcels Monday to Friday only.", the units stating a duration falling outside the margin of the Yukon
    sentence)."""
    outcome = ask(acme, "How long does delivery to Canada take?", "en")
    assert "5–8 business days" in outcome.answer.split("\n", 2)[1], outcome.answer
    assert "Yukon" not in outcome.answer
    assert admission(outcome)["disposition"] == "stored"


@pytest.mark.parametrize("question, locale, fact, other", [
    # was: "Customer support: UK, Germany and Austria: • Phone UK: +44 20 5550 1188 • Phone Germany and Austria: +49 89
    # 5550 4400" (and served again from the exact cache)
    ("What number do I call for support if I live in Austria?", "en", "+49 89 5550 4400", "+44 20"),
    # was: "USA und Kanada: • USA Expedited (2 Werktage): 12,95 $ • Kanada Standard ... • Kanada Expedited (3 Werktage):
    # 19,95 CA$"
    ("Was kostet der Expedited-Versand nach Kanada?", "de", "19,95 CA$", "12,95 $"),
])
def test_a_line_headed_by_another_country_does_not_stand_beside_the_askers(acme, question, locale, fact, other):
    outcome = ask(acme, question, locale)
    assert fact in outcome.answer and other not in outcome.answer, outcome.answer


@pytest.mark.parametrize("question, locale, fact", [
    # was: "Die normale Rückgabefrist: • Sie haben 30 Tage ab dem ... Zustelldatum Zeit, eine Rücksendung zu starten"
    # (the lead's second fact set; admitted and cached)
    ("Bis wann muss ich das Rücksendepaket abgeben?", "de", "innerhalb von 7 Tagen ab"),
    # was: "How to start a return: 5. Pack the items securely and drop the parcel off within 7 days. ..." first
    ("How long do I have to return an item?", "en", "You have 30 days"),
])
def test_the_customers_deadline_is_the_asked_steps_own(acme, question, locale, fact):
    outcome = ask(acme, question, locale)
    assert outcome.answer.split("\n")[0:2] and fact in "\n".join(outcome.answer.split("\n")[:2]), outcome.answer
    assert admission(outcome)["disposition"] == "stored"


def test_a_minimum_is_answered_with_the_minimum_not_another_rules_threshold(acme):
    # was: "When extra verification is needed: • Bank transfer payments for orders with a total of more than $500
    # (CA$680, £400 or €460)." (the lead's second fact set; admitted and cached)
    outcome = ask(acme, "What is the minimum order total for bank transfer?")
    assert "$250 or more" in outcome.answer, outcome.answer
    assert admission(outcome)["disposition"] == "stored"


def test_a_size_asked_for_is_answered_with_the_size(acme):
    # was: "Planning gear for a trip or a whole group? ... Import the file: 3. Pick an existing wishlist or create a new
    # one. You can have up to 20 wishlists." (holdout 6; a question of no kind: admitted and served again)
    outcome = ask(acme, "How large can the CSV file for a wishlist import be?")
    assert "1 MB" in outcome.answer, outcome.answer


def test_a_carrier_asked_for_is_named_or_the_answer_is_never_cached(initech):
    # was: "Mexico: • Standard (7–12 business days): MX$149, ..." (holdout 6; admitted and served again): the passages
    # retrieval returns for it do not name Estafeta
    outcome = ask(initech, "Which delivery company brings Initech orders in Mexico?")
    if "Estafeta" not in outcome.answer:
        assert admission(outcome)["disposition"] == "refused", outcome.answer


def test_hours_for_another_day_are_never_cached(acme):
    # was: "Customer support: UK, Germany and Austria: • Monday to Friday: 9:00 a.m. – 6:00 p.m. CET ... Holiday hours:
    # • December 24 and December 31: the store is open 10:00 a.m. – 3:00 p.m. ..." (a probe of this session: stored)
    outcome = ask(acme, "What time does the Basecamp store close on Sundays?")
    if "Sunday" not in outcome.answer:
        assert admission(outcome)["disposition"] == "refused", outcome.answer


@pytest.mark.parametrize("question, fact, neighbour", [
    # was: "If a SKU is already on the wishlist, the quantities are added together, up to a maximum of 10." (the lead's
    # third fact set; admitted, then served from the exact and the semantic cache)
    ("How many wishlists am I allowed to have?", "20 wishlists", "maximum of 10"),
    ("How many rows can my wishlist CSV have?", "200 rows", "maximum of 10"),
    ("Whats the max number of rows in a CSV I can import into a wishlist?", "200 rows", "maximum of 10"),  # lf7-15
])
def test_a_count_is_answered_with_the_figure_counting_the_asked_thing(acme, question, fact, neighbour):
    outcome = ask(acme, question)
    assert fact in outcome.answer.replace("**", ""), outcome.answer
    assert neighbour not in outcome.answer, outcome.answer
    # stored, unless a rule of its own keeps it out ("my wishlist CSV" is about the customer's own account)
    decision = admission(outcome)
    assert decision["disposition"] == "stored" or decision["reason"].startswith("ineligible"), decision


@pytest.mark.parametrize("tenant, question, fact", [
    # was: "Standard orders are sometimes delivered on a Saturday as well, at no extra cost, but we can't promise
    # it." (admitted: "at no extra cost" is an amount in words, of standard orders)
    ("initech", "How much is Saturday delivery?", "$14.99"),
    # was: "Most questions can be answered straight away by the Ask assistant, ..." (admitted: "straight away")
    # (the lead's fifth fact set, lf5-06, in-sample since)
    ("acme", "How quickly are support emails answered?", "1 business day"),
])
def test_a_figure_leads_over_the_same_kind_said_in_words(demo, tenant, question, fact):
    outcome = ask(demo[tenant], question)
    assert fact in outcome.answer, outcome.answer
    for words in ("no extra cost", "straight away"):  # context after the figure at most
        assert words not in outcome.answer or outcome.answer.index(fact) < outcome.answer.index(words), outcome.answer


def test_a_question_asked_in_words_is_answered_by_words(initech):
    outcome = ask(initech, "Is standard shipping ever delivered on a Saturday for free?")
    assert "no extra cost" in outcome.answer, outcome.answer


def test_of_a_sentence_stating_two_things_figures_the_answer_quotes_the_asked_things_clause(acme):
    # was: "3. You'll get a cancellation email. Card authorisations are released by your bank within 3–5 business
    # days; PayPal payments are refunded within 1–2 business days." (the card's 3–5 days beside PayPal's)
    outcome = ask(acme, "After I cancel an order, how long until my PayPal payment is refunded?")
    assert "1–2 business days" in outcome.answer and "3–5" not in outcome.answer, outcome.answer


@pytest.mark.parametrize("question, kind, kept, dropped", [
    ("When does support close on December 24?", "clock", "December 24 and December 31: US support runs until", "store"),
    ("What is the VAT rate on guidebooks in Germany?", "amount", "Printed maps and guidebooks", "standard rates"),
    # both clauses say as much of the question: the sentence is quoted whole
    ("What is the VAT rate in Germany?", "amount", "The standard rates are 20%", None),
])
def test_the_pertinent_clause_is_the_one_saying_strictly_most_of_the_question(question, kind, kept, dropped):
    from caching.answer_checks.asked import focus_terms
    from supportbot.answerers.extractive import Unit, pertinent_part

    text = {"clock": "December 24 and December 31: the store is open 10:00 a.m. – 3:00 p.m.; US support runs until "
                     "3:00 p.m. MT.",
            "amount": "The standard rates are 20% in the UK, 19% in Germany and 20% in Austria; printed maps and "
                      "guidebooks are charged at the reduced rate of 0% in the UK, 7% in Germany and 10% in Austria."}[kind]
    part = pertinent_part(kind, focus_terms(question), Unit("item", text, 0, "3."))
    assert part.text.startswith(kept) and (dropped is None or dropped not in part.text), part.text
    assert part.marker == ("3." if dropped is None else "")  # a clause is no step of the list


@pytest.mark.parametrize("tenant, question, fact, neighbour", [
    # was: a clarifying reply ("this" read as pointing back), then, once the label pointed nowhere, "4. We send a
    # confirmation link to the new address. The link is valid for 24 hours. ..." leading (the same words, "link")
    ("acme", "Once my email is changed, how long does the 'This wasn't me' link work?", "7 days", "24 hours"),
    # was: a clarifying reply
    ("initech", "How long does 'Remember this browser' skip the code for?", "14 days", None),
])
def test_a_label_the_question_quotes_names_the_unit_that_answers(demo, tenant, question, fact, neighbour):
    outcome = ask(demo[tenant], question)
    assert fact in outcome.answer and (neighbour is None or neighbour not in outcome.answer), outcome.answer


@pytest.mark.parametrize("question, facts, others", [
    # was: "Plus costs $49 per year (CA$65 in Canada, £42 in the UK, €45 in Germany and Austria)." (the lead's fifth
    # conversation set: "im in the uk, does acme plus have a free trial?" ... "and how much is it after that?")
    ("How much is Acme Plus in the UK?", ["£42 in the UK"], ["$49", "CA$65", "€45"]),
    # customers type the country in lower case: "uk" is no other word
    ("how much is acme plus in the uk?", ["£42 in the UK"], ["$49", "CA$65", "€45"]),
    # was: both clauses whole, every country's standard and reduced rates
    ("What VAT rate do you charge in Austria?", ["20% in Austria", "10% in Austria"], ["19%", "7%"]),
])
def test_a_sentence_listing_every_countrys_figure_is_quoted_for_the_askers_country(acme, question, facts, others):
    outcome = ask(acme, question)
    first = outcome.answer.split("\n")[0]
    assert all(f in first for f in facts) and "…" in first, outcome.answer
    assert not any(o in outcome.answer for o in others), outcome.answer
    assert admission(outcome)["disposition"] == "stored"


def test_a_sentence_listing_other_countries_figures_is_whole_for_the_unlabelled_case():
    """The US figure of "Plus costs $49 per year (CA$65 in Canada, ...)" names no country: nothing is cut, and a
    unit listing one labelled figure is no list."""
    unit = split_units("Plus costs $49 per year (CA$65 in Canada, £42 in the UK, €45 in Germany and Austria).")[0]
    assert askers_figure(asking.asked("How much is Acme Plus in the US?"), unit) == unit
    one = split_units("Standard (5–8 business days): CA$9.95, free on orders over CA$100")[0]
    assert askers_figure(asking.asked("How long does delivery to Canada take?"), one) == one
    first = split_units("Even after deletion, we keep invoices for as long as the law requires: 7 years in the US "
                        "and Canada, 6 years in the UK and 10 years in Germany and Austria.")[0]
    assert askers_figure(asking.asked("How long do you keep invoices in the UK?"), first).text == (
        "Even after deletion, we keep invoices for as long as the law requires … 6 years in the UK.")


def test_a_sentence_listing_each_plans_figure_is_quoted_for_the_askers_plan(initech):
    """was: "In the Mexico store, Pro costs MX$159 per month and Premier MX$329 per month." for the Pro plan (the
    blind seventh fact set, lf7-44: Premier's figure beside the asked one)."""
    outcome = ask(initech, "I shop in the Mexico store. What does the Pro plan cost per month there?")
    assert "MX$159" in outcome.answer and "MX$329" not in outcome.answer, outcome.answer
    unit = split_units("Pro costs $9 per month and Premier $19 per month.")[0]
    assert askers_figure(asking.asked("How much is Premier?"), unit).text == "Premier $19 per month."
    assert askers_figure(asking.asked("How much is Plus?"), unit) == unit  # no item of the asked plan


def test_a_second_figure_of_nothing_the_question_names_is_left_out(acme):
    """was: "... The link is valid for 30 minutes, and only the most recent link works. After 5 failed sign-in
    attempts, your account is locked for 15 minutes ..." (the blind seventh fact set, lf7-20: a lockout's length
    beside the link's)."""
    outcome = ask(acme, "requested a password reset link, how long is it valid for?")
    assert "30 minutes" in outcome.answer and "15 minutes" not in outcome.answer, outcome.answer


def test_what_the_question_compares_with_is_not_what_it_asks_about(acme):
    """was: "Canada: • Standard (5–8 business days): CA$9.95 ... • Expedited (3 business days): CA$19.95", the
    Standard line named by "faster than standard" (the blind seventh fact set, lf7-01; served again from the
    exact cache)."""
    outcome = ask(acme, "how much is expedited shipping to canada? need it faster than standard")
    assert "CA$19.95" in outcome.answer and "CA$9.95" not in outcome.answer, outcome.answer
    assert "standard" not in asking.focus_terms("Is Express faster than Standard?")


def test_a_price_question_is_not_handed_off_for_its_how_much(initech):
    # was handed off: "not answerable: P=0.333 < 0.334; the help centre never states much"
    outcome = ask(initech, "How much is the Premier plan?")
    assert "$19 per month" in outcome.answer, outcome.answer


def test_a_unit_labelled_with_every_asked_case_leads(acme):
    """The customer's Saturday delivery in the US, then "do Plus members pay less?": Plus and the US are both asked,
    and the Saturday surcharge for Plus members in the US leads, not Plus's free Standard shipping (was, once a
    rewrite was also answered in the customer's own words: the bulky-item surcharge that "also applies to Plus
    members")."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), Conversation((
        Turn("user", "Is there a surcharge for Saturday delivery in the US?"),
        Turn("assistant", "Yes, the Saturday surcharge is $9.95."),
        Turn("user", "do Plus members pay less?"))))
    assert "$4.95" in outcome.answer, outcome.answer


CHATTY_FOLLOW_UP = Conversation((
    Turn("user", "Hey! I upgraded to Premier last month and bought a soundbar last week. lol it's way too big for my "
                 "shelf. If I send it back, do I have to pay for return shipping?"),
    Turn("assistant", "No. Return shipping is free for Premier members, and Premier members don't pay the 15% "
                      "restocking fee on opened items either."),
    Turn("user", "Good to know. How long do I have to send it back?")))


def test_chatter_the_help_centre_never_states_does_not_hand_off_a_follow_up_on_its_subject(initech):
    """The customer's "lol", "way too big for my shelf" are no subject of the help centre's; the assistant's reply
    states its words, so the follow-up is about a subject it covers (was: handed off as not covered, "the help
    centre never states big, either, great, lol")."""
    outcome = pipeline.ask(pipeline.Asker(initech, "en"), CHATTY_FOLLOW_UP)
    assert outcome.status == "answered", outcome.answer
    assert "45 days" in outcome.answer, outcome.answer


def test_the_customers_town_goods_and_thanks_in_a_follow_up_are_no_subject_of_it(acme):
    """Portland, Oregon is the US; "thx" is thanks; the sleeping bag is the customer's, and the reply states the
    help centre's words, stemmed as its passages are ("costs", "orders") (was: handed off, "the help centre never
    states around, bag, oregon, portland"; the blind seventh conversation set, lc7-01)."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), Conversation((
        Turn("user", "Hi! I'm in Portland, Oregon and about to order a sleeping bag, it's around $60. What does "
                     "shipping cost?"),
        Turn("assistant", "For a US order under $75, Standard shipping (3–5 business days) costs $4.95. It's free on "
                          "orders over $75."),
        Turn("user", "thx. and for the expedited option?"))))
    assert outcome.status == "answered", outcome.reason
    assert "$12.95" in outcome.answer and "CA$19.95" not in outcome.answer, outcome.answer


def test_a_follow_up_after_a_hand_off_is_still_handed_off(acme):
    """A conversation whose subject the help centre does not cover stays not covered: the assistant's reply was the
    hand-off, not the help centre's words, so the customer's words all still count."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), Conversation((
        Turn("user", "Do you rent out kayaks for the weekend?"),
        Turn("assistant", "Sorry, our help centre doesn't cover this question, so I can't answer it reliably. Please "
                          "contact our customer support team and a person will be happy to help you."),
        Turn("user", "ok, and how much would it cost per day?"))))
    assert outcome.status == "not_covered", outcome.answer


@pytest.mark.parametrize("tenant_slug, question, locale, fact, neighbour", [
    # was: "• Visa, Mastercard, American Express: 7–10 business days ... • PayPal: 3–5 business days."
    ("initech", "I paid with PayPal. How long does an Initech refund take to show up?", "en", "3–5 business days",
     "7–10 business days"),
    # was: "• Kredit- oder Debitkarte (Visa, …): 5–7 Werktage … • PayPal: 1–2 Werktage. • Apple Pay und Google Pay: …"
    ("acme", "Ich habe mit PayPal bezahlt. Wann ist die Erstattung auf meinem Konto?", "de", "1–2 Werktage",
     "5–7 Werktage"),
])
def test_the_list_item_headed_by_what_the_question_names_stands_alone(demo, tenant_slug, question, locale, fact,
                                                                      neighbour):
    outcome = ask(demo[tenant_slug], question, locale)
    assert fact in outcome.answer and neighbour not in outcome.answer, outcome.answer


def test_a_phone_number_of_another_country_is_never_cached_as_the_askers(acme):
    """A phone number's calling code names its country, as a currency names an amount's (was: the Denver store's
    "+1 (555) 010-4480" for the UK's support number, admitted as complete and served again)."""
    outcome = ask(acme, "phone number for acme customer support in the UK?")
    assert "+1 (555)" not in outcome.answer or admission(outcome)["disposition"] == "refused", outcome.answer
    assert asking.all_cases_in("418 Ridgeline Avenue, Denver, CO 80202, phone +1 (555) 010-4480",
                               with_currency=True) == {"country": {"United States", "Canada"}}
    assert asking.all_cases_in("Phone UK: +44 20 5550 1188", with_currency=True) == {"country": {"United Kingdom"}}
    assert asking.all_cases_in("1+1 = 2, +49", with_currency=True) == {}


def test_a_german_follow_up_is_not_handed_off_for_the_conversations_chatter(acme):
    """An unresolved German follow-up is checked on its context question; the customer's "Klingt gut", "Hallo",
    "übrigens super angekommen" are no subject of the help centre's, and the assistant's reply states its words
    (was: handed off, "the help centre never states ausprobi, gut, hallo, klingt")."""
    outcome = pipeline.ask(pipeline.Asker(acme, "de"), Conversation((
        Turn("user", "Hallo! Ich wohne in Leipzig und bestelle ziemlich oft bei euch. Lohnt sich Acme Plus für mich?"),
        Turn("assistant", "Mit Plus erhalten Sie kostenlosen Standardversand für jede Bestellung ohne "
                          "Mindestbestellwert, kostenlosen Express-Versand für Bestellungen über 75 €, 60 Tage "
                          "Rückgaberecht und kostenlose Rücksendeetiketten."),
        Turn("user", "Klingt gut, mein Zelt ist übrigens super angekommen. Kann ich Plus vorher ausprobieren?"),
        Turn("assistant", "Schön zu hören! Ja, neue Mitglieder können Plus 30 Tage kostenlos testen, einmal pro "
                          "Person und Zahlungskarte."),
        Turn("user", "Und was kostet es danach im Jahr?"))))
    assert outcome.status == "answered", outcome.answer
    assert "45 €" in outcome.answer, outcome.answer


@pytest.mark.parametrize("question, fact, other", [
    # a typo ("downlaod") handed it off as a subject the help centre never states; the told case ("my data export is
    # ready") led with its own figure ("one export every 24 hours")
    ("got the email that my data export is ready but I'm travelling. how many days is the downlaod link good for?",
     "7 days", "every 24 hours"),
    ("my street adress is really long, how many characters fit on each adress line?", "35 characters", None),
    # a holiday by its name where the help centre dates it ("December 24"): was "the help centre never names
    # Christmas Eve"
    ("what are the Basecamp store hours in Denver on Christmas Eve?", "3:00 p.m.", None),
])
def test_a_typo_or_a_holidays_name_is_no_unknown_subject(acme, question, fact, other):
    outcome = ask(acme, question)
    assert outcome.status == "answered" and fact in outcome.answer, outcome.answer
    assert other is None or other not in outcome.answer.split("\n")[0], outcome.answer


def test_a_yes_no_question_gets_the_asked_cases_list_item_of_the_leading_article(demo):
    """"Can I add my sister as well?" on Pro: the general sentence about teams leads, and the item headed by the
    asked plan in its article ("Pro: the owner plus 1 member") is its rule (was: the general sentences only)."""
    outcome = pipeline.ask(pipeline.Asker(demo["initech"], "en"), Conversation((
        Turn("user", "I'm on the Pro plan. Can I share it with my roommate?"),
        Turn("assistant", "Yes. Pro includes a team of you plus 1 member. Turn on two-step verification first, then "
                          "go to My Account > Team and click Invite. The invitation link is valid for 72 hours, and "
                          "your roommate must shop in the same store as you (US or Mexico)."),
        Turn("user", "Can I add my sister as well?"))))
    assert "plus 1 member" in outcome.answer, outcome.answer


@pytest.mark.parametrize("messages", [
    ("Was kostet der Versand nach Deutschland mit Express?",),
    ("Was kostet der Versand nach Deutschland?", "Der Standardversand mit DHL kostet 4,95 € und dauert 2–4 Werktage "
     "ab Versand. Bei einem Bestellwert über 75 € ist er kostenlos.", "und express?"),
])
def test_a_plans_figure_the_customer_did_not_name_does_not_lead(acme, messages):
    """Plus's "Kostenloser Express-Versand für Bestellungen über 75 €" is the member's figure: for a customer who names
    no plan, Express to Germany costs 14,95 € (was: the Plus line, cited from the membership article)."""
    outcome = pipeline.ask(pipeline.Asker(acme, "de"), Conversation(tuple(
        Turn("user" if i % 2 == 0 else "assistant", m) for i, m in enumerate(messages))))
    assert "14,95" in outcome.answer and "Kostenloser Express" not in outcome.answer, outcome.answer


@pytest.mark.parametrize("tenant_slug, question, locale, fact, other", [
    # was: "On New Year's Day, Memorial Day, …, chat is staffed from 9:00 a.m. to 3:00 p.m. CT." first, and cached
    ("initech", "what time does live chat close on new year's eve?", "en", "2:00 p.m.", "9:00 a.m."),
    ("acme", "Wie lange hat der Store an Silvester geöffnet?", "de", "15:00", "Neujahr"),
])
def test_a_holidays_hours_are_that_days_not_another_holidays(demo, tenant_slug, question, locale, fact, other):
    """A holiday named or dated ("New Year's Eve", "December 31", "Silvester", "31. Dezember") is a case of its own:
    another holiday's hours never lead, and beside the asked day's they are refused as mixed cases."""
    outcome = ask(demo[tenant_slug], question, locale)
    assert fact in outcome.answer and other not in outcome.answer, outcome.answer


@pytest.mark.parametrize("tenant_slug, question, locale, fact, other", [
    # was: "4. Our service center in San Marcos, Texas repairs the product within 10 business days" first
    ("initech", "I'm in Monterrey and my coffee machine stopped heating. Once my warranty claim is approved, how long "
                "will the repair take?", "en", "15 business days", "10 business days"),
    # was: "7 % in Deutschland, 10 % in Österreich und 0 % in Großbritannien"
    ("acme", "Ich wohne in München. Welcher Steuersatz gilt für gedruckte Landkarten und Reiseführer?",
     "de", "7 %", "10 %"),
])
def test_a_city_names_its_country(demo, tenant_slug, question, locale, fact, other):
    """A customer in Monterrey asks about Mexico, and a line about San Marcos, Texas states the US's figure."""
    outcome = ask(demo[tenant_slug], question, locale)
    assert fact in outcome.answer and other not in outcome.answer, outcome.answer


def test_a_country_named_beats_the_city_of_a_warehouse_in_another(acme):
    """"I'm in the UK." / "we ship across the UK from Leipzig": the customer's country is the UK, not Germany, whose
    city the assistant named (was, with cities as countries: the UK's and Germany's Express prices, cached)."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), Conversation((
        Turn("user", "I'm in the UK."), Turn("assistant", "Great, we ship across the UK from Leipzig."),
        Turn("user", "How much is express shipping?"))))
    assert "£12.95" in outcome.answer and "€14.95" not in outcome.answer, outcome.answer
    assert asking.cases_in("in the UK, shipped from Leipzig") == {"country": "United Kingdom"}
    assert asking.cases_in("a school in München") == {"country": "Germany"}


@pytest.mark.parametrize("tenant_slug, question, fact", [
    # was: "United States: • Freight for items over 50 lb, such as large TVs (7–14 business days): $79" (the Premier
    # section of the shipping article was not among the four passages)
    ("initech", "Premier member here. My new TV is well over 50 lb. What does freight cost for me?", "$39"),
    ("initech", "I'm on the Pro plan. From what order value is standard shipping free for me?", "$60"),
])
def test_a_plans_own_section_answers_for_a_member_of_that_plan(demo, tenant_slug, question, fact):
    outcome = ask(demo[tenant_slug], question)
    assert fact in outcome.answer, outcome.answer


def test_a_follow_up_asks_its_fact_of_its_own_new_words(initech):
    """"I'd rather get it by text. How long does that last?" after the emailed reset link: the text message's code
    (was: the link's 60 minutes again, the rewrite's words from the conversation outweighing "text"; the blind ninth
    conversation set, lc9-17). A word the conversation said, an attribute ("extra") or a pronoun ("that") adds
    nothing: "is there a time limit on that?" after the invoice correction keeps its 60 days (lc5-22)."""
    outcome = pipeline.ask(pipeline.Asker(initech, "en"), Conversation((
        Turn("user", "I forgot my password. How long is the reset link good for?"),
        Turn("assistant", "The reset link we email from accounts@initech-home.example is valid for 60 minutes, and only "
                          "the newest link works."),
        Turn("user", "I'd rather get it by text. How long does that last?"))))
    assert outcome.status == "answered", outcome.reason
    assert outcome.answer.startswith("The code is valid for 10 minutes."), outcome.answer
    outcome = pipeline.ask(pipeline.Asker(initech, "en"), Conversation((
        Turn("user", "my company name is spelled wrong on an invoice, can that be fixed?"),
        Turn("assistant", "Yes, an existing invoice can be corrected once. Just contact support to request it."),
        Turn("user", "is there a time limit on that?"))))
    assert "60 days" in outcome.answer and "90 days" not in outcome.answer, outcome.answer


def test_a_statement_to_confirm_is_a_yes_or_no_question_answered_by_its_products_own_rule(acme):
    """"..., right?" asks to confirm, yes or no; a refurbished item's rule leads over the Plus window the customer
    supposes, and a sentence pointing back ("This window is the same for everyone") comes with the one it points at
    (was: handed off, "the help centre never names Renewed GPS"; then "Acme Plus members get an extended 60-day return
    window"; the blind ninth fact set, lf9-05)."""
    assert asking.kind_of("I'm a Plus member, so I get the 60 days to return it too, right?") == "yesno"
    outcome = ask(acme, "Got an Acme Renewed GPS watch. I'm a Plus member, so I get the 60 days to return it too, right?")
    assert outcome.answer.startswith("Refurbished products sold under the Acme Renewed label can be returned within "
                                     "15 days of delivery. This window is the same for everyone"), outcome.answer


def test_a_yes_or_no_question_after_the_customers_case_quotes_the_item_headed_by_that_case(initech):
    """"i have the pro plan, can i add both my roommates to my team?" asks yes or no after a told clause, and the list
    item headed by the asked plan is the rule ("Pro: the owner plus 1 member"), quoted beside the general sentence
    (was: a question of no kind, answered with "With a team, you can share your Pro or Premier benefits ..." alone;
    the blind ninth fact set, lf9-41)."""
    question = "i have the pro plan, can i add both my roommates to my team?"
    assert asking.kind_of(question) == "yesno"
    assert asking.kind_of("I have the Pro plan, how do I add my roommate?") is None  # how: no yes or no
    outcome = ask(initech, question)
    assert "Pro: the owner plus 1 member" in outcome.answer, outcome.answer
    assert "Premier: the owner plus up to 5" not in outcome.answer, outcome.answer


def test_of_a_list_the_item_whose_label_the_question_names_most_is_quoted_alone(initech):
    """"paid with apple pay ..." named a word of two items' labels ("Apple Pay", "Pay by Bank (ACH)"); was: both
    quoted, ACH's 5–7 days beside Apple Pay's 7–10 (the blind tenth fact set, lf10-29)."""
    outcome = ask(initech, "paid with apple pay for a return that was just refunded, how long till i see the money?")
    assert "7–10 business days" in outcome.answer and "5–7" not in outcome.answer, outcome.answer


def test_whether_a_rule_holds_after_the_customers_time_is_answered_with_the_rules_time(initech):
    """The general rule with other plans' figure in brackets is the Free plan's too; was: "Standard shipping free on
    orders over $120" (an amount asked for, "price" of "price match"), then only "Price match is available for orders
    from the US store only." (the blind tenth fact set, lf10-36)."""
    outcome = ask(initech, "Found my TV cheaper at another US retailer, 10 days after delivery. I'm on the Free plan. "
                           "can you still price match it?")
    assert "7 days" in outcome.answer, outcome.answer


def test_a_word_no_unit_states_counts_as_the_word_the_articles_use():
    """"can I still fix that?" is the articles' "change", "hang on to" their "keep" (``EQUIVALENTS``), when no unit
    says the customer's word."""
    from supportbot.answerers.extractive import said_as_the_articles_say
    from caching.answer_checks.text import terms

    stated = terms("You can change the shipping address until the order is packed. We keep invoices for 5 years.")
    assert terms("change") <= said_as_the_articles_say("can I still fix that?", stated)
    assert terms("keep") <= said_as_the_articles_say("how long do you hang on to my invoices?", stated)
    assert said_as_the_articles_say("can I change it?", stated) == terms("can I change it?")


def test_the_sentence_right_after_a_lead_stating_nothing_may_state_the_asked_fact(acme):
    """Was: "Haben Sie keine Backup-Codes mehr, wenden Sie sich an den Kundenservice." alone, no duration (the blind
    tenth fact set, lf10-57): the next sentence of its paragraph states the 48 hours asked for."""
    outcome = ask(acme, "Handy verloren und keine Backup-Codes mehr :( Wie lange dauert es, bis ihr die 2FA entfernt?",
                  "de")
    assert "48 Stunden" in outcome.answer, outcome.answer
    assert admission(outcome)["disposition"] == "stored"


@pytest.mark.parametrize("tenant_slug, question, fact", [
    # was: handed off, "the help centre never states -771204, sort" (lf14-12): an order number says which order
    ("acme", "is US phone support open on christmas eve? need to sort out AO-771204 before the holidays, until what "
             "time can i call", "3"),
    # was: handed off, "never states dec" (lf14-60): the day said twice is one date, as the passage writes it
    ("initech", "is chat with a person open on new years eve (dec 31)? until what time", "2"),
])
def test_holiday_hours_are_answered_however_the_day_and_the_order_are_written(demo, tenant_slug, question, fact):
    outcome = ask(demo[tenant_slug], question)
    assert f"{fact}:00 p.m" in outcome.answer or f"{fact} p.m" in outcome.answer, outcome.answer


def test_a_payment_the_customer_says_is_not_theirs_does_not_pick_the_clause(acme):
    """"I paid with PayPal, not a card": of "Card authorisations are released ... within 3–5 business days; PayPal
    payments are refunded within 1–2 business days" the PayPal clause alone (was: both, lf14-02)."""
    outcome = ask(acme, "Hi, I cancelled my order about 20 minutes after placing it. I paid with PayPal, not a card - "
                        "how long until I get my money back?")
    assert "1–2" in outcome.answer and "3–5" not in outcome.answer, outcome.answer


def test_a_german_question_for_the_time_of_day_quotes_the_asked_warehouses_cut_off(acme):
    """"Bis wie viel Uhr ...?" asks for a time of day (was: an amount, and both warehouses' cut-offs quoted, lf14-40)."""
    outcome = ask(acme, "Bis wie viel Uhr muss ich bestellen, damit das Paket aus Leipzig noch am selben Tag rausgeht?",
                  "de")
    assert "13:00" in outcome.answer and "14:00" not in outcome.answer, outcome.answer


@pytest.mark.parametrize("question, fact, other", [
    # was: "Pro: free Standard shipping on US orders over $60" led for its label alone (lf14-54)
    ("I'm on the Pro plan. How much does Saturday delivery cost on an Express order?", "$14.99", "$60"),
    # was: no kind asked, so every plan's threshold was quoted (lf14-55)
    ("pro member here - at what order amount does standard shipping become free for me?", "$60", "over $120"),
])
def test_a_plan_members_question_is_answered_with_the_rule_about_what_it_asks(initech, question, fact, other):
    outcome = ask(initech, question)
    assert fact in outcome.answer and other not in outcome.answer, outcome.answer



def test_a_card_named_american_express_says_nothing_of_an_express_delivery(demo):
    """Twenty-first session: "express" of "American Express" made the Mexico store's list of cards the answer, cached,
    to what express shipping to Mexico costs."""
    from caching.answer_checks.text import terms
    assert "express" not in terms("Visa, Mastercard and American Express cards")
    assert terms("Do you take American Express?") & terms("Visa, Mastercard and American Express cards")
    outcome = ask(demo["initech"], "how much is express shipping in mexico?")
    assert "aren't available to Mexico" in outcome.answer and "OXXO" not in outcome.answer, outcome.answer


def test_a_follow_up_is_answered_with_the_fact_of_what_its_own_words_name(acme):
    """Twenty-first session: after an account lock, "how long is the link in the email good for?" was answered with
    the lock's 15 minutes (the conversation's words), the link's 30 minutes second. In-sample: the message is set 15's
    (lc15-08); reworded ("how long does the link in the reset email stay valid?") the follow-up still finds the
    change-email article (docs/answers.md, the fifteenth sets)."""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), Conversation((
        Turn("user", "help, it says my account is locked after too many wrong passwords"),
        Turn("assistant", "After 5 failed sign-in attempts your account is locked for 15 minutes. Resetting your "
                          "password lifts the lock immediately."),
        Turn("user", "ok doing the reset now. how long is the link in the email good for?"))))
    assert "30 minutes" in outcome.answer and "15 minutes" not in outcome.answer, outcome.answer


def test_the_hours_of_the_asked_weekday_lead_over_a_holidays(acme):
    """"what time does the Basecamp store in Denver close on a normal wednesday?" was answered with the holiday hours
    (blind set 22's lf22-12): they scored above the weekly hours, which are the Wednesday's."""
    outcome = ask(acme, "what time does the Basecamp store in Denver close on a normal wednesday? want to come by "
                        "after work")
    first = outcome.answer.split("\n")[:3]
    assert any("Monday to Saturday: 10:00 a.m. – 7:00 p.m." in line for line in first), outcome.answer
    assert "December 24" not in outcome.answer.split("\n")[1], outcome.answer


def test_a_bracketed_list_of_one_thing_per_country_is_quoted_as_the_askers_item():
    """"I'm in Manchester and want to use the QR code for my return ... Where do I drop the parcel off?" was answered
    with every country's drop-off carrier and served from the exact cache (blind set 23's lf23-19, held out): Canada
    Post stood beside Royal Mail."""
    from supportbot.answerers.extractive import askers_bracketed_item

    step = ("4. Choose how to ship: print the label, or show the QR code at a drop-off point (UPS in the US, Canada Post "
            "in Canada, Royal Mail in the UK, DHL in Germany and Austria). [1]")
    assert askers_bracketed_item(step, "United Kingdom") == ("4. Choose how to ship: print the label, or show the QR code at a "
                                                   "drop-off point (… Royal Mail in the UK). [1]")
    assert "(… DHL in Germany and Austria)" in askers_bracketed_item(step, "Austria")
    assert askers_bracketed_item(step, None) == step  # no country asked: the whole list
    assert askers_bracketed_item(step, "Mexico") == step  # no item of the asker's country: the whole list
    german = ("4. Wählen Sie die Versandart: Etikett ausdrucken oder den QR-Code in einer Annahmestelle vorzeigen (DHL in "
              "Deutschland und Österreich, Royal Mail in Großbritannien, UPS in den USA, Canada Post in Kanada).")
    assert "(… Canada Post in Kanada)" in askers_bracketed_item(german, "Canada")
    # a bracket whose items do not each name a country is no such list
    assert askers_bracketed_item("Plus (for members in the US and Canada, and their households) is free.", "Canada") == \
        "Plus (for members in the US and Canada, and their households) is free."


def test_where_to_drop_off_a_return_names_the_askers_carrier_alone(acme):
    outcome = ask(acme, "I'm in Manchester and want to use the QR code for my return instead of printing a label. "
                        "Where do I drop the parcel off?")
    assert "Royal Mail" in outcome.answer and "Canada Post" not in outcome.answer, outcome.answer
