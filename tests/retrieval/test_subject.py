"""A question's subject terms (``retrieval.subject``): what the answerability decision looks for in a
passage. German question words, auxiliaries and light verbs are never a subject ("Bekomme ich ...?" is
not about "bekommen"); everything else of the question is. The real PostgreSQL text-search stemming."""
from __future__ import annotations

import pytest

from retrieval.search import query_terms
from retrieval.subject import grounded, irregular_alternatives, name_phrases, noun_words, states, subject_terms

pytestmark = pytest.mark.django_db


def test_german_question_words_and_light_verbs_are_not_subject_terms():
    terms = subject_terms("german", "Bekomme ich mein Geld zurück, wenn ich Plus kündige?")
    assert "bekomm" in query_terms("german", "Bekomme ich mein Geld zurück?")  # the stop list keeps it
    assert "bekomm" not in terms and {"geld", "plus"} <= set(terms)
    assert set(subject_terms("german", "Wer ist der Geschäftsführer von Acme?")) == {"geschaftsfuhr", "acm"}
    assert set(subject_terms("german", "Habt ihr Stellenangebote für Studenten?")) == {"stellenangebot", "student"}


def test_german_prepositions_and_adverbs_the_stop_list_keeps_are_not_subject_terms():
    # "seit" survives the configuration's stop list: "Seit wann gibt es Acme?" shared it with "seit Erhalt"
    # of the returns article and was answered from it
    assert "seit" in query_terms("german", "Seit wann gibt es Acme?")
    assert subject_terms("german", "Seit wann gibt es Acme?", "Acme Outfitters") == ()
    assert set(subject_terms("german", "Wie oft kann ich ungefähr bestellen?")) == {"bestell"}
    assert set(subject_terms("german", "Seit einer Woche hängt meine Sendung")) == {"woch", "hangt", "sendung"}
    # "allerdings", "dahin": how the customer tells it and where it points, never what is asked (lc17-13)
    assert set(subject_terms("german", "allerdings geht das dahin jedoch auch nach Jersey?")) == {"jersey"}


def test_english_subject_terms_are_the_search_terms():
    question = "Who is the CEO of Acme Outfitters?"
    assert subject_terms("english", question) == tuple(dict.fromkeys(query_terms("english", question)))


def test_what_the_configuration_keeps_of_an_english_contraction_is_no_subject_term():
    # "I'm" leaves "m", which no article states: "I'm a Premier member. Can I return ...?" read as unanswerable
    question = "I'm a Premier member and we've paid, but it won't arrive. I'd like a refund, you're late."
    assert {"m", "ve", "won", "d", "re"} <= set(query_terms("english", question))
    assert set(subject_terms("english", question)) == {"premier", "member", "paid", "arriv", "like", "refund", "late"}


def test_the_quantifier_asking_for_an_amount_or_a_count_is_no_subject_term(db):
    # "much" is in no article: "How much is the Premier plan?" was handed off (P=0.333 against 0.334, "the help
    # centre never states much"); German's "viel" and "viele" were already left out
    assert set(subject_terms("english", "How much is the Premier plan?")) == {"premier", "plan"}
    assert set(subject_terms("english", "How many wishlists can I have?")) == {"wishlist"}


def test_the_tenants_own_name_is_never_the_subject():
    assert set(subject_terms("english", "Who owns Acme Outfitters?", "Acme Outfitters")) == {"own"}
    assert set(subject_terms("english", "Does Initech Home ship to Canada?", "Initech Home")) == {"ship", "canada"}
    assert set(subject_terms("german", "Wem gehört Acme Outfitters?", "Acme Outfitters")) == {"gehort"}


def test_german_nouns_are_the_capitalised_words_after_the_first_less_the_tenants_name():
    assert noun_words("Gibt es eine eigene Acme-App für das iPad?", "Acme Outfitters") == ["App", "iPad"]
    assert noun_words("Rabatt für Lehrer?") == ["Lehrer"]  # the first word is capitalised as any first word is
    assert noun_words("Was bedeutet die Referenz RF-208311?") == ["Referenz"]  # no number, no two-letter code
    assert noun_words("Haben Polizisten und Feuerwehrleute Vorteile?") == ["Polizisten", "Feuerwehrleute", "Vorteile"]


