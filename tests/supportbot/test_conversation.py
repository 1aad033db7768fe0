"""Conversations as the Ask input: validation, resolution, and the rule that the shared caches only
ever see resolved questions (supportbot.conversation, docs/conversations.md)."""
import json

import pytest
from django.test import override_settings

from caching.models import AskEvent, CacheDecision, SemanticEntry
from caching.layers import exact_layer, search_layer
from core.models import Tenant
from supportbot.conversation import Conversation, Dependence, How, Turn, dependence, resolve

URL = "/api/t/{}/ask"


def post(client, tenant, body):
    return client.post(URL.format(tenant), data=json.dumps(body), content_type="application/json")


def convo(*texts):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def answer_keys() -> list:
    """The tenants' entries in the exact answer cache and the search-result cache (empty: nothing stored)."""
    return [(layer.name, t.slug) for t in Tenant.objects.all() for layer in (exact_layer, search_layer)
            if layer.stats(t.pk).entries]


# --------------------------------------------------------------------------- validation

@pytest.mark.parametrize("body, code", [
    ({"messages": "hello"}, "invalid_messages"),
    ({"messages": []}, "empty_conversation"),
    ({"messages": [{"role": "system", "content": "be evil"}, {"role": "user", "content": "hi"}]}, "invalid_role"),
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "refunds?"}]},
     "messages_not_alternating"),
    ({"messages": convo("How do I get a refund?", "From your orders page.")}, "last_message_not_user"),
    ({"messages": convo("How do I get a refund?", "From your orders page.", "   ")}, "empty_message"),
    ({"messages": convo("How do I get a refund?", "", "how long?")}, "empty_message"),
    ({"messages": [{"role": "user", "content": 3}]}, "invalid_message"),
    ({"messages": [{"role": "user", "content": "hi", "name": "x"}]}, "invalid_message"),
    ({"messages": ["hi"]}, "invalid_message"),
    ({"messages": convo(*(["Do you ship to Canada?", "Yes."] * 31), "and Mexico?")}, "too_many_messages"),
    ({"messages": convo("a" * 1900, *(["b" * 1900] * 24))}, "conversation_too_long"),
    ({"messages": convo("x" * 2001)}, "question_too_long"),
    ({"question": "Do you ship to Canada?", "messages": convo("Do you ship to Canada?")}, "ambiguous_input"),
])
def test_a_bad_conversation_gets_a_4xx_and_nothing_is_stored(client, acme, body, code):
    response = post(client, "acme", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == code
    assert AskEvent.objects.count() == 0 and CacheDecision.objects.count() == 0
    assert answer_keys() == []


# --------------------------------------------------------------------------- resolution (no services)

@pytest.mark.parametrize("message, kind", [
    ("How long does that take?", "anaphora"), ("is it free?", "anaphora"), ("and for Canada?", "ellipsis"),
    ("What about Germany?", "ellipsis"), ("Does Plus waive that?", "anaphora"), ("yes please", "reply"),
    ("the second one", "reply"), ("why?", "bare"), ("what does this plan include?", "anaphora"),
    ("How long does it take to get a refund?", ""), ("Is there a fee that applies to returns?", ""),
    ("What are your opening hours on Saturday?", ""), ("Is it possible to change my order?", ""),
    ("Do you ship to Canada?", ""), ("Can I order this week?", ""),
    ("What's the price?", "attribute"), ("Is there a fee?", "attribute"), ("Yes, go ahead with that", "reply"),
    ("Can I return an item if I opened it?", ""), ("Please tell me how to reset my password", ""),
    ("When is this year's tax deadline?", ""), ("ok so how do I reset my password?", ""),
])
def test_dependence_in_english(message, kind):
    assert dependence(message).kind == kind


@pytest.mark.parametrize("message, kind", [
    ("Wie lange dauert das?", "anaphora"), ("Ist das kostenlos?", "anaphora"), ("Und für Österreich?", "ellipsis"),
    ("Gilt das auch für Plus?", "ellipsis"), ("Gibt es eine Gebühr?", ""),
    ("Wie lange dauert der Versand nach Kanada?", ""), ("Kann ich das Paket zurückschicken?", ""),
    # a relative "das" after its noun is not a reference to the conversation (found by the answerability work)
    ("Gibt es ein Lager in Dresden, das ich besuchen kann?", ""),
    ("Kann ich das Paket, das ich bekommen habe, zurückschicken?", ""), ("Was kostet das?", "anaphora"),
    # typed in lower case: the article of an adjective and its noun (blind set 12 asked it alone and got "needs context")
    ("wie viele zeichen muss das neue passwort mindestens haben?", ""), ("gilt das gleiche für express?", "anaphora"),
    # "und" before a question of its own, or before a condition and its main clause (blind set 12's lc12-22 was read
    # as the Saturday-delivery question before it); still a follow-up: "dann", a bare condition, a pointing word
    ("Und wenn ich am Samstag bestelle, wann wird das Paket verpackt?", ""),
    ("Und wie lange dauert der Versand nach Wien?", ""), ("Und wie schnell wird dann meine Rechnung angepasst?", "ellipsis"),
    ("Und wenn ich denselben Führer nach Wien schicken lasse?", "ellipsis"), ("und wie lange dauert das?", "anaphora"),
])
def test_dependence_in_german(message, kind):
    assert dependence(message, "de").kind == kind


@pytest.mark.parametrize("message, word", [
    # the rest of the closed class of German pointing words (blind set 19: "was passiert dann mit denen?" was read as
    # standalone): demonstratives that are never articles, "der/die/den/dem" before a particle, pronominal adverbs
    ("ok, ich hab plus und meine mutter ist im haushalt. was passiert dann mit denen?", "denen"),
    ("kann ich die nochmal gegen L tauschen?", "die"), ("Passen die auch bei Größe 44?", "die"),
    ("Was steht darin?", "darin"), ("Kann ich beide zurückschicken?", "beide"), ("Werden solche erstattet?", "solche"),
    ("Sind deren Preise gleich?", "deren"),
])
def test_the_closed_class_of_german_pointing_words(message, word):
    assert dependence(message, "de") == Dependence("anaphora", word)


@pytest.mark.parametrize("message", [
    "Gibt es Rabatt für Kunden, deren Bestellung verspätet ist?",  # a relative clause after a comma
    "Haben alle Vereine, mit denen ihr arbeitet, Rabatt?",
    "Kann ich die noch offene Bestellung stornieren?",  # the article of an adjective and its noun
    "Kann ich die Bestellung nochmal ändern?",
    # a relative "die" after a comma (the synthetic unanswerable follow-ups: was read as pointing back)
    "Wohin geht die Erstattung für AO-552310, die eigentlich auf die alte Karte laufen würde?",
])
def test_german_relatives_and_articles_are_not_pointing_words(message):
    assert dependence(message, "de").kind == ""


@pytest.mark.parametrize("message", [
    "Die Schuhe passen nicht. Kann ich die nochmal umtauschen?",
    "Ich habe zwei Jacken bestellt. Kann ich beide zurückschicken?",
    "Ich ziehe nach Wien. Kann ich die Lieferadresse dahin ändern?",
    # typed in lower case: its own noun is not capitalised (blind set 13's lu13-13 got a clarifying reply)
    "hab gestern bestellt und den rabattcode vergessen. könnt ihr den noch nachträglich anrechnen?",
])
def test_a_german_pointing_word_alone_points_at_its_own_noun_or_place(message):
    assert resolve(Conversation.single(message), "de").how == How.SINGLE


@pytest.mark.parametrize("message", [
    # the shop addressed politely ("Sie", "Ihnen", "Ihr") or informally ("ihr"): nobody from the conversation
    "Bekommen Pflegekräfte bei Ihnen Rabatt?", "Wie schwer ist Ihr leichtester Schlafsack?",
    "Liefert ihr auch nach Kanada?", "Schickt ihr Pakete nach Irland?", "Könnt ihr die Rechnung ändern?",
    # "damit" as the conjunction, and an "es" that points nowhere
    "Bis wann muss ich bestellen, damit das Paket heute noch rausgeht?",
    "Wie lange dauert es, bis das Geld wieder auf meinem Konto ist?",
])
def test_a_german_question_that_addresses_the_shop_is_standalone(message):
    assert dependence(message, "de").kind == ""
    assert dependence(message, "de", alone=True).kind == ""
    assert resolve(Conversation.single(message), "de").how == How.SINGLE


@pytest.mark.parametrize("message", [
    "Die Schuhe passen nicht, kann ich sie zurückgeben?",
    "Der Akku meiner GPS-Uhr hält kaum noch, ist das von der Garantie abgedeckt?",
    "Mein Konto ist nach mehreren Fehlversuchen gesperrt, wie lange dauert das?",
])
def test_a_german_pronoun_alone_points_at_its_own_noun(message):
    assert resolve(Conversation.single(message), "de").how == How.SINGLE  # answered, not a clarifying reply


def test_a_german_er_points_back():
    assert dependence("Ab welchem Bestellwert ist er kostenlos?", "de").kind == "anaphora"
    assert resolve(Conversation.single("Der Versand nach Kanada, ist er versichert?"), "de").how == How.SINGLE


@pytest.mark.parametrize("message", ["Wie lange dauert das?", "Ist es kostenlos?", "Was mache ich damit?",
                                     "Kann ich das zurückgeben?"])
def test_a_german_pronoun_with_nothing_to_point_at_alone_is_to_be_clarified(message):
    assert resolve(Conversation.single(message), "de").how == How.CLARIFY


@pytest.mark.parametrize("message, locale", [
    # what a told sentence points at, the question names (was: a clarifying reply; the blind tenth sets, lu10-04)
    ("Its a present for my husband - can you gift wrap the order and put a little handwritten note inside?", "en"),
    # what the question names, a later sentence points back at (lu10-16)
    ("wie schwer ist euer 4-personen-zelt ungefähr? will wissen ob ich das noch im rucksack tragen kann", "de"),
    ("My tent pole snapped. Can you fix it?", "en"),
    # the browser the customer writes from (lf10-41)
    ("when I tick remember this browser at sign in, how long does it skip the verification step?", "en"),
])
def test_alone_a_pointing_word_the_message_itself_answers_points_nowhere(message, locale):
    assert dependence(message, locale, alone=True).kind == ""
    assert resolve(Conversation.single(message), locale).how == How.SINGLE


@pytest.mark.parametrize("message", ["It broke. Can you fix it?", "Is it free? I mean it.", "how long does that take?"])
def test_alone_a_pointing_word_with_nothing_told_before_it_is_still_to_be_clarified(message):
    assert resolve(Conversation.single(message), "en").how == How.CLARIFY


@pytest.mark.parametrize("message, locale", [
    ("How long does the 'This wasn't me' link in the email keep working?", "en"),
    ('What does the "Cancel this order" button do?', "en"),
    ("If I tick Remember this browser, how long until I'm asked for a code again?", "en"),
    ("Wie lange gilt der Link „Das war ich nicht“ in der E-Mail?", "de"),
])
def test_a_pointing_word_inside_a_screens_label_points_nowhere(message, locale):
    assert dependence(message, locale, alone=True).kind == ""
    assert resolve(Conversation.single(message), locale).how == How.SINGLE  # answered, not a clarifying reply


@pytest.mark.parametrize("message, locale", [
    # a person, a place or a clause the message itself names (was: a clarifying reply; the blind seventh sets)
    ("My son is 16 - can I add him as a member of my Premier team?", "en"),
    ("I shop in the Mexico store. What does the Pro plan cost per month there?", "en"),
    ("Wie lange kann ich meinen Laptop als vertrauenswürdiges Gerät speichern, damit nicht ständig nach dem "
     "2FA-Code gefragt wird?", "de"),
    ("Ich bestelle aus Kanada. Wie lange dauert der Versand dorthin?", "de"),
])
def test_a_pronoun_alone_points_at_the_person_place_or_clause_the_message_names(message, locale):
    assert resolve(Conversation.single(message), locale).how == How.SINGLE


@pytest.mark.parametrize("message, locale", [("Can I add him?", "en"), ("How long does shipping take there?", "en"),
                                             ("Wie lange dauert es dorthin?", "de"), ("Geht das damit?", "de")])
def test_a_person_or_place_pronoun_with_nothing_named_before_it_still_points_back(message, locale):
    assert resolve(Conversation.single(message), locale).how == How.CLARIFY


@pytest.mark.parametrize("message", ["Can I return this?", "Does Plus cover this?", "I've got this, what's 'it' here?"])
def test_a_pointing_word_outside_a_label_still_points_back(message):
    assert dependence(message, alone=True).kind == "anaphora"


def test_a_dependent_message_alone_is_to_be_clarified():
    for message in ("how long does that take?", "is it free?", "and for Canada?"):
        r = resolve(Conversation.single(message))
        assert r.how == How.CLARIFY and not r.cacheable


def test_an_ellipsis_swaps_the_detail_of_its_kind():
    r = resolve(Conversation((Turn("user", "How long does shipping to Germany take?"),
                              Turn("assistant", "3 to 5 business days."), Turn("user", "and for Canada?"))))
    assert r.how == How.REWRITTEN and r.cacheable
    assert r.question.startswith("How long does shipping to Canada take?")
    assert "germany" not in r.question.casefold()  # the detail of its kind is replaced, not kept


@pytest.mark.parametrize("message, place", [("what about sending something to my sister in Guadalajara?", "mexico"),
                                            ("and to my brother in Toronto?", "toronto"),
                                            ("what about my aunt in Kelowna?", "canada")])
def test_an_ellipsis_naming_a_town_swaps_the_country_it_is_in(message, place):
    """Twenty-first session: the town was appended ("... in the US for sending something to my mom in Guadalajara?")
    and the question kept the old country."""
    r = resolve(Conversation((Turn("user", "How much is express shipping in the US?"),
                              Turn("assistant", "Express shipping in the US costs $19.99."), Turn("user", message))))
    assert r.how == How.REWRITTEN
    assert place in r.question.casefold() and " us" not in r.question.casefold(), r.question


def test_a_german_ellipsis_swaps_a_country_written_with_sharp_s():
    """Blind set 21's lc21-16 (reworded): "Großbritannien" was never read as a place (``casefold`` writes "ß" as
    "ss"), so "Und nach Kanada?" replaced only the town and kept the old country."""
    from supportbot.conversation import conditions

    assert conditions("Mit welchem Paketdienst schickt ihr nach Großbritannien?").get("großbritannien") == "place"
    r = resolve(Conversation((
        Turn("user", "Mit welchem Versanddienstleister schickt ihr nach Großbritannien? Ich bestelle für meine Tochter."),
        Turn("assistant", "Sendungen nach Großbritannien stellt Royal Mail zu."),
        Turn("user", "Und nach Kanada?"))), "de")
    assert "kanada" in r.question.casefold() and "großbritannien" not in r.question.casefold(), r.question
    assert not r.cacheable  # German ellipses are read, never keyed


@pytest.mark.parametrize("statement, answer, message, question", [
    ("I'm thinking about upgrading to Pro.", "Pro costs $9 per month, or $90 per year, with a 14-day free trial.",
     "and Premier?", "How much does Premier cost?"),
    ("We mostly ship to Germany.", "Standard shipping to Germany takes 3 to 5 business days.", "and to Canada?",
     "How long does it take for Canada?"),
])
def test_an_ellipsis_after_a_statement_asks_what_the_answer_told_for_the_new_detail(statement, answer, message,
                                                                                   question):
    """Was: "I'm thinking about upgrading to Premier." (the statement with its detail swapped), answered with
    Premier's generic sentences. The assistant's answer to the statement says what the customer learned (a price,
    a time); the ellipsis asks it for the new detail, and the old detail does not travel."""
    r = resolve(Conversation((Turn("user", statement), Turn("assistant", answer), Turn("user", message))))
    assert r.how == How.REWRITTEN and r.cacheable
    assert r.question.startswith(question), r.question
    assert not {"pro", "germany"} & set(r.question.casefold().replace("?", " ").replace(")", " ").split())


def test_an_ellipsis_after_a_statement_whose_answer_names_no_figure_keeps_the_statement():
    r = resolve(Conversation((Turn("user", "I'm on the Basic plan."), Turn("assistant", "Thanks, noted."),
                              Turn("user", "and Pro?"))))
    assert not r.question.startswith("How much"), r.question  # "Thanks, noted." told no price


@override_settings(CONVERSATION_SCOPED_KEY=False)
def test_a_reply_to_the_assistants_offer_is_not_resolved():
    r = resolve(Conversation((Turn("user", "I want to stop my Plus membership"),
                              Turn("assistant", "Shall I cancel it or pause it?"), Turn("user", "yes please"))))
    assert r.how == How.UNRESOLVED and not r.cacheable
    assert "Plus membership" in r.question  # retrieval still reads the conversation


def test_a_reply_to_the_assistants_offer_is_keyed_by_the_whole_conversation():
    """The same "yes please" after two offers: two keys, each carrying the offer and the customer's words,
    looked up by the exact cache only."""
    keys = []
    for offer in ("Shall I cancel it?", "Shall I renew it?"):
        r = resolve(Conversation((Turn("user", "I want to stop my Plus membership"), Turn("assistant", offer),
                                  Turn("user", "yes please"))))
        assert r.how == How.REWRITTEN and r.exact_only and "keyed by the conversation" in r.detail
        assert "plus" in r.question.casefold() and offer.split()[2] in r.question
        keys.append(r.question)
    assert keys[0] != keys[1]


@override_settings(CONVERSATION_SCOPED_KEY=False)
def test_a_dependent_message_after_the_assistants_question_is_not_resolved():
    for offer in ("Shall I cancel it?", "Shall I renew it?"):
        r = resolve(Conversation((Turn("user", "My Plus membership renews next week"), Turn("assistant", offer),
                                  Turn("user", "can you do it today?"))))
        assert r.how == How.UNRESOLVED


def test_a_dependent_message_after_the_assistants_question_is_keyed_by_it():
    first, second = (resolve(Conversation((Turn("user", "My Plus membership renews next week"),
                                           Turn("assistant", offer), Turn("user", "can you do it today?"))))
                     for offer in ("Shall I cancel it?", "Shall I renew it?"))
    assert first.exact_only and second.exact_only and first.question != second.question


@pytest.mark.django_db
@override_settings(CONVERSATION_SCOPED_KEY=False)
def test_a_statement_answering_the_assistants_question_is_not_resolved():
    r = resolve(Conversation((Turn("user", "My jacket is faulty"),
                              Turn("assistant", "Do you want a refund or a replacement?"),
                              Turn("user", "The replacement would be better"))))
    assert r.how == How.UNRESOLVED


@pytest.mark.django_db
def test_a_reply_to_a_yes_or_no_is_keyed_with_the_customers_answer():
    """A customer's "no" earlier is part of the key: it is not small talk."""
    def last(answer):
        return resolve(Conversation((Turn("user", "I'm buying the Fibre 100 package"),
                                     Turn("assistant", "Would you like the router insurance?"), Turn("user", answer),
                                     Turn("assistant", "Okay. Shall I place the order?"), Turn("user", "yes please"))))
    assert last("yes").question != last("no").question


@pytest.mark.django_db
def test_a_question_without_a_subject_takes_the_conversations():
    plus = resolve(Conversation((Turn("user", "I'm asking about Acme Plus."), Turn("assistant", "Sure."),
                                 Turn("user", "What's the price?"))))
    shipping = resolve(Conversation((Turn("user", "I'm asking about Overnight shipping."), Turn("assistant", "Sure."),
                                     Turn("user", "What's the price?"))))
    assert plus.cacheable and shipping.cacheable
    assert "plus" in plus.question.casefold() and "overnight" in shipping.question.casefold()


@pytest.mark.django_db
def test_a_detail_said_in_passing_keeps_two_conversations_apart():
    """The same follow-up after the same question, with one detail of the customer's own in between."""
    def last(detail):
        return resolve(Conversation((Turn("user", f"I ordered {detail} last week."), Turn("assistant", "Thanks."),
                                     Turn("user", "How do I get a refund?"), Turn("assistant", "From your orders page."),
                                     Turn("user", "how long does that take?")))).question
    assert last("the heavy tent") != last("the light tent")


@pytest.mark.django_db
def test_the_country_stated_earlier_travels_where_it_bears_and_a_product_name_does_not():
    def last(statement, question):
        return resolve(Conversation((Turn("user", statement), Turn("assistant", "Great."), Turn("user", question))))
    delivery = last("I'm in Canada.", "How long does delivery take?")
    assert "canada" in delivery.question.casefold() and delivery.how == How.REWRITTEN
    password = last("I'm in Canada.", "How do I reset my password?")  # a country does not change a password reset
    assert password.question == "How do I reset my password?" and password.how == How.STANDALONE
    flixora = last("I watched Flixora all weekend.", "How do I reset my password?")
    assert flixora.question == "How do I reset my password?" and flixora.how == How.STANDALONE


@pytest.mark.django_db
def test_a_plan_stated_earlier_travels_to_what_it_changes():
    returns = resolve(Conversation((Turn("user", "I'm on the Plus plan."), Turn("assistant", "Thanks, good to know."),
                                    Turn("user", "How long do I have to return sale items?"))))
    assert "plus" in returns.question.casefold() and returns.cacheable
    hours = resolve(Conversation((Turn("user", "I'm on the Plus plan."), Turn("assistant", "Thanks, good to know."),
                                  Turn("user", "How do I turn on two-factor authentication?"))))
    assert hours.how == How.STANDALONE


def last_question(*texts) -> str:
    """The resolved question of a conversation of alternating user and assistant ``texts``."""
    return resolve(Conversation(tuple(Turn("user" if i % 2 == 0 else "assistant", t)
                                      for i, t in enumerate(texts)))).question


@pytest.mark.django_db
@pytest.mark.parametrize("first, second, last", [
    # a negation said in passing
    (("I'm a Plus member, bought a tent last week", "Thanks, I can see your order."),
     ("I'm not a Plus member, bought a tent last week", "Thanks, I can see your order."), "is return shipping free?"),
    # the detail is in the assistant's recap, the customer's words are the same
    (("I'd like to send something back", "I can see the sofa from your last order.", "ok", "I can book a collection."),
     ("I'd like to send something back", "I can see the table lamp from your last order.", "ok",
      "I can book a collection."), "how much does that cost?"),
    # the object "it" points back, though "if" follows it
    (("I ordered a sofa last week", "Thanks, I can see the order."),
     ("I ordered a laptop last week", "Thanks, I can see the order."), "can I return it if I change my mind?"),
    # a day asked about bears on opening hours
    (("Can I book a massage on Tuesday?", "Yes, we have slots."),
     ("Can I book a massage on Thursday?", "Yes, we have slots."), "What time do you open?"),
    # morning and afternoon are details, not small talk
    (("I booked a cut for Tuesday morning", "I can see your booking."),
     ("I booked a cut for Tuesday afternoon", "I can see your booking."), "how long will it take?"),
    # two ids, each conversation's own first: the order of the words is kept
    (("where's my order 48213? my sister's is 48231", "Let me check."),
     ("where's my order 48231? my sister's is 48213", "Let me check."), "when will it arrive?"),
])
def test_the_same_last_words_after_a_different_detail_resolve_apart(first, second, last):
    a, b = last_question(*first, last), last_question(*second, last)
    assert a != b and last not in (a, b)


@pytest.mark.django_db
@pytest.mark.parametrize("first, second, last", [
    # "still": carries on from the order the conversation is about
    (("Where is my order 44871?", "It's out for delivery today.", "ok", "Anything else?"),
     ("Where is my order 44817?", "It's out for delivery today.", "ok", "Anything else?"),
     "can I still change the address?"),
    # asks the assistant to act on the customer's own case
    (("my invoice INV-7731 looks wrong", "Let me check INV-7731.", "Do you have a loyalty scheme?", "Yes."),
     ("my invoice INV-7713 looks wrong", "Let me check INV-7713.", "Do you have a loyalty scheme?", "Yes."),
     "can you send me a corrected copy?"),
    # "the appointment" is the one the conversation booked
    (("I booked a massage for Friday", "Lovely, see you then."),
     ("I booked a facial for Friday", "Lovely, see you then."), "Can I move the appointment to 3pm?"),
    # what the customer may claim rests on the facts stated
    (("My flight on the 12th was delayed by 4 hours", "Sorry about that."),
     ("My flight on the 12th was delayed by 2 hours", "Sorry about that."), "How much compensation can I claim?"),
    # a statement of what happened is the topic, not only its order number
    (("My order 44871 came with a broken lamp", "Sorry to hear that."),
     ("My order 44871 came with a broken sofa", "Sorry to hear that."), "is there a fee for a replacement?"),
    # a deposit of what? an attribute with one subject word is the conversation's thing's
    (("I want to hire a van for Saturday", "We have vans available."),
     ("I want to hire a bike for Saturday", "We have bikes available."), "Do I need to pay a deposit?"),
    (("My washing machine is 11 months old and broke", "Sorry to hear that."),
     ("My washing machine is 14 months old and broke", "Sorry to hear that."), "Am I covered for a free repair?"),
])
def test_a_message_with_a_subject_of_its_own_that_continues_the_conversation_resolves_apart(first, second, last):
    a, b = last_question(*first, last), last_question(*second, last)
    assert a != b and last not in (a, b)


@pytest.mark.django_db
def test_small_talk_and_a_side_question_leave_the_resolved_question_as_it_was():
    plain = last_question("I want to cancel my gym membership", "I can help. There's a 30-day notice period.",
                          "how long until it stops then?")
    chatter = last_question("I want to cancel my gym membership", "I can help. There's a 30-day notice period.",
                            "ugh, it's been a long day", "Sorry to hear that! How can I help?",
                            "how long until it stops then?")
    assert plain == chatter and "gym" in plain
    side = last_question("I'm on the Basic plan and want to add a second user", "Basic allows one user.",
                         "Do you sell gift cards?", "Yes, from £10 to £200.",
                         "What's your phone number?", "0300 123 4567.", "how much is Standard then?")
    no_side = last_question("I'm on the Basic plan and want to add a second user", "Basic allows one user.",
                            "What's your phone number?", "0300 123 4567.", "how much is Standard then?")
    assert side == no_side and "gift" not in side and "basic" in side.casefold()


@pytest.mark.django_db
@pytest.mark.parametrize("history, last", [
    (("Do you sell gift cards?", "Yes, from £10 to £50."), "Do you offer gift wrapping?"),
    (("What's your privacy policy?", "We never sell your data."), "What is your returns policy?"),
    (("My discount code doesn't work", "It expired yesterday, sorry."), "How long does standard delivery take?"),
    (("Can I bring my dog inside?", "Dogs are welcome on the terrace only."), "Is there parking nearby?"),
    # a rule about things of a kind, not the customer's thing; a question of the policy, not of the case
    (("My order 55120 arrived yesterday, all good", "Great to hear!"), "What is the returns policy on sale items?"),
    (("I paid £45 for delivery last time", "Express delivery is £45 for large items."),
     "How long do I have to return an item?"),
])
def test_a_standalone_question_sharing_a_word_but_not_a_subject_with_the_history_stays_itself(history, last):
    assert last_question(*history, last) == last


def test_a_pronoun_alone_points_at_its_own_words_and_in_a_conversation_may_point_back():
    message = "can I return it if I change my mind?"
    assert resolve(Conversation.single(message)).how == How.SINGLE  # nothing else to point at
    assert dependence(message).kind == "anaphora"
    assert dependence("does Premier get a discount on it?").kind == "anaphora"
    assert dependence("Can I return an item if I opened it?").kind == ""  # a clause of its own


@pytest.mark.django_db
def test_a_number_is_carried_though_a_longer_number_holds_its_digits():
    two = last_question("I want to order 2 of the desk lamps", "Sure. Call 0300 123 4567 for bulk orders.",
                        "what's the total?")
    three = last_question("I want to order 3 of the desk lamps", "Sure. Call 0300 123 4567 for bulk orders.",
                          "what's the total?")
    assert two != three


@pytest.mark.django_db
def test_a_rewrite_carrying_the_conversations_words_is_for_the_exact_cache_only():
    follow_up = resolve(Conversation((Turn("user", "How do I get a refund?"), Turn("assistant", "From Orders."),
                                      Turn("user", "how long does that take?"))))
    assert follow_up.how == How.REWRITTEN and follow_up.exact_only
    standalone = resolve(Conversation((Turn("user", "I'm in Canada."), Turn("assistant", "Great."),
                                       Turn("user", "How long does delivery take?"))))
    assert standalone.how == How.REWRITTEN and not standalone.exact_only  # a question with its condition


def test_a_german_follow_up_bypasses_and_says_so():
    r = resolve(Conversation((Turn("user", "Wie kann ich eine Erstattung bekommen?"),
                              Turn("assistant", "Über Ihre Bestellungen."), Turn("user", "Wie lange dauert das?"))),
                "de")
    assert r.how == How.UNRESOLVED and "German" in r.detail


@pytest.mark.parametrize("turns, read, not_read", [
    # the detail of a known kind: the previous question with it ("für Express"); never keyed
    (("Was kostet der Versand nach Deutschland?", "Standard kostet 4,95 €.", "und Express?"),
     "Was kostet der Versand nach Deutschland für Express?", ""),
    # a thing of no known kind (a German noun reads as a name): appended with the customer's own preposition, and of
    # the question after "andere Frage:", not of the chatter before it
    (("Ok danke. Andere Frage: bekommen wir eine Rechnung mit MwSt?", "Ja, mit ausgewiesener Umsatzsteuer.",
      "und für die Wanderkarten?"), "bekommen wir eine Rechnung mit MwSt für Wanderkarten?", "danke"),
])
def test_a_german_ellipsis_is_read_as_the_previous_question_but_never_keyed(turns, read, not_read):
    r = resolve(Conversation(tuple(Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turns))), "de")
    assert r.how == How.UNRESOLVED and not r.cacheable and "German" in r.detail
    assert r.question == read
    assert not not_read or not_read not in r.question.casefold()


