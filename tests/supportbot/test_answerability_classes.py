"""The classes a held-out set still found answered and then served from the exact cache (issue 34): the company
itself, an app on a device no article names, a city as a support base, a named device brand in German. Each is
handed off, asked twice never served from a cache; and admission, behind the decision, never stores an answer
whose cited passages do not cover what the question asks. The wording is the development probes'
(``kb/unanswerable_dev2.jsonl``); the real pipeline, embedding model and committed artefact."""
from __future__ import annotations

import pytest

from caching import admission
from caching.answer_checks.answerable import AnswerableCheck, uncovered_subject
from caching.models import AskEvent
from core.models import Tenant
from supportbot import pipeline
from supportbot.answerability import Verdict
from supportbot.answerability.company import company_question, unstated_company_facts

pytestmark = pytest.mark.django_db


def ask_twice(tenant, question, locale):
    asker = pipeline.Asker(Tenant.objects.get(pk=tenant.pk), locale)
    first, second = pipeline.ask(asker, question), pipeline.ask(asker, question)
    for outcome in (first, second):
        assert outcome.status == AskEvent.Status.NOT_COVERED, (question, outcome.answer, outcome.reason)
        assert outcome.citations == [] and outcome.handoff == tenant.handoff_text
    assert second.layer == AskEvent.ServingLayer.NONE  # decided again, not served from a cache
    return first


@pytest.mark.parametrize("tenant, locale, question, reason", [
    ("acme", "en", "Who founded Acme Outfitters and when?", "company itself (founded)"),  # "founded" is no "found"
    ("acme", "en", "Who is the owner of Acme Outfitters?", "company itself (owner)"),  # "the account owner"
    ("initech", "en", "Can I buy shares of Initech Home?", "company itself (shares)"),  # "share them with ..."
    ("acme", "de", "Wie viel kostet eine Acme-Aktie?", "company itself (aktie)"),  # "Aktie" is not in "aktivieren"
])
def test_a_question_about_the_company_itself_is_handed_off(demo, tenant, locale, question, reason):
    outcome = ask_twice(demo[tenant], question, locale)
    assert reason in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, locale, question, name", [
    ("acme", "en", "Is the Acme app available for Apple Watch?", "Apple Watch"),  # "Apple Pay", "GPS watch"
    ("acme", "de", "Gibt es die Acme-App auch für die Apple Watch?", "Watch"),
    ("acme", "de", "Kann ich die Acme-App auf meiner Samsung Galaxy Watch installieren?", "Samsung"),
    # a platform typed in lower case is a name all the same (was: answered from the Acme Renewed warranty, lu7-10)
    ("acme", "de", "gibt es die acme app auch für android?", "android"),
    ("acme", "en", "is the acme app on android?", "android"),
])
def test_an_app_on_a_device_no_article_names_is_handed_off(demo, tenant, locale, question, name):
    outcome = ask_twice(demo[tenant], question, locale)
    # (a question typed in lower case gets its capitals back: "android" is named "Android")
    assert "never names" in outcome.reason and name.casefold() in outcome.reason.casefold(), outcome.reason


@pytest.mark.parametrize("question, city", [
    ("Gibt es einen Kundenservice vor Ort in Stuttgart?", "Stuttgart"),  # the contact article's "Kundenservice"
    ("Gibt es eine Servicestelle in Wien, wo ich Reparaturen abgeben kann?", "Wien"),  # the repairs article
])
def test_a_city_as_a_support_base_is_handed_off(acme, question, city):
    outcome = ask_twice(acme, question, "de")
    assert f"never names {city}" in outcome.reason, outcome.reason


@pytest.mark.parametrize("question, brand", [
    ("Reparieren Sie auch Jacken von Mammut?", "Mammut"),  # the repairs article states "Jacken" and "reparieren"
    ("Passt Ihr Ladekabel an ein Samsung-Handy?", "Samsung"),  # the two-factor article's "Handy"
    ("Verkaufen Sie Garmin-Navigationsgeräte?", "Garmin"),
])
def test_a_named_device_brand_in_german_is_handed_off(acme, question, brand):
    outcome = ask_twice(acme, question, "de")
    assert f"never names {brand}" in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, locale, question", [
    ("acme", "en", "Can I pay with Apple Pay?"),  # a name the help centre has, as a phrase
    ("acme", "de", "Liefern Sie nach Kanada?"),  # a place after a preposition that an article names
    ("acme", "de", "Wie lange dauert der Expressversand nach Deutschland?"),
    ("initech", "en", "How much does the Pro plan cost?"),
])
def test_names_the_help_centre_has_are_still_answered(demo, tenant, locale, question):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=demo[tenant].pk), locale), question)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason


