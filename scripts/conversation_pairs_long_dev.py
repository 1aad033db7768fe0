"""Writes tests/data/conversation_pairs_long_dev.jsonl (sixth session, dev: tuned on): long conversations,
whose earlier topics are finished before the customer starts a new one and follows it up. Should-hits: the
same thread after a long, finished history and after none or another one; traps: the same long history and
follow-up with a thread that differs in a detail, and a detail stated early that the follow-up rests on."""
import json
import sys

PREFIX_A = [
    "Hi, I can't log in to the app", "Try resetting your password from the sign-in screen; the link lasts 30 minutes.",
    "ok that worked, I'm in now", "Great to hear!",
    "also my last invoice shows a roaming charge from my trip to Portugal", "Roaming in the EU is included; I've refunded the £4.50.",
    "brilliant, and can you change my bill date to the 15th?", "Done, your bill date is now the 15th of each month.",
    "and is my contract up for renewal soon?", "Your contract runs until 30 November; we'll write to you a month before.",
    "ok thanks for all that", "You're welcome! Anything else?",
]
PREFIX_B = [
    "Hello, my order from last week still hasn't arrived", "Sorry! It was delayed at the depot and will arrive tomorrow.",
    "ok and can I change the delivery address for it?", "It's already out for delivery, so the address can't change now.",
    "fine. do you sell extended warranties for laptops?", "Yes, 2 or 3 years, added at checkout or within 30 days.",
    "good to know, and where do I find my receipts?", "They're under Account > Orders > Receipts.",
    "perfect, thank you", "You're welcome! Anything else?",
]
THREADS = [  # (fresh question, answer, follow-up); each a should-hit after either prefix
    ("How do I set up a direct debit?", "Go to Payments > Direct debit and enter your bank details.", "how long does it take to start?"),
    ("Do you offer gift wrapping?", "Yes, you can choose it at checkout.", "how much does it cost?"),
    ("How do I add a second user to my account?", "Go to Account > Users and choose Invite.", "do they need their own email?"),
    ("Can I pause my gym membership?", "Yes, for up to 3 months, from the app under Membership.", "is there a fee for that?"),
    ("How do I get a replacement debit card?", "Order one in the app under Cards > Replace card.", "how long will it take to arrive?"),
    ("How do I cancel my magazine subscription?", "Go to Account > Subscriptions and choose Cancel.", "will I get a refund for the rest of the year?"),
]
TRAP_THREADS = [  # (thread one, thread other): same follow-up, a detail of the thread differs
    (("Do you deliver to Ireland?", "Yes, tracked delivery to Ireland.", "how long does it take?"),
     ("Do you deliver to Norway?", "Yes, tracked delivery to Norway.", "how long does it take?")),
    (("I'd like to book a table for 2 on Friday", "Sure, we have space.", "do I need to pay a deposit?"),
     ("I'd like to book a table for 12 on Friday", "Sure, we have space.", "do I need to pay a deposit?")),
    (("How do I turn on two-factor authentication?", "Go to Account > Security.", "can I turn it off later?"),
     ("How do I turn on paperless billing?", "Go to Account > Billing.", "can I turn it off later?")),
    (("I want to upgrade to the Premium plan", "Sure, you can upgrade under Billing.", "how much more is it per month?"),
     ("I want to upgrade to the Family plan", "Sure, you can upgrade under Billing.", "how much more is it per month?")),
]


ONE_TOPIC = [  # (a long chat on one subject ending in a follow-up, chatter to put in it, a detail to swap)
    (("My broadband keeps dropping out every evening", "Sorry about that. Have you restarted the router recently?",
      "Yes, twice yesterday, and I've checked all the cables are plugged in properly", "Thanks. I've run a line test and it found a fault on the line outside your home.",
      "Is that something I need to fix myself or do you sort it out?", "We fix faults outside your home for free; an engineer visit is needed.",
      "Can the engineer come on a Saturday morning?", "Yes, we have Saturday morning slots between 8am and 1pm.",
      "OK please book the first Saturday you have", "Booked for Saturday 14 June, 8am to 1pm. You don't need to be home if the fault is outside.",
      "how long will the repair take?"),
     ("sorry, my dog is barking, one sec", "No problem, take your time!"), ("Saturday", "Tuesday")),
    (("I was charged twice for my monthly subscription this month", "Sorry to hear that. Can you confirm the amounts?",
      "Both were £12.99, taken on the 3rd and the 4th", "Thanks, I can see both payments; the second was a processing error.",
      "Can you refund the second one please?", "Yes, I've refunded £12.99 to the card you paid with.",
      "Will this happen again next month?", "No, the error is fixed and your next payment is on the 3rd as usual.",
      "And can I get an email receipt for the refund?", "Yes, a receipt has been sent to your email address on file.",
      "when will the money be back in my account?"),
     ("ugh, what a week", "Sorry it's been a tough one!"), ("£12.99", "£29.99")),
]