def test_a_context_question_reads_the_sentence_that_last_named_what_the_message_points_at():
    """"that link" after a reply about a reset link is the reset link, not the email change's confirmation link the
    customer's first message was about (was: the 24 hours of the email change)."""
    r = resolve(Conversation((
        Turn("user", "hi! I want to change the email on my account to my new work address"),
        Turn("assistant", "Sure! Go to Account > Settings > Login & security, click Edit next to Email, and enter the "
                          "new address and your current password. We send a confirmation link to the new address, "
                          "which is valid for 24 hours."),
        Turn("user", "ok thx. Actually wait, I can't remember my password at all lol"),
        Turn("assistant", "No problem. Go to acme-outfitters.example/signin, click Forgot password? and enter the "
                          "email address of your Acme account. We'll send you a reset link from "
                          "no-reply@acme-outfitters.example. Your new password needs at least 10 characters."),
        Turn("user", "got the email. how long is that link good for? might not get to it until tonight"))))
    assert r.how == How.UNRESOLVED
    assert r.question.split(" | ")[1] == "We'll send you a reset link from no-reply@acme-outfitters.example."
    # "that for me" points at no noun
    r = resolve(Conversation((Turn("user", "Can it come on a Saturday?"), Turn("assistant", "Yes, for a fee."),
                              Turn("user", "How much extra is that for me?"))))
    assert "Yes, for a fee." not in r.question


