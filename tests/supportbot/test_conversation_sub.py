"""Resolution classes found with the subtype pairs (tests/data/conversation_pairs_sub.jsonl, in-sample):
a standalone message after long, unrelated history stays itself; the customer's own case decides a
refund question; chatter and the assistant's replies to it leave a follow-up as it was."""
import pytest

from supportbot.conversation import Conversation, How, Turn, resolve


def resolved(*texts):
    return resolve(Conversation(tuple(Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts))))


# a long chat that wanders: a town, a package, a price rise, a second email address
WANDERING = (
    "Hi, I'm Priya, I've got a question about my broadband in Manchester",
    "Hello Priya! What's going on with your broadband?",
    "The speed drops every evening, it's on the Fibre 100 package",
    "Sorry about that. Could you restart the router and run a speed test?",
    "ok just did, 92 Mbps now", "That's much better.",
    "great. also my bill went up by £3 this month, why?",
    "Prices rise each April; your monthly price went from £30 to £33.",
    "not now thanks. Can I add a second email address to the account?",
    "Yes, under Account > Contacts.",
    "done, thanks", "You're welcome!",
)


@pytest.mark.django_db
@pytest.mark.parametrize("message", ["How do I change my password?", "How do I cancel my newsletter emails?"])
def test_a_how_to_whose_verb_is_an_attribute_word_stays_itself_after_unrelated_history(message):
    r = resolved(*WANDERING, message)
    assert (r.how, r.question) == (How.STANDALONE, message)


@pytest.mark.django_db
def test_a_place_said_in_passing_long_before_does_not_travel_to_a_question_about_the_business():
    message = "What are your customer service opening hours?"
    r = resolved(*WANDERING, message)
    assert (r.how, r.question) == (How.STANDALONE, message)
    # a place the customer just stated still bears on it
    near = resolved("I'm coming to the Leeds branch next week", "Lovely, see you then!", message)
    assert near.how == How.REWRITTEN and "leeds" in near.question.casefold()


@pytest.mark.django_db
def test_a_refund_question_with_a_subject_of_its_own_rests_on_the_customers_case():
    warranty = resolved("I want to cancel the extended warranty I bought with my TV",
                        "I can do that; it was bought 20 days ago.", "Can I get a refund to my card?")
    tickets = resolved("I want to cancel my concert tickets", "Those are non-refundable, but you can resell them.",
                       "Can I get a refund to my card?")
    assert warranty.question != tickets.question
    assert How.STANDALONE not in (warranty.how, tickets.how)


@pytest.mark.django_db
def test_chatter_and_the_assistants_reply_to_it_leave_a_follow_up_as_it_was():
    plain = resolved("Do you deliver to Spain?", "Yes, within 4 to 6 working days.", "How much does it cost?")
    by_the_way = resolved("Do you deliver to Spain?", "Yes, within 4 to 6 working days.",
                          "great, lovely weather here by the way", "Glad to hear it!", "How much does it cost?")
    weather = resolved("Do you deliver to Spain?", "Yes, within 4 to 6 working days.",
                       "ugh, typical rainy weekend here haha", "Hope it clears up!", "How much does it cost?")
    assert plain.how == How.REWRITTEN and plain.question == by_the_way.question == weather.question


@pytest.mark.django_db
@pytest.mark.parametrize("closer", ["What else can I do for you?", "Can I help you with anything further?",
                                    "Do you have any more questions?"])
def test_a_customary_closing_question_is_not_one_the_next_message_answers(closer):
    r = resolved("I want to cancel my gym membership", f"Done, it ends on 31 May. {closer}",
                 "Is there a cancellation fee?")
    assert r.how == How.REWRITTEN and "gym" in r.question


@pytest.mark.django_db
def test_a_word_said_in_two_forms_is_carried_once():
    one = resolved("Are you open on Sunday?", "Yes, from 10am to 4pm on Sundays.", "Is the pharmacy open then too?")
    other = resolved("Do you open on Sundays?", "We do, 10am to 4pm.", "Is the pharmacy open then too?")
    assert one.how == How.REWRITTEN and one.question == other.question


@pytest.mark.django_db
def test_a_word_said_in_passing_long_before_does_not_make_a_question_continue_the_chat():
    message = "What's the best way to contact you?"
    r = resolved("Can I change the contact number on my account?", "Yes, under Account > Contacts.",
                 *WANDERING[2:8], message)
    assert (r.how, r.question) == (How.STANDALONE, message)
    # the same word in the last exchange still continues it
    near = resolved(*WANDERING[2:8], "Can I change the contact number on my account?", "Yes, under Account > Contacts.",
                    message)
    assert near.how != How.STANDALONE


@pytest.mark.django_db
def test_a_rule_about_a_kind_of_thing_is_not_the_customers_own_thing():
    message = "What is the minimum contract length?"
    r = resolved("I signed a broadband contract last year", "Thanks, I can see it.", message)
    assert (r.how, r.question) == (How.STANDALONE, message)


@pytest.mark.django_db
def test_a_side_question_after_a_preamble_is_still_a_side_question():
    base = ("I'm on the Basic plan and want to add a second user", "Basic allows one user.")
    end = ("What's your phone number?", "0300 123 4567.", "how much is Standard then?")
    plain = resolved(*base, *end)
    side = resolved(*base, "sorry about that - how do I turn on two-factor authentication?", "Under Settings > Security.", *end)
    assert plain.how == How.REWRITTEN and side.question == plain.question