@pytest.mark.parametrize("question, article", [
    # was: handed off, "the help centre never names MwSt" (the articles say "Umsatzsteuer")
    ("Wie viel MwSt. steht auf meiner Quittung?", "vat-invoices-and-tax-documents"),
])
def test_a_german_customers_word_for_what_the_articles_call_otherwise_is_answered(acme, question, article):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=acme.pk), "de"), question)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
    assert outcome.citations[0]["article_id"] == article, outcome.citations


def test_a_german_compound_of_the_help_centres_words_is_no_name(acme):
    """Was: handed off, "the help centre never names Handynummer" (blind set 20's lc20-18, reworded): a German
    compound of words the help centre writes ("Handy", "Nummer") is a noun, not a name, though capitalised; a city is
    still a name (``test_a_city_as_a_support_base_is_handed_off``: "Wien" is no "wie" + n)."""
    from supportbot.conversation import Conversation, Turn

    turns = ("Wie aktiviere ich die Zwei-Faktor-Authentifizierung?",
             "Unter Konto > Einstellungen > Anmeldung & Sicherheit > Zwei-Faktor-Authentifizierung auf „Aktivieren“ "
             "klicken, dann Authenticator-App oder SMS wählen und mit dem 6-stelligen Code bestätigen.",
             "Lieber per SMS. Ich habe aber nur eine Schweizer Handynummer, ich wohne in Basel. Geht das damit?")
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=acme.pk), "de"), Conversation(tuple(
        Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turns))))
    assert "never names" not in outcome.reason, outcome.reason
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason


@pytest.mark.parametrize("question", [
    # was: handed off, "the help centre never names Versehen": "aus Versehen" (by mistake) is a fixed phrase
    "Ich habe aus Versehen zwei Jacken bestellt. Kann ich eine davon stornieren?",
])
def test_a_german_fixed_phrase_after_a_preposition_is_no_name(acme, question):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=acme.pk), "de"), question)
    assert "never names" not in outcome.reason, outcome.reason
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason


@pytest.mark.parametrize("tenant, question, article", [
    # was: handed off, "the help centre never names URL" (blind set 21's lf21-50, reworded): a common noun in
    # capitals, which the articles write as a link
    ("initech", "I'm connecting my smart-home tools to the developer API. What's the base URL I send requests to?",
     "developer-api-keys"),
    # was: handed off, "never states ... whitelist" (lf21-14, reworded): the articles "allow" the sender
    ("acme", "Which sender address should our IT whitelist so the password reset email gets through?",
     "password-reset"),
])
def test_a_customers_everyday_word_for_what_the_articles_call_otherwise_is_answered(demo, tenant, question, article):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=demo[tenant].pk), "en"), question)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
    assert outcome.citations[0]["article_id"] == article, outcome.citations


def test_a_common_noun_in_capitals_is_no_name_and_a_superlative_or_enough_is_no_subject():
    from retrieval.subject import name_phrases, subject_terms

    assert name_phrases("what's the base URL i send the requests to?", "english") == []
    assert name_phrases("Kann ich die Rechnung als PDF bekommen?", "german") == []
    assert name_phrases("Does the app work on a Garmin watch?", "english") == [("Garmin",)]
    terms = set(subject_terms("english", "What's the longest it can take? Is one exemption certificate enough?"))
    assert not terms & {"longest", "enough"}, terms
    # nor how the customer writes (blind set 23: "Can he call the Plus priority phone number as well?", "get rid of my
    # account altogether" were handed off, "the help centre never states well", "altogether")
    terms = set(subject_terms("english", "can he call the priority number as well, tho? Or everyone earlier?"))
    assert not terms & {"well", "tho", "everyon", "earlier"}, terms


def test_a_word_of_an_equivalents_group_states_the_others_and_nothing_else():
    from retrieval.subject import states_same

    assert states_same("german", "mehrwertsteu", {"umsatzsteu", "rechnung"})
    assert states_same("german", "kennwort", {"passwort"}) and states_same("german", "passwort", {"kennwort"})
    assert not states_same("german", "mehrwertsteu", {"steu", "rechnung"})
    assert not states_same("english", "vat", {"tax"})  # English's table has abbreviations only
    assert states_same("english", "max", {"maximum"})
    assert states_same("english", "pictur", {"photo"}) and states_same("english", "whitelist", {"allow"})
    assert not states_same("english", "pictur", {"video"})