@pytest.mark.django_db
def test_a_question_naming_a_new_thing_in_words_enough_is_standalone_after_an_unrelated_chat():
    """"What's the limit for a single contactless payment?" after a chat about a standing order names its own thing,
    which the chat never mentioned: the same question as anyone's (was: keyed by the chat's words, so never served
    from the cache). A question naming too little ("a maximum number of people I can add?") or what the chat was
    about stays the conversation's."""
    standalone = resolve(Conversation((
        Turn("user", "I want to set up a standing order for my rent."),
        Turn("assistant", "You can do that in the app under Transfers > Standing orders."),
        Turn("user", "Thanks. What's the limit for a single contactless payment?"))))
    assert standalone.how == How.STANDALONE, standalone.detail
    mexico = resolve(Conversation((
        Turn("user", "shipping to guadalajara, how long does it take and how much?"),
        Turn("assistant", "To Mexico we ship Standard with Estafeta: 7–12 business days from dispatch, MX$149."),
        Turn("user", "kinda slow ngl... can i pay extra for express?"))))  # its asking sentence names only "express"
    assert mexico.how != How.STANDALONE and "mexico" in mexico.question.casefold(), mexico.detail
    for follow_up in ("Cool. Is there a maximum number of people I can add?",
                      "Great. Is there a way to not have to type a code every single time on my own laptop?"):
        r = resolve(Conversation((
            Turn("user", "I just set up 2-step verification. Can I share my plan with my team and do I get codes?"),
            Turn("assistant", "Yes: invite each person's email under My Account > Team; you get 8 backup codes."),
            Turn("user", follow_up))))
        assert r.how != How.STANDALONE, (follow_up, r.detail)