@pytest.mark.parametrize("stem, lexemes, stated", [
    ("rabatt", {"rabatt", "code"}, True),  # as it is
    ("zustell", {"samstagszustell"}, True),  # inside a compound of the article's
    ("samstagszustell", {"samstag", "zustell"}, True),  # all of its parts, glued with an "s"
    ("lieferzeit", {"liefer", "zeit"}, True),
    ("studentenrabatt", {"rabatt", "code"}, False),  # only the head: a student discount is not a discount
    ("familienzelt", {"zelt", "famili"}, True),  # both parts, glued with "en"
    ("skiservic", {"servic", "kundenservic"}, False),
    ("schwerbehindert", {"rabatt"}, False),
    ("akti", {"aktivier", "konto"}, False),  # a four-letter stem inside a word is no compound part: "Aktie"
    ("zelt", {"familienzelt"}, True),  # ... but as its head it is
])
def test_an_article_states_a_noun_as_it_is_in_a_compound_or_by_all_its_parts(stem, lexemes, stated):
    assert states(stem, frozenset(lexemes)) is stated


@pytest.mark.parametrize("terms, lexemes, expected", [
    (("geld", "plus"), {"plus", "mitgliedschaft"}, True),  # one subject term stated is enough
    (("samstagsliefer", "usa"), {"samstag", "liefer"}, True),  # a compound through all of its parts
    (("studentenrabatt",), {"rabatt", "code"}, False),  # only the compound's head: not grounded
    (("pflegekraft", "rabatt"), {"rabatt"}, True),  # grounded; the nouns threshold is what weighs the rest
    (("spat", "tokio"), {"versand", "zustell"}, False),
    ((), {"versand"}, False),  # a question without subject terms is grounded nowhere
])
def test_a_passage_is_grounded_when_its_article_states_any_subject_term(terms, lexemes, expected):
    assert grounded(terms, frozenset(lexemes)) is expected


def test_a_later_sentences_first_word_is_no_noun():
    assert noun_words("Ich habe meinen Firmennamen vergessen. Könnt ihr die Rechnung ändern?") == [
        "Firmennamen", "Rechnung"]


def test_founded_is_no_form_of_find_but_found_is():
    assert irregular_alternatives("english", ["found"], "Who founded Acme Outfitters?") == {}
    assert irregular_alternatives("english", ["found"], "I found a scratch on my jacket") == {"found": ["find"]}


@pytest.mark.parametrize("question, config, names", [
    ("Is the Acme app available for Apple Watch?", "english", [("Apple", "Watch")]),  # a run is one name
    ("What is Acme's return policy?", "english", []),  # the tenant's own name, possessive too
    ("Can I visit your support team in person in Atlanta?", "english", [("Atlanta",)]),
    ("Reparieren Sie auch Jacken von Mammut?", "german", [("Mammut",)]),  # bare after a preposition
    ("Passt Ihr Ladekabel an ein Samsung-Handy?", "german", [("Samsung",)]),  # a hyphenated compound's first part
    ("Gibt es eine eigene Acme-App für das iPad?", "german", [("iPad",)]),  # a capital inside
    ("Kann ich die App auf meiner Samsung Galaxy Watch nutzen?", "german",
     [("Samsung",), ("Galaxy",), ("Watch",)]),  # capitalised words in a row: each word
    ("Wie lange habe ich Zeit, einen Artikel zurückzugeben?", "german", []),  # nouns, no names
    ("Gibt es eine E-Mail-Adresse für Garantieanfragen?", "german", []),  # a plural stands bare after "für"
    ("Hello, this is Jane Quimbyfrost from Baker Street, do you ship to Canada?", "english",
     [("Canada",)]),  # a customer's introduction names the customer, not what is asked
    ("Hallo, hier ist Jana Berger aus Köln. Liefern Sie samstags?", "german", []),
])
def test_the_names_a_question_asks_about(question, config, names):
    assert name_phrases(question, config, "Acme Outfitters") == names