@pytest.mark.parametrize("locale, question, fact", [
    # was: handed off, "the help centre never states toronto"
    ("en", "I'm in Toronto – how much does Acme Plus cost per year for Canadian customers?", "CA$65"),
    # was: handed off, "the help centre never names London"
    ("de", "Ich wohne in London. Muss ich bei der Lieferung noch Zoll oder Einfuhrumsatzsteuer bezahlen?",
     "Großbritannien"),
    # was: handed off, "the help centre never states max, what"
    ("en", "Whats the max number of rows in a CSV I can import into a wishlist?", "200"),
])
def test_the_customers_town_and_shorthand_are_no_subject_of_the_question(acme, locale, question, fact):
    """A help centre states its rules by country: the customer's town is where they are, not what they ask about;
    nor are "whats" or "max" words it would have to state."""
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=acme.pk), locale), question)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
    assert fact in outcome.answer, outcome.answer


def test_a_town_becomes_its_country_unless_the_question_is_about_a_place_there():
    from caching.answer_checks.asked import places_as_countries

    assert places_as_countries("I'm in Toronto - how much is Plus?") == "I'm in Canada - how much is Plus?"
    assert places_as_countries("Ich wohne in London.", "de") == "Ich wohne in Großbritannien."
    assert places_as_countries("I live in Fairbanks, Alaska. Shipping?") == "I live in Alaska. Shipping?"
    assert places_as_countries("Hi, I'm in Portland, Oregon") == "Hi, I'm in the US"
    assert places_as_countries("Sam, Leipzig here") == "Germany here"
    # a town the gazetteer does not know, placed "in" a region the help centre names (blind set 12's lf12-20 was
    # handed off: "the help centre never names Whitehorse"); a plan before "in the UK" is no town
    assert places_as_countries("ordering a jacket to Whitehorse in the Yukon") == "ordering a jacket to the Yukon"
    assert places_as_countries("Do you ship Plus in the UK?") == "Do you ship Plus in the UK?"
    # German customers say "Amerika" of the USA (blind set 22's lf22-31 was handed off: "the help centre never names
    # Amerika"); South America is not the USA
    assert places_as_countries("Sitzt euer Kundenservice in Amerika oder hier?", "de") == \
        "Sitzt euer Kundenservice in USA oder hier?"
    for elsewhere in ("Liefert ihr nach Südamerika?", "Liefert ihr nach Süd-Amerika?", "Lateinamerika?"):
        assert places_as_countries(elsewhere, "de") == elsewhere
    for about_the_place in ("Haben Sie eine Filiale in Wien?", "Do you have a store in Toronto?",
                            "Wo in Stuttgart kann ich Acme-Produkte anprobieren?",
                            "Gibt es eine Servicestelle in Wien, wo ich Reparaturen abgeben kann?",
                            "Can I pick up my order in Chicago?", "Haben Sie ein Lager in Dresden?"):
        assert places_as_countries(about_the_place, "de") == about_the_place


def test_a_company_question_needs_a_sentence_stating_it_of_the_company():
    class P:
        def __init__(self, text):
            self.text = text

    assert company_question("Who founded Acme Outfitters?", "english", "Acme Outfitters") == ("founded",)
    assert company_question("Who is the owner of my household?", "english", "Acme Outfitters") == ()  # not the company
    assert company_question("Wer ist der Inhaber Ihrer Firma?", "german", "Acme Outfitters") == ("inhaber",)
    # what the customer tells of themselves is no question about the company (blind set 23's lf23-01 was handed off:
    # "asks about the company itself (owner)"); the company may be named in a sentence before the question
    assert company_question("Our Business account just got approved and I'm the Owner. Where do I make an API key?",
                            "english", "Acme Outfitters") == ()
    assert company_question("I'm curious about Acme Outfitters. Who founded it?", "english", "Acme Outfitters") == \
        ("founded",)
    assert unstated_company_facts("Who founded Acme?", "english", "Acme Outfitters",
                                  [P("Acme Outfitters was founded in 1998 in Denver.")]) == ()
    assert unstated_company_facts("Who founded Acme?", "english", "Acme Outfitters",
                                  [P("We were founded in 1998."), P("Acme ships worldwide.")]) == ("founded",)


def answered_with(acme, question, locale, article):
    """An extractive-looking answer to ``question`` from the first retrieved passage of ``article`` (or the
    first passage), as if the decision had let it through."""
    state = pipeline.prepare(pipeline.Asker(acme, locale), question)
    pipeline.retrieve(state)
    cited = next((p for p in state.passages if p.article_id == article), state.passages[0])
    state.answer = cited.text[:200] + " [1]"
    state.citations = [pipeline.citation(cited, state.article_pks[cited.chunk_id])]
    state.result = pipeline.GenerationResult(text=state.answer, finish_reason="stop", model="extractive",
                                             prompt_tokens=0, completion_tokens=0, cached_tokens=None,
                                             ttft_ms=None, total_ms=0.0)
    state.answerability = Verdict(True, 0.9, 0.1, cited.chunk_id, "answerable (forced)",
                                  passing=frozenset({cited.chunk_id}), storable=frozenset({cited.chunk_id}))
    return state