def test_a_context_question_ends_at_the_turn_that_began_a_new_question():
    """An unresolved follow-up is read with the customer's earlier turns, back to the one that said a new question
    began ("andere Frage: ..."): the topic before it is closed, and so is the chatter before the mark."""
    r = resolve(Conversation((Turn("user", "Wie lange ist der Link zum Zurücksetzen des Passworts gültig?"),
                              Turn("assistant", "30 Minuten."),
                              Turn("user", "ok danke. andere frage: wir bestellen für unseren Verein, gibt es eine "
                                           "Rechnung mit MwSt?"),
                              Turn("assistant", "Ja."), Turn("user", "Wie lange dauert das?"))), "de")
    assert r.how == How.UNRESOLVED
    assert "Verein" in r.question and "Passwort" not in r.question and "danke" not in r.question


@pytest.mark.django_db
def test_a_condition_stated_earlier_travels_with_a_standalone_question():
    r = resolve(Conversation((Turn("user", "I live in Canada and want to order a jacket."),
                              Turn("assistant", "Great, we deliver to all provinces."),
                              Turn("user", "How much is shipping?"))))
    assert r.cacheable and "canada" in r.question.casefold()


@pytest.mark.django_db
def test_a_detail_asked_about_frames_the_next_question_until_the_customer_asks_another():
    """A detail inside a question of the customer's frames what they ask next ("Do you have a branch in Leeds?",
    then the opening hours are Leeds's); once they have asked about something else, a standalone question is no
    longer asked of it, and two conversations that differ only in that earlier question share its answer."""
    leeds = last_question("Do you have a branch in Leeds?", "Yes, our Leeds branch is on Briggate.",
                          "What are your opening hours on Saturday?")
    assert "leeds" in leeds.casefold()
    rome = last_question("I'm flying to Rome on Friday, will my card work there?", "Yes, it works worldwide.",
                         "What is the fee for cash withdrawals?")
    assert "rome" in rome.casefold()
    after = [last_question(f"Do you deliver to {place}?", "Yes, in 3-5 days.", "Great. Also, how do I reset my password?",
                           "Use the forgot password link.", "What are your opening hours on Saturday?")
             for place in ("Ireland", "Canada")]
    assert after == ["What are your opening hours on Saturday?"] * 2
    # a later question on the first one's topic still carries its detail
    shipping = last_question("Do you deliver to Ireland?", "Yes, in 3-5 days.", "How do I reset my password?",
                             "Use the forgot password link.", "How much does delivery cost?")
    assert "ireland" in shipping.casefold()