def conv(*texts):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def main(path="tests/data/conversation_pairs_long_dev.jsonl"):
    rows = []
    for n, thread in enumerate(THREADS, 1):
        rows.append({"id": f"long-ch{n:02d}", "subtype": "same_context_extra_chatter", "same_answer": True,
                     "a": conv(*thread), "b": conv(*PREFIX_A, *thread)})
        rows.append({"id": f"long-ir{n:02d}", "subtype": "irrelevant_history", "same_answer": True,
                     "a": conv(*PREFIX_B, *thread), "b": conv(*PREFIX_A, *thread)})
    for n, (one, other) in enumerate(TRAP_THREADS, 1):
        rows.append({"id": f"long-ds{n:02d}", "subtype": "detail_swap", "same_answer": False,
                     "a": conv(*PREFIX_A, *one), "b": conv(*PREFIX_A, *other)})
    # a detail stated early, in a long chat, that the follow-up rests on: a plan, a country
    early = [("I'm on the Basic plan", "Thanks, I can see Basic."), ("I'm on the Premium plan", "Thanks, I can see Premium.")]
    thread = ("How do I add a second user to my account?", "Go to Account > Users and choose Invite.", "is there a charge for that?")
    rows.append({"id": "long-ds05", "subtype": "detail_swap", "same_answer": False,
                 "a": conv(*early[0], *PREFIX_A[:-2], *thread), "b": conv(*early[1], *PREFIX_A[:-2], *thread)})
    early = [("I live in Canada", "Thanks, noted."), ("I live in Australia", "Thanks, noted.")]
    thread = ("Do you sell the X200 headphones?", "Yes, they're in stock online.", "how long does delivery take?")
    rows.append({"id": "long-ds06", "subtype": "detail_swap", "same_answer": False,
                 "a": conv(*early[0], *PREFIX_B[:-2], *thread), "b": conv(*early[1], *PREFIX_B[:-2], *thread)})
    # the same long chat, the follow-up's subject only in what came before the latest question
    rows.append({"id": "long-cs01", "subtype": "context_swap", "same_answer": False,
                 "a": conv(*PREFIX_A[:-2], "How do I cancel my broadband?", "Call us or use the app; there's a 30-day notice.", "is there a fee?"),
                 "b": conv(*PREFIX_A[:-2], "How do I cancel my mobile contract?", "Use the app; there's a 30-day notice.", "is there a fee?")})
    rows.append({"id": "long-if01", "subtype": "intent_flip", "same_answer": False,
                 "a": conv(*PREFIX_B, "I want to return the laptop", "Shall I send you a return label?", "yes please"),
                 "b": conv(*PREFIX_B, "I want to return the laptop", "Shall I arrange a courier collection?", "yes please")})
    # one long topic, too long to carry as a rewrite, asked again with chatter in it; and with a detail swapped
    for n, (long_thread, chatter, swap) in enumerate(ONE_TOPIC, 1):
        rows.append({"id": f"long-lc{n:02d}", "subtype": "same_context_extra_chatter", "same_answer": True,
                     "a": conv(*long_thread), "b": conv(*long_thread[:4], *chatter, *long_thread[4:])})
        rows.append({"id": f"long-ls{n:02d}", "subtype": "detail_swap", "same_answer": False,
                     "a": conv(*long_thread), "b": conv(*(t.replace(*swap) for t in long_thread))})
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(len(rows))


if __name__ == "__main__":
    main(*sys.argv[1:])