@pytest.mark.parametrize("locale, question, article, reason", [
    ("en", "Does the Acme app work with a Garmin Fenix?", "order-tracking", "never name Garmin Fenix"),
    ("en", "Is the Acme app available for Apple Watch?", "return-policy", "never name Apple Watch"),
    ("de", "Reparieren Sie auch Jacken von Mammut?", "warranty-and-repairs", "never state Mammut"),
    ("de", "Haben Sie eine Filiale in Leipzig?", "shipping-times-and-costs", "never state Filiale"),
    # most of what the question names, the cited passage never says (twenty-first session: an Express price was cached
    # for whether a delivery before 10 o'clock or a time window can be chosen)
    ("de", "Guten Tag, kann ich bei DHL Express an der Kasse eine Zustellung vor 9 Uhr oder ein festes Zeitfenster "
           "buchen, und was kostet das?", "shipping-times-and-costs", "most of what the question names"),
])
def test_admission_refuses_an_answer_whose_cited_passages_do_not_cover_the_question(acme, locale, question, article,
                                                                                    reason):
    """Defence in depth: the decision is forced to say answerable; admission still refuses to store."""
    state = answered_with(acme, question, locale, article)
    decision = admission.check(state)
    assert decision.disposition == "refused" and decision.reason.startswith("not_answerable"), decision.reason
    assert reason in decision.reason, decision.reason


@pytest.mark.parametrize("locale, question, article", [
    ("en", "How long do I have to return an item?", "return-policy"),
    ("de", "Wie lange dauert der Expressversand nach Deutschland?", "shipping-times-and-costs"),
    # names three things, the passage says two of them
    ("de", "Was kostet der Expressversand mit DHL nach Österreich?", "shipping-times-and-costs"),
    ("en", "Can I pay with Apple Pay?", "payment-methods-and-gift-cards"),
])
def test_admissions_subject_check_passes_an_answer_from_the_article_about_it(acme, locale, question, article):
    state = answered_with(acme, question, locale, article)
    evidence = admission.evidence_of(state)
    assert uncovered_subject(question, evidence.passages_text, locale, acme.name, acme.pk) is None
    assert AnswerableCheck().refusal(evidence) is None


@pytest.mark.parametrize("tenant, question, article, fact", [
    # was: handed off, "the help centre never states earbud, sound"
    ("acme", "Opened my new wireless earbuds and I don't like how they sound. Can I send them back?",
     "return-policy", "faulty"),
    # was: handed off on "air", "fryer", "cheaper" (the help centre names no air fryer)
    ("initech", "The air fryer I bought got cheaper 3 days after it was delivered. Can I get the difference back?",
     "price-match", "7 days"),
    # was: handed off, "the help centre never states pinch, runner, toe"
    ("acme", "Ordered trail runners to Calgary and they pinch my toes. I'm not a Plus member. How much is taken off "
             "my refund for the return label?", "refunds", "CA$7.95"),
    # the question sentence's own condition is told too (was: handed off, "the help centre never states fit"; the
    # blind ninth fact set, lf9-04)
    ("acme", "joined plus last month and ordered a rain jacket after that. how long do i have to send it back if it "
             "doesnt fit?", "return-policy", "60 days"),
    # a name only told, before a question sentence that names what it asks by itself (was: "the help centre never
    # names REI"; the blind sixteenth fact set, in-sample)
    ("acme", "Bought a fleece from you 10 days ago and just saw the exact same one cheaper at REI. Is it too late to "
             "ask for a price match?", "price-match", "14 days"),
    # whom the customer addresses and how they tell it (was: "the help centre never states guy")
    ("acme", "we're an outdoor school in Bozeman and just sent in our application for an Acme Business account. how "
             "long does it usually take you guys to review it?", "business-partner-api", "5 business days"),
    # a name only told, and the question sentence read without it (was: "P=0.059 < 0.334; the help centre never
    # states dev, github, push, repo"; the blind seventeenth fact set, in-sample)
    ("acme", "Our dev accidentally pushed our acme_live_ key to a public GitHub repo this morning. If I click Revoke "
             "in the Business Portal, how quickly does the key actually stop working?", "business-partner-api",
     "1 minute"),
])
def test_the_case_told_before_the_question_is_no_subject_of_it(demo, tenant, question, article, fact):
    """The goods, the reason and the day a customer tells before asking are their case, not what they ask about;
    the answer is shown and, decided on its question sentence alone, never cached."""
    asker = pipeline.Asker(Tenant.objects.get(pk=demo[tenant].pk), "en")
    first, second = pipeline.ask(asker, question), pipeline.ask(asker, question)
    assert first.status == AskEvent.Status.ANSWERED, first.reason
    assert fact in first.answer and article in {c["article_id"] for c in first.citations}, first.answer
    assert second.layer == AskEvent.ServingLayer.NONE  # not cached: its whole reading answered nothing