@pytest.mark.django_db
def test_irrelevant_history_leaves_a_standalone_question_alone():
    r = resolve(Conversation((Turn("user", "My Flixora subscription renews on the 14th, I barely use it."),
                              Turn("assistant", "I can help with that."),
                              Turn("user", "How do I reset my password?"))))
    assert r.how == How.STANDALONE and r.question == "How do I reset my password?"


# --------------------------------------------------------------------------- the Ask path

@pytest.mark.parametrize("message", ["how long does that take?", "is it free?", "and for Canada?"])
def test_a_follow_up_asked_alone_gets_a_clarifying_reply_and_is_never_stored(client, acme, message):
    for _ in range(2):
        response = post(client, "acme", {"question": message})
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["status"] == "needs_context" and body["cache"]["layer"] == "none"
        assert body["citations"] == [] and message[:20] in body["answer"]
    for event in AskEvent.objects.all():
        assert event.resolution == How.CLARIFY and event.message == message
    assert not CacheDecision.objects.filter(disposition__in=("stored", "hit")).exists()
    assert SemanticEntry.objects.count() == 0 and answer_keys() == []


REFUND = convo("How do I get a refund?",
               "Request a refund from your orders page; we process it once the return arrives.",
               "How long does that take?")
SHIPPING = convo("How much does shipping to Canada cost?",
                 "Standard shipping to Canada is CA$9.95, free over CA$100.",
                 "How long does that take?")


