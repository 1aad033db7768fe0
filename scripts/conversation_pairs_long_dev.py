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
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(len(rows))


if __name__ == "__main__":
    main(*sys.argv[1:])