@pytest.mark.parametrize("question, reason", [
    ("We're buying 20 jackets for our scout troop. Any discount?", "scout"),  # what the purchase is for
    ("I'm a teacher. Do you have a discount for me?", ""),  # who the customer is
    ("I'll be abroad for four months. Can I pause my Acme Plus membership instead of cancelling it?", "paus"),
    ("I want to rent a kayak for the weekend. Is that possible?", ""),  # the question sentence asks nothing itself
    # what the customer wants done (was, read as its question sentence alone: the repairs' "Typical prices")
    ("I want to rent a tent. What are your prices?", "rent"),
    ("We'd like to hire a kayak for the weekend. How much does it cost?", "hire"),
    ("I have an Android phone. Can I use the app on it?", "Android"),  # a name
])
def test_what_a_told_case_says_of_the_customer_stays_the_subject(acme, question, reason):
    outcome = ask_twice(acme, question, "en")
    assert reason in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, question", [
    # the countries article names military addresses, not a discount (the blind ninth unanswerable set)
    ("acme", "hey im active duty and ship everything to an APO address. do you guys have a military discount?"),
    # the transfers article states the cap in dollars, no pounds (the blind sixteenth unanswerable set)
    ("acme", "im in the UK and want to move a chunk of store credit to my daughter in our household. whats the 30 "
             "day cap in pounds? the page only says $2,000"),
    # the tracking article's SMS updates are in no language it names
    ("initech", "Can I get the SMS order updates in Spanish? My English isn't great and I always shop in the Mexico "
                "store."),
])
def test_a_question_read_without_the_names_told_needs_an_article_stating_what_it_asks(demo, tenant, question):
    """A question sentence read without the names told before it is answered only by an article that states what it
    asks about: every name of it and all but a small share of the rest."""
    asker = pipeline.Asker(Tenant.objects.get(pk=demo[tenant].pk), "en")
    assert pipeline.ask(asker, question).status == AskEvent.Status.NOT_COVERED


def test_an_article_states_an_ask_by_its_names_and_most_of_its_weight():
    from retrieval.subject import Subject
    from supportbot.answerability.decision import _states_ask
    subject = Subject(terms=("price", "match", "compar", "add", "militari", "discount"),
                      weights={"price": 2.0, "match": 3.0, "compar": 4.5, "add": 2.3, "militari": 4.5, "discount": 4.0})
    lexemes = frozenset({"price", "match", "compar", "militari"})
    question = "do you compare the price with their shipping added? military discount, Spanish?"
    assert _states_ask("english", {"price", "match", "compar", "add"}, lexemes, subject, question)  # 2.3 of 11.8
    assert not _states_ask("english", {"militari", "discount"}, lexemes, subject, question)  # 4.0 of 8.5
    spanish = Subject(terms=("sms", "spanish"), weights={"sms": 9.0, "spanish": 1.0})
    assert not _states_ask("english", {"sms", "spanish"}, frozenset({"sms"}), spanish, "SMS updates in Spanish?")