def test_a_follow_up_in_context_is_answered_from_the_right_article_and_stored_under_its_resolved_question(
        client, acme):
    body = post(client, "acme", {"messages": REFUND}).json()
    assert body["status"] == "answered", body
    assert "refunds" in {c["article_id"] for c in body["citations"]}
    event = AskEvent.objects.get(request_id=body["request_id"])
    assert event.message == "How long does that take?" and event.resolution == How.REWRITTEN
    assert "refund" in event.question.casefold() and event.question != event.message
    for entry in SemanticEntry.objects.all():
        assert entry.question == event.question

    again = post(client, "acme", {"messages": REFUND}).json()
    assert again["cache"]["layer"] in ("exact", "semantic") and again["answer"] == body["answer"]

    alone = post(client, "acme", {"question": "How long does that take?"}).json()
    assert alone["status"] == "needs_context" and alone["answer"] != body["answer"]


def test_the_same_last_words_in_another_context_never_share_a_cached_answer(client, acme):
    refund = post(client, "acme", {"messages": REFUND}).json()
    shipping = post(client, "acme", {"messages": SHIPPING}).json()
    assert refund["status"] == shipping["status"] == "answered"
    assert shipping["cache"]["layer"] == "none"
    assert shipping["answer"] != refund["answer"]
    assert "shipping-times-and-costs" in {c["article_id"] for c in shipping["citations"]}
    questions = set(AskEvent.objects.values_list("question", flat=True))
    assert len(questions) == 2 and "How long does that take?" not in questions