def test_a_month_a_possessive_or_a_contraction_without_its_apostrophe_is_no_subject():
    """The day of the customer's case, whose thing it is, and "didnt" typed for "didn't" (was: handed off, "the help
    centre never names March", "never states didnt, mine"; the blind tenth fact set, lf10-42 and lf10-18)."""
    terms = set(subject_terms("english", "I clicked mine an hour later and it didnt work, bought it on March 29"))
    assert not terms & {"mine", "didnt", "march"}, terms
    assert ("March",) not in name_phrases("Bought a fridge in the Mexico store on March 29.", "english")
    assert "marz" not in set(subject_terms("german", "Am 29. März gekauft, wie lange habe ich Zeit?"))


@pytest.mark.parametrize("locale, question, expected", [
    # a slip of the keys, written as the help centre writes the word: two letters swapped, a double letter typed once
    # or twice, a vowel left out
    ("en", "how many days is the downlaod link good for?", "how many days is the download link good for?"),
    ("en", "my street adress is really long", "my street address is really long"),
    ("en", "how much is expedited shiping to toronto", "how much is expedited shipping to toronto"),
    ("en", "tracking by text message insted of email?", "tracking by text message instead of email?"),
    # a real word ("pricey", "large"), a form of the same word ("erreiche"), a stop word ("wohne" is no "ohne"), or a
    # letter more or less at an end or inside ("teuer" / "Steuer", "tragen" / "tagen", "bezahlen" / "bezahlten")
    ("en", "and if the quote is too pricey and i say no?", None),
    ("en", "How large can the CSV file for a wishlist import be?", None),
    ("de", "Ich wohne in Österreich. Wann erreiche ich euch?", None),
    ("de", "und wenn mir das dann zu teuer ist?", None),
    ("de", "ob ich das noch im rucksack tragen kann", None),
    ("de", "Kann ich per SEPA-Lastschrift bezahlen?", None),
])
def test_a_slip_of_the_keys_is_read_as_the_help_centres_word(acme, locale, question, expected):
    from retrieval.services import active_generation_cached
    from retrieval.subject import spelled

    assert spelled(active_generation_cached(), acme.pk, locale, question) == (expected or question)


def test_how_the_customer_tells_their_case_and_a_number_with_its_unit_are_no_subject():
    """Blind set 12 handed these off ("the help centre never states bunch, lockout, tri, ugh", "700kb, tri", "latest"):
    the interjection, "really", "trying", "a bunch of", the deadline's "latest" and the file's "700kb" are the case."""
    terms = set(subject_terms("english", "ugh locked out after trying a bunch of passwords, really annoying"))
    assert not terms & {"ugh", "tri", "bunch", "realli"}, terms
    assert "password" in terms
    assert "700kb" not in subject_terms("english", "file is around 700kb, is there a size limit?")
    assert "latest" not in subject_terms("english", "What's the latest date I can request the factura?")


@pytest.mark.parametrize("word, stated_as", [("apt", "apart"), ("cheaper", "lower"), ("lockout", "lock"), ("cart", "order")])
def test_everyday_words_for_what_the_articles_say_otherwise(word, stated_as):
    from retrieval.subject import equivalents
    assert stated_as in equivalents("english", query_terms("english", word)[0])


def test_how_an_english_customer_tells_it_and_whom_they_address_are_not_subject_terms():
    # the blind sixteenth fact set: "roughly", "usually", "you guys", "anymore" were read as what the help centre
    # never states, and answerable questions were handed off
    terms = set(subject_terms("english",
                              "roughly what do you charge to replace the battery? usually you guys reply fast"))
    assert {"batteri", "charg", "replac"} <= terms and not terms & {"rough", "usual", "guy"}
    assert "guy" in subject_terms("english", "can the delivery guys take my old tv away?")  # not the customer's "you"
    assert "public" in subject_terms("english", "Is Initech publicly traded?")  # an adverb that says what is asked


def test_what_a_question_sentence_asks_is_without_the_words_asking_for_a_time():
    # the article says a time as one ("within 1 minute"; the blind seventeenth fact set)
    from retrieval.subject import asked_terms, told_case
    told = told_case("The key leaked. How quickly does the key stop working? how long, how soon, too late?")
    assert {"quick", "long", "soon", "late"} <= asked_terms("english", told)
    assert not asked_terms("english", told, time_words=False) & {"quick", "long", "soon", "late"}
    assert "late" in asked_terms("english", told_case("It rained. Is my late order refunded?"), time_words=False)