def test_a_question_is_split_into_its_told_case_and_its_question_sentence():
    from retrieval.subject import told_case

    told = told_case("opened my wireless earbuds, dont like the sound. can i send them back?")
    assert told.asked == "can i send them back?"
    assert "earbuds" in told.released and told.held == ()
    told = told_case("We're buying 20 jackets for our scout troop. Any discount?")
    assert told.held == ("for", "our", "scout", "troop") and "jackets" in told.released
    assert told_case("I have an Android phone. Can I use the app?").held == ("Android",)
    assert told_case("I'm a teacher. Do you have a discount for me?") is None  # who the customer is: all held
    # who the customer is stays, what they are doing is the case (was: "never states espresso"; lf10-33)
    told = told_case("I'm a Premier member buying a new espresso machine. How much would Care+ cost me?")
    assert told.held == ("I'm", "a", "Premier", "member") and "espresso" in told.released
    assert told_case("I'm a wedding planner. Do you have a discount?") is None  # a noun, not what they are doing
    assert told_case("My son is 16 - can I add him to my team?") is None
    assert told_case("I want to rent a tent. What are your prices?") is None  # what the customer wants: held
    # what is told after the question sentence is the case as well (twenty-first session; was: nothing told before)
    told = told_case("Can I return it? I bought it last week.")
    assert told.asked == "Can I return it?" and "bought" in told.released
    told = told_case("when do initech api keys expire? built a little home assistant integration")
    assert told.asked == "when do initech api keys expire?" and "integration" in told.released
    # ... but never a rewrite's conversation words nor an unresolved follow-up's earlier turns (the decision reads the
    # question's own ask: ``after=False``; test_answer_facts' follow-up after a hand-off is the whole path)
    assert told_case("how much would it cost per day? (about: rent out kayak weekend)", after=False) is None
    assert told_case("and how much per day? | Do you rent out kayaks? | Sorry, we don't cover this.",
                     after=False) is None
    assert told_case("verschickt ihr klimaneutral, z.b. mit dhl gogreen?") is None  # "z.b." ends no sentence
    # a condition after or before what is asked is the case; of a sentence, only the clause saying what the
    # customer wants stays ("I want to return it"), not the rest ("it works fine")
    told = told_case("can i return it if it doesnt fit?")
    assert told.asked == "can i return it?" and told.released == ("it", "doesnt", "fit")
    assert told_case("If it breaks, do I have to go without a machine?").asked == "do I have to go without a machine?"
    told = told_case("I opened a coffee machine, it works fine but I want to return it. What gets taken off my refund?")
    assert "fine" in told.released and "return" in told.held and "fine" not in told.held
    assert "want" not in told.held  # the words saying that they want it are not what they want
    # what the question sentence tells before its own ask, at a comma, is told too (the blind sixteenth conversations)
    told = told_case("its $600 and I'm off camping with no signal til sunday, what happens if i don't click it in "
                     "time?")
    assert told.asked == "what happens?" and {"camping", "signal"} <= set(told.released)
    told = told_case("honestly I'm having second thoughts about the whole thing, can I still cancel it for free?")
    assert told.asked == "can I still cancel it for free?" and "thoughts" in told.released
    # ... but not a question of its own before another ("Is there a charge for that, and how much is it?")
    assert told_case("Is there an extra charge for big stuff like that, and how much is it?") is None
    # a reason is the case, not who the customer is ("Thinking about Plus mostly | because I hate waiting on hold")
    told = told_case("Thinking about Plus mostly because I hate waiting on hold. How long is the wait on the line?")
    assert "hate" in told.released and "Plus" in told.held and "Thinking" not in told.held
    assert told_case("Can I return it if I'm a Plus member?") is None  # who the customer is: held


def test_a_german_question_typed_in_lower_case_gets_its_nouns_capitals_back(acme):
    from retrieval.services import active_generation_cached
    from retrieval.subject import truecased

    generation = active_generation_cached()
    assert truecased(generation, acme.pk, "de", "wie viele lumen hat eure stirnlampe auf höchster stufe?") \
        == "wie viele Lumen hat eure Stirnlampe auf höchster Stufe?"
    assert truecased(generation, acme.pk, "de", "könnt ihr die bestellung als geschenk verpacken?") \
        == "könnt ihr die Bestellung als Geschenk verpacken?"
    for as_typed in ("Wie lange gilt die Garantie für eine Stirnlampe?", "how long is the warranty on a headlamp?"):
        assert truecased(generation, acme.pk, "de" if as_typed[0] == "W" else "en", as_typed) == as_typed


@pytest.mark.parametrize("question, reason", [
    # was: answered from the warranty article's batteries (no noun read in a question typed in lower case)
    ("wie viele lumen hat eure stirnlampe auf höchster stufe?", "lum"),
    ("sucht ihr für die weihnachtszeit noch aushilfen im lager?", "Weihnachtszeit"),
])
def test_a_german_question_typed_in_lower_case_about_what_no_article_states_is_handed_off(acme, settings, question,
                                                                                        reason):
    settings.PROPERTY_CHECK_LOCALES = []  # "lumen" is a property too (its own check): this is the nouns' test
    outcome = ask_twice(acme, question, "de")
    assert reason in outcome.reason, outcome.reason


def test_a_german_question_typed_in_lower_case_is_answered_and_never_cached(acme):
    """Its nouns are a guess: the answer is shown, and the next customer's question is answered again."""
    asker = pipeline.Asker(Tenant.objects.get(pk=acme.pk), "de")
    question = "wie lange gilt die garantie auf eine stirnlampe?"
    first, second = pipeline.ask(asker, question), pipeline.ask(asker, question)
    assert first.status == AskEvent.Status.ANSWERED and "2 Jahre" in first.answer, first.answer
    assert second.layer == AskEvent.ServingLayer.NONE