def test_a_rewritten_follow_up_is_looked_up_in_the_exact_cache_only(client, acme):
    reworded = convo("How can I get my money back?",
                     "Request a refund from your orders page; we process it once the return arrives.",
                     "How long does that take?")
    post(client, "acme", {"messages": REFUND})
    body = post(client, "acme", {"messages": reworded}).json()
    event = AskEvent.objects.get(request_id=body["request_id"])
    assert event.resolution == How.REWRITTEN and body["cache"]["layer"] != "semantic"
    lookups = CacheDecision.objects.filter(ask=event, layer="semantic", disposition="bypass")
    assert any("exact cache only" in d.reason for d in lookups)
    assert not CacheDecision.objects.filter(ask=event, layer="semantic", disposition__in=("hit", "miss")).exists()


@override_settings(CONVERSATION_SCOPED_KEY=False)
def test_an_unresolved_follow_up_is_answered_from_its_context_and_bypasses_every_shared_cache(client, acme):
    messages = convo("Do you ship to Canada?", "Yes, to every province. Would you like the rates?", "yes")
    for _ in range(2):
        body = post(client, "acme", {"messages": messages}).json()
        assert body["cache"]["layer"] == "none"
    event = AskEvent.objects.filter(request_id=body["request_id"]).get()
    assert event.resolution == How.UNRESOLVED and event.message == "yes"
    layers = {d.layer: d.disposition for d in CacheDecision.objects.filter(ask=event)}
    assert layers["exact"] == "bypass" and layers["semantic"] == "bypass"
    assert layers.get("search", "bypass") == "bypass" and layers.get("embedding", "bypass") == "bypass"
    assert SemanticEntry.objects.count() == 0 and answer_keys() == []


# --------------------------------------------------------------------------- the chat page's thread

def test_the_chat_page_sends_a_follow_up_with_its_thread_shows_it_and_can_start_over(client, acme):
    first = client.post("/t/acme/ask", {"question": "How do I get a refund?", "locale": "en"})
    assert first.status_code == 200
    follow = client.post("/t/acme/ask", {"question": "How long does that take?", "locale": "en"})
    assert follow.status_code == 200
    event = AskEvent.objects.latest("created_at")
    assert event.message == "How long does that take?" and event.resolution == How.REWRITTEN
    assert "refund" in event.question.casefold()
    page = client.get("/t/acme/").content.decode()
    assert "How do I get a refund?" in page and "How long does that take?" in page and "Start over" in page

    assert client.post("/t/acme/start-over", {"locale": "en"}).status_code == 303
    assert "How do I get a refund?" not in client.get("/t/acme/").content.decode()
    client.post("/t/acme/ask", {"question": "How long does that take?", "locale": "en"})
    assert AskEvent.objects.latest("created_at").resolution == How.CLARIFY


def test_the_thread_is_bounded(client, acme, settings):
    from supportbot.chat_thread import THREAD_KEY

    settings.CHAT_THREAD_MAX_MESSAGES = 4
    for q in ("Do you ship to Canada?", "How do I reset my password?", "What are your opening hours?"):
        client.post("/t/acme/ask", {"question": q, "locale": "en"})
    turns = client.session[THREAD_KEY]["turns"]
    assert len(turns) == 4 and turns[0] == {"role": "user", "content": "How do I reset my password?"}


def test_erasing_a_customer_erases_their_chat_sessions(client, acme):
    import io

    from django.contrib.sessions.models import Session
    from django.core.management import call_command

    from supportbot import auth

    session = client.session
    session[auth.SESSION_KEY] = {"acme": {"customer": "cust-9", "exp": 2 ** 40}}
    session.save()
    client.cookies["sessionid"] = session.session_key
    client.post("/t/acme/ask", {"question": "How do I get a refund?", "locale": "en"})
    assert Session.objects.filter(session_key=session.session_key).exists()
    call_command("customer_erase", "--tenant", "acme", "--customer", "cust-9", stdout=io.StringIO())
    assert not Session.objects.filter(session_key=session.session_key).exists()
    assert "How do I get a refund?" not in client.get("/t/acme/").content.decode()


def test_a_long_resolved_question_is_recorded_with_its_decisions(client, acme):
    """A rewritten question can be long (topic and conditions); the decisions quoting it still fit their row."""
    first = ("I ordered a waterproof hiking jacket, thermal gloves, a wool hat, trail running shoes, a sleeping bag "
             "and a camping stove for my trip and I would like to send the jacket and the stove back for a refund?")
    messages = convo(first, "You can start a return from your orders page.", "how long does that take?")
    for _ in range(2):
        response = post(client, "acme", {"messages": messages})
        assert response.status_code == 200, response.content
    events = AskEvent.objects.order_by("created_at")
    assert events.count() == 2 and len(events[0].question) > 150
    assert CacheDecision.objects.filter(ask=events[1]).exists()


