"""The customer's running situation (where they are or are going, and when), found with the pairs of
tests/data/conversation_pairs_facts_dev.jsonl (in-sample): a place or a day the customer stated to set
the scene travels with a later self-contained question, a wander or not, so two conversations that
differ only in it never share an answer; a detail asked about and answered in its own question, a topic
closed with thanks, or a question about signing in and the app's settings leave the question alone."""
import pytest

from supportbot.conversation import Conversation, How, Turn, _situation, resolve

ANDROID = ("oh and is there an app for android?", "Yes: search for Ask Bank in Google Play.")


def resolved(*texts):
    return resolve(Conversation(tuple(Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts))))


@pytest.mark.django_db
@pytest.mark.parametrize("wander", [(), ANDROID], ids=["next", "after a side question"])
@pytest.mark.parametrize("scene, values, message", [
    ("I'm in {} for the week", ("Thailand", "France"), "Which ATMs am I allowed to get money from?"),
    ("I'm flying out to {} on Friday", ("Japan", "Italy"), "how do i know what the outlets are like"),
    ("I'm travelling to {} for a conference", ("Lisbon", "Oslo"), "what is the weather like tomorrow"),
    ("I'm staying in {} this week", ("Bristol", "York"), "can you tell me the location of the nearest bank"),
    ("I want to exchange £500 into euros on {}", ("Saturday", "Tuesday"), "Is the rate better at the weekend?"),
], ids=["country", "country-and-day", "city", "city-near", "day"])
def test_a_place_or_day_the_customer_set_the_scene_with_keeps_two_conversations_apart(scene, values, message, wander):
    first, second = (resolved(scene.format(v), "Okay, noted.", *wander, message) for v in values)
    for r, value in ((first, values[0]), (second, values[1])):
        assert r.question != message and value.casefold() in r.question.casefold(), r
    assert first.question != second.question


@pytest.mark.django_db
def test_a_message_with_its_own_place_does_not_take_the_conversations():
    r = resolved("I'm staying in Bristol this week", "Thanks for letting me know.", "Do you have a branch in York?")
    assert "bristol" not in r.question.casefold()


@pytest.mark.django_db
@pytest.mark.parametrize("history", [
    ("I'm flying to Rome on Friday, will my card work there?", "Yes, it works in Italy, with no fees on card payments."),
    ("I sent £250 to my brother in Spain on Monday", "I can see it: it arrived on Tuesday.", "great thanks",
     "Anything else?"),
    ("I'm in Canada.", "Great, we ship there."),
], ids=["asked and answered", "closed with thanks", "sign-in question"])
def test_a_detail_asked_about_closed_or_beside_the_point_leaves_the_question_alone(history):
    message = "How do I turn on two-factor authentication?" if "Canada" in history[0] else "Do you accept Mastercard?"
    r = resolved(*history, message)
    assert (r.how, r.question) == (How.STANDALONE, message)


def test_the_situation_is_the_latest_of_each_kind_and_ends_with_thanks():
    turns = (Turn("user", "I'm in Thailand for the week"), Turn("assistant", "Enjoy!"),
             Turn("user", "actually I'm going to France on Sunday"), Turn("assistant", "Okay."))
    assert _situation(turns) == {"france": "place", "sunday": "day"}
    closed = turns + (Turn("user", "ok thanks"), Turn("assistant", "Anything else?"))
    assert _situation(closed) == {}


@pytest.mark.django_db
def test_whats_reads_like_what_is():
    """"What's the process for terminating an account?" names its subject as "What is the ..." does."""
    message = "What's the process for terminating an account?"
    r = resolved("I paid £89.99 at Tesco twice", "One of them is a pending authorisation; it will drop off.", message)
    assert (r.how, r.question) == (How.STANDALONE, message)