@pytest.mark.parametrize("tenant, question, action", [
    # was: answered from the lost-card sentence, and served from the exact cache on the second ask (lu8-05)
    ("acme", "can i reload my acme e-gift card with more money? want to add to the balance", "reload"),
    ("acme", "Could you wrap my order as a gift?", "wrap"),
    ("acme", "Can I pause my Plus membership over the winter?", "pause"),
    ("initech", "Do you install a new TV on the wall when you deliver it?", "install"),
])
def test_an_action_the_help_centre_never_states_is_handed_off(demo, tenant, question, action):
    """What "can I ...", "could you ...", "do you ..." ask for is the verb: a passage that shares the rest ("gift
    card", "balance") does not answer it."""
    outcome = ask_twice(demo[tenant], question, "en")
    assert f"asks to {action}" in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, question, action", [
    # was: answered from the closing article, which shares "close", "account" and "email" and says nothing of signing
    # up again (lu11-24)
    ("initech", "If I close my account now, can I sign up again later with the same email address?", "sign up"),
    # was: answered with the household article's invitations (lu14-04)
    ("acme", "I'm the household owner but my partner wants to take over paying for Plus. Can I hand the household over "
             "to her?", "hand over"),
])
def test_an_action_no_answering_article_speaks_of_is_handed_off(demo, tenant, question, action):
    outcome = ask_twice(demo[tenant], question, "en")
    assert f"can {action}, of which no answering article speaks" in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, question", [
    ("acme", "Can I return an opened item?"),
    ("initech", "Do you ship to Mexico?"),
    ("acme", "Can I still cancel my order?"),
])
def test_an_action_the_help_centre_states_is_answered(demo, tenant, question):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=demo[tenant].pk), "en"), question)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason


@pytest.mark.parametrize("question, action", [
    # was: answered from the Plus article's trial and renewal sentences (lu14-11, lu13-09)
    ("Kann ich meine Plus-Mitgliedschaft für ein paar Monate pausieren? Ich bin ab März im Ausland.", "pausieren"),
    ("Kann man eine Plus-Mitgliedschaft verschenken? Mein Bruder hat bald Geburtstag.", "verschenken"),
    # the verb ends its clause, after a dash too (lu14-09)
    ("Meine Bestellung steht schon auf „In Bearbeitung“ – kann ich trotzdem noch von Standard auf Express upgraden?",
     "upgraden"),
])
def test_a_german_action_the_help_centre_never_states_is_handed_off(acme, question, action):
    """German puts the asked verb last: "Kann man ... verschenken?" asks to give it as a present, which no article
    states, whatever the membership's article says of the rest."""
    outcome = ask_twice(acme, question, "de")
    assert f"asks to {action}" in outcome.reason, outcome.reason


@pytest.mark.parametrize("question", [
    "Kann ich Over-Ear-Kopfhörer zurückschicken, obwohl ich sie schon ausgepackt habe?",  # "schicken ... zurück"
    "Darf ich einem Garantiefall auch ein Video beifügen?",  # the article "lädt ... hoch": an equivalent
    "Kann ich die Plus-Mitgliedschaft vorher gratis ausprobieren?",  # "testen"
    "Darf ich ein altes Passwort wiederverwenden?",  # "verwenden" without its particle
])
def test_a_german_action_the_help_centre_states_in_its_words_is_answered(acme, question):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=acme.pk), "de"), question)
    assert "asks to" not in outcome.reason, outcome.reason


@pytest.mark.parametrize("question, verb", [
    ("Kann man eine Plus-Mitgliedschaft verschenken?", "verschenken"),
    ("kann ich mich in der app mit face id anmelden statt jedes mal den code einzutippen?", "anmelden"),
    ("Muss ich die Uhr trotzdem erst einschicken, bevor ich eine neue bekomme?", "einschicken"),
    ("Wie lange kann man Plus gratis ausprobieren?", None),  # a question for a length of time, not yes or no
    ("kann ich mir auch einen rückruf holen?", None),  # a verb that says too little
    # verbs whose object is what is asked (blind set 21, lf21-33 and lc21-15: handed off, "asks to beantragen",
    # "asks to rechnen, which the help centre never states")
    ("Muss ich die Erstattung irgendwo beantragen?", None),
    ("Muss ich dann mit Zollgebühren rechnen?", None),
])
def test_the_verb_a_german_yes_no_question_asks_for(question, verb):
    from retrieval.subject import german_asked_verb

    assert german_asked_verb(question) == verb


def test_a_customers_deadline_is_the_articles_window_and_small_talk_is_no_subject():
    from retrieval.subject import states_same, subject_terms

    assert states_same("english", "deadlin", {"window"})
    assert not states_same("english", "deadlin", {"return"})
    terms = subject_terms("english", "great. whats my deadline to return it if I don't like something? got it 3 weeks ago")
    assert {"great", "someth", "ago"}.isdisjoint(terms) and {"deadlin", "return"} <= set(terms), terms