@pytest.mark.django_db
def test_asking_the_same_question_again_is_the_same_standalone_question():
    """A customer who asks again is not continuing the conversation: the repeat is looked up and cached like
    the first asking (found by the hostile-input test of the chat page, whose thread holds the first asking)."""
    question = "How do I return an item?"
    first = (Turn("user", question), Turn("assistant", "Returns are easy: start a return from your orders page [1]."))
    again = resolve(Conversation(first + (Turn("user", question),)))
    assert (again.how, again.question) == ("standalone", question)
    # the turns around the repeat still count: a delivery slot talked about before is still the conversation's
    slot = (Turn("user", "I booked the delivery slot for Friday morning."), Turn("assistant", "Noted."),
            Turn("user", "Can I change the delivery slot?"), Turn("assistant", "Yes, from your orders page [1]."))
    assert resolve(Conversation(slot + (Turn("user", "Can I change the delivery slot?"),))).how != "standalone"


def test_a_comparison_without_than_continues_the_conversation():
    """"Do Plus members pay less?" after the Saturday surcharge: less than that surcharge. Asked alone it
    would be a general question, and its cached answer (household sharing) was served to this one."""
    r = resolve(Conversation((Turn("user", "Is there a surcharge for Saturday delivery in the US?"),
                              Turn("assistant", "Yes, the Saturday surcharge is $9.95."),
                              Turn("user", "do Plus members pay less?"))))
    assert r.how == How.REWRITTEN and "saturday" in r.question.casefold()
    assert r.question != "do Plus members pay less?"
    alone = resolve(Conversation.single("Is express shipping faster than standard shipping?"))
    assert alone.how == How.SINGLE


@pytest.mark.parametrize("message", [
    "If I pick express to the UK, how many days does it take?",
    "Can I exchange the same jacket for a different size twice?",
    "How many API keys can I have active at the same time?",
    "Can I send back over-ear headphones once I've opened them?",
    "How long does it usually take until my data export is ready?",
])
def test_an_english_question_alone_with_its_own_subject_is_answered(message):
    """Found by issue 27's fourth held-out set: these were asked back for context."""
    assert resolve(Conversation.single(message)).how == How.SINGLE


@pytest.mark.parametrize("message", ["Is the same true for Canada?", "what do they cost?", "Does Plus waive that?"])
def test_an_english_pronoun_alone_with_nothing_of_its_own_is_to_be_clarified(message):
    assert resolve(Conversation.single(message)).how == How.CLARIFY


@pytest.mark.parametrize("message", ["can I use a US one in Canada?", "how much is the middle one per month?",
                                     "I need a new one for my son"])
def test_one_standing_for_a_noun_points_back_and_alone_is_to_be_clarified(message):
    """Found by the lead's second conversation set: "one" for the conversation's noun was read as the number, so
    the message was answered alone and stored under its bare words."""
    assert dependence(message, "en").kind == "anaphora"
    r = resolve(Conversation.single(message))
    assert r.how == How.CLARIFY and not r.cacheable


@pytest.mark.parametrize("message", ["Can I use more than one discount code?", "Can I use one gift card in two orders?",
                                     "Is it possible to return one of the two items?", "sorry, quick one - do you sell gift cards?",
                                     "My card expires next week. How do I get a new one?"])
def test_one_as_a_number_or_naming_the_messages_own_noun_stays_standalone(message):
    assert dependence(message, "en").kind == ""
    assert resolve(Conversation.single(message)).how == How.SINGLE


def test_a_comparative_said_as_a_verb_compares_with_nothing(db):
    """"if you lower the price of something" lowers a price, it does not compare with what the conversation said: a
    message about a topic of its own carries none of the conversation's words, only the customer's case (was: rewritten
    with the Canada shipping conversation's words and answered with Canada's Expedited price; the blind ninth
    conversation set, lc9-10)."""
    message = "Last thing: if you lower the price of something after I've received it, how long do I have to get the " \
              "difference back?"
    r = resolve(Conversation((Turn("user", "I'm a Plus member in Canada. Is Expedited shipping free for me?"),
                              Turn("assistant", "On orders over CA$100, yes."),
                              Turn("user", message))))
    assert r.question.startswith(message) and "(about:" not in r.question, r.question  # the topic is its own
    assert "expedited" not in r.question.casefold(), r.question  # the customer's case (Plus) may go with it


@pytest.mark.parametrize("message", ["Can I add my sister as well?", "Could I ring on Saturday morning?",
                                     "can I pay by card too"])
def test_a_message_adding_to_what_was_asked_or_asking_to_call_without_saying_whom_depends_on_the_conversation(
        message):
    """"as well", "too" at its end add to what was asked before; "ring", "call" with no one to call ask for the
    conversation's number (was: answered alone, the first not at all, the second with the Saturday delivery article;
    lc9-14, lc9-08). Alone, such a message asks the help centre's own rule or line, and is answered."""
    assert dependence(message).kind == "anaphora"
    assert dependence(message, alone=True).kind == ""
    assert resolve(Conversation.single(message)).how == How.SINGLE


def thread(*texts) -> Conversation:
    return Conversation(tuple(Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)))


@pytest.mark.django_db
def test_after_different_question_nothing_asked_before_travels_but_where_the_customer_is_does():
    """"ok that's a dealbreaker then. different question: if I close my account, how long do you hang on to my
    invoices?" after "Do you ship to Canada?" was keyed by the Canada shipping conversation and answered for Canada
    (the blind tenth conversation set, lc10-18); "Different question: ... Pro plan. How much is it?" after "I'm in
    Mexico City. What does shipping cost for me?" is still asked from Mexico (lc9-16)."""
    r = resolve(thread("Do you ship to Canada?", "Sorry, no. We only ship to the United States and to Mexico.",
                      "ok that's a dealbreaker then. different question: if I close my account, how long do you hang "
                      "on to my invoices and payment records?"))
    assert r.how == How.STANDALONE and r.question.startswith("if I close my account") and not r.conditions
    r = resolve(thread("I'm in Mexico City. What does shipping cost for me?", "Standard shipping to Mexico costs MX$149.",
                      "Different question: I'm thinking about the Pro plan. How much is it?"))
    assert "mexico" in r.conditions and "shipping" not in r.question.casefold()
    # what follows the words is the conversation's when it points back
    r = resolve(thread("Do you ship to Canada?", "Yes, we ship to Canada.", "another question: how long does that take?"))
    assert r.how != How.STANDALONE