@pytest.mark.parametrize("tenant, question, thing", [
    # was: answered with the showroom's opening hours, and served from the exact cache on the second ask (lu9-23)
    ("initech", "Is there parking at the Downtown Office showroom? Planning to drop off a return Saturday.", "parking"),
    ("acme", "Do you offer layaway plans?", "layaway"),
    ("initech", "Is there a referral bonus if I get a friend to sign up for Initech Home?", "referral"),
])
def test_a_thing_the_help_centre_never_states_is_handed_off_when_asked_whether_there_is_one(demo, tenant, question,
                                                                                            thing):
    """What "is there ...", "do you offer ...", "any ...?" ask whether the company has is the first word after the
    determiner: a passage that shares the rest ("the Downtown Office showroom", "drop off a return") does not say."""
    outcome = ask_twice(demo[tenant], question, "en")
    assert f"asks whether there is {thing}" in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, question", [
    ("acme", "Is there a free trial for Plus?"),
    ("initech", "Is there a minimum order for Affirm financing?"),  # an attribute: the next word ("order") is asked
    ("acme", "Do you offer express shipping to Canada?"),
])
def test_a_thing_the_help_centre_states_is_answered_when_asked_whether_there_is_one(demo, tenant, question):
    from retrieval.subject import unstated_thing, subject_of
    from retrieval.services import active_generation_cached

    tenant_id = Tenant.objects.get(pk=demo[tenant].pk).pk
    assert unstated_thing("en", question, subject_of(active_generation_cached(), tenant_id, "en", question, [])) is None
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=tenant_id), "en"), question)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason


def test_everyday_words_for_the_articles_own_are_stated_and_a_time_of_day_is_no_subject():
    from retrieval.subject import states_same, subject_terms

    assert states_same("english", "ring", {"call"}) and states_same("english", "break", {"faulti"})
    assert not states_same("english", "ring", {"email"})
    terms = subject_terms("english", "Could I ring on Saturday morning?")
    assert "morn" not in terms and "ring" in terms, terms


def test_reported_speech_and_anywhere_are_no_subject(initech):
    """"fedex says ...", "can't find it anywhere" (was: handed off, "the help centre never states anywher, say"; the
    blind ninth fact set, lf9-42)."""
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=initech.pk), "en"),
                           "fedex says my order was delivered but i can't find it anywhere. what do i do?")
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
    assert "24 hours" in outcome.answer, outcome.answer


def test_a_run_of_the_help_centres_own_names_is_named_and_the_customers_house_is_an_address(demo):
    """"an Acme Renewed GPS watch": "Acme Renewed" and "GPS" are names the help centre writes, so the run is no
    unknown name (was: "the help centre never names Renewed GPS", lf9-05), while "Apple Watch" still is (it never
    writes "Watch" as a name); "my house in Anchorage" is an address in Alaska (lf9-30)."""
    from retrieval.subject import states_same

    acme = Tenant.objects.get(pk=demo["acme"].pk)
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), "Got an Acme Renewed GPS watch. Can I still return it?")
    assert "never names" not in outcome.reason, outcome.reason
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), "Does the Acme Trail app work on my Apple Watch?")
    assert outcome.status == AskEvent.Status.NOT_COVERED and "Apple Watch" in outcome.reason, outcome.reason
    assert states_same("english", "hous", {"address"})


@pytest.mark.parametrize("tenant, locale, question", [
    # was: answered with the return policy (P=0.617) and the warranty's batteries (the answerability sets' "specification"
    # class; bench.answerability)
    ("acme", "en", "How long does the battery of the trail GPS watch last?"),
    ("acme", "de", "Wie lange hält der Akku der GPS-Uhr?"),
    ("acme", "de", "wie schwer ist euer 4-personen-zelt ungefähr? will wissen ob ich das noch im rucksack tragen kann"),
])
def test_a_products_property_the_help_centre_never_states_is_handed_off(demo, tenant, locale, question):
    """A product's weight, battery life or loudness is a specification, stated (if at all) in the property's own words;
    a passage sharing the product ("batteries", "tent") does not answer it."""
    outcome = ask_twice(demo[tenant], question, locale)
    assert "asks for a product's property" in outcome.reason, outcome.reason


@pytest.mark.parametrize("tenant, locale, question", [
    ("initech", "en", "Premier member here. My new TV is well over 50 lb. What does freight cost for me?"),
    ("acme", "de", "Wie lange habe ich Zeit, eine Bestellung zurückzuschicken?"),
])
def test_a_question_naming_no_property_is_not_read_as_a_specification(demo, tenant, locale, question):
    from retrieval.services import active_generation
    from retrieval.subject import unstated_property

    assert unstated_property(active_generation(), demo[tenant].pk, locale, question) is None
