"""Write the conversation pairs built on real customer questions (``tests/data/conversation_pairs_real_{dev,heldout}.jsonl``).

    .venv/bin/python scripts/conversation_pairs_real.py

The customers' questions are real ones, verbatim (BANKING77, CLINC150 and NLU++ banking of the shared
data folder, and the demo knowledge base's own questions); the assistant's turns and the conditions
swapped in the traps are ours. Three classes, each pair in the evalcache conversation format:

* ``irrelevant_history``: a self-contained question after unrelated turns (small talk, a topic
  finished before it, another topic), the two conversations' histories different: should be served.
* traps (``detail_swap``, ``context_swap``, ``intent_flip``): the same final words, the histories
  differing only in a number, place, plan, age, card or what the customer wants: never served.
* ``same_context_reworded``: a follow-up whose resolved question is the same in both.

Pairs are split into dev and held-out by the intent of the final question (a hash of it, fixed before
any tuning), so a held-out question's intent was never seen while tuning.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data"


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


# Unrelated earlier turns: small talk (CLINC150 small_talk), and finished or other topics (BANKING77,
# CLINC150, NLU++ questions with our replies). Each tagged with its content, so a final question is
# never paired with a history about its own subject.
HISTORIES = {
    "greeting": [u("hi, how are you today?"), a("I'm well, thanks for asking! What can I help you with?")],
    "bot": [u("are you a real person or a bot"),
            a("I'm Ask, a virtual assistant. I can answer questions about your account and our services.")],
    "joke": [u("tell me a joke"), a("Why did the banker switch careers? He lost interest! Anything I can help you with?")],
    "name": [u("what is your name"), a("I'm Ask, the support assistant.")],
    "rain": [u("ugh, what a rainy day"), a("Sorry to hear that! Hope it clears up. What can I help you with?")],
    "lost_card": [u("I lost my card yesterday, can you block it?"),
                  a("I've frozen the card ending 4417. A replacement will arrive in 3-5 working days."),
                  u("great, thanks"), a("You're welcome. Anything else?")],
    "address": [u("How do I change my address?"),
                a("Go to Profile > Personal details and edit your address; we may ask for proof of address."),
                u("done, that worked"), a("Glad to hear it! Anything else I can help with?")],
    "declined_abroad": [u("My card was declined at a restaurant in Lisbon"),
                        a("Sorry about that. Payments abroad can be blocked by your location security setting; "
                          "you can turn it off under Card > Security."),
                        u("ok that fixed it, thank you"), a("Great! Is there anything else?")],
    "passcode": [u("How do I reset a forgotten passcode, please?"),
                 a("Log out, tap 'Forgot passcode' and follow the link we email you."), u("perfect"),
                 a("Anything else?")],
    "salary": [u("Is there a problem with receiving my salary in GBP?"),
               a("No, you can receive GBP into your account; it's held in GBP unless you exchange it.")],
    "gym_debit": [u("What is this direct debit I am seeing?"),
                  a("It's from Pure Fitness, set up on 3 March. You can cancel it under Payments > Direct debits.")],
    "phone": [u("Someone stole my phone yesterday :( is there anything I need to do?"),
              a("Please log in from another device and tap 'Lost phone' to sign out everywhere."),
              u("ok will do"), a("Stay safe. Anything else?")],
    "rewards": [u("how many points have i earned with my credit card so far"),
                a("You have 2,340 points, worth £23.40 in rewards.")],
    "credit_score": [u("please give me my current credit score"),
                     a("I can't see credit scores, but you can check yours for free with a credit reference agency."),
                     u("fair enough"), a("Anything else I can help you with?")],
    "order_late": [u("My parcel hasn't arrived yet, order 55120"),
                   a("I'm sorry. It's with the courier and due tomorrow."), u("ok thanks"),
                   a("You're welcome. Anything else?")],
    "doorbell": [u("hello"), a("Hi! How can I help?"), u("sorry, doorbell, back now"), a("No problem!")],
}

# Self-contained final questions, verbatim: (text, intent, source).
FINALS = [
    ("How do I activate a new card?", "activate_my_card", "banking77"),
    ("Can I open an account for a child?", "age_limit", "banking77"),
    ("How can I cancel a transfer?", "cancel_transfer", "banking77"),
    ("Do you have to order a new card before your current card expires?", "card_about_to_expire", "banking77"),
    ("Where can I pay with my debit or credit card?", "card_acceptance", "banking77"),
    ("How do I track my card?", "card_arrival", "banking77"),
    ("Can I get my card expedited?", "card_delivery_estimate", "banking77"),
    ("What should I do if I see a payment I didn't make?", "card_payment_not_recognised", "banking77"),
    ("What happens if the ATM doesn't give me back my card?", "card_swallowed", "banking77"),
    ("How to change the PIN on my card?", "change_pin", "banking77"),
    ("How do I use contactless payments?", "contactless_not_working", "banking77"),
    ("In what countries do you do business?", "country_support", "banking77"),
    ("Is there a fee to exchange foreign money?", "exchange_charge", "banking77"),
    ("Does it cost extra to exchange currencies?", "exchange_charge", "banking77"),
    ("What are the most current exchange rates?", "exchange_rate", "banking77"),
    ("Is there currency exchange on this app?", "exchange_via_app", "banking77"),
    ("What does a disposable virtual card do?", "get_disposable_virtual_card", "banking77"),
    ("Is there a fee for extra cards?", "getting_spare_card", "banking77"),
    ("How can I freeze a stolen card?", "lost_or_stolen_card", "banking77"),
    ("Can I still use the app if I switched phones?", "lost_or_stolen_phone", "banking77"),
    ("What do you charge for physical cards?", "order_physical_card", "banking77"),
    ("How long do card transactions take to clear?", "pending_card_payment", "banking77"),
    ("How long can an EU transfer take?", "pending_transfer", "banking77"),
    ("How can I unblock a blocked pin number for my account?", "pin_blocked", "banking77"),
    ("Can you delete my account please?", "terminate_account", "banking77"),
    ("Can I top up by cheque?", "top_up_by_cash_or_cheque", "banking77"),
    ("What is the limit to top up?", "top_up_limits", "banking77"),
    ("How much can I top-up to my card at a time?", "top_up_limits", "banking77"),
    ("How do I transfer money to my account?", "transfer_into_account", "banking77"),
    ("What will I need for identity verification?", "verify_my_identity", "banking77"),
    ("Do you guys accept mastercard or visa?", "visa_or_mastercard", "banking77"),
    ("Can I use my account without verifying my identity?", "why_verify_identity", "banking77"),
    ("How long does it take to process cheque deposits?", "balance_not_updated_after_cheque_or_cash_deposit",
     "banking77"),
    ("What are the rules for transferring to a beneficiary?", "beneficiary_not_allowed", "banking77"),
    ("Where do I link the new card?", "card_linking", "banking77"),
    ("Why do I get charged additional fees on some payments, but not others?", "card_payment_fee_charged",
     "banking77"),
    ("how do i report that i lost my card", "report_lost_card", "clinc150"),
    ("can i redeem my points for flights", "redeem_rewards", "clinc150"),
    ("how long will it takes to get a new credit card", "replacement_card_duration", "clinc150"),
    ("is there a fee to use my card in france", "international_fees", "clinc150"),
    ("how much money can i transfer today", "transfer", "clinc150"),
    ("could i get some more checkbooks sent to me, please", "order_checks", "clinc150"),
    ("How long does it usually take to get a new pin?", "nlupp_pin_new", "nlupp"),
    ("How long do I have to return an item?", "kb_return_policy", "demo-kb"),
    ("How long is the warranty on products?", "kb_warranty", "demo-kb"),
    ("How long is the password reset link valid?", "kb_password_reset", "demo-kb"),
    ("How many gift cards can I use per order?", "kb_gift_cards", "demo-kb"),
    ("Can I pay with Klarna?", "kb_payment_methods", "demo-kb"),
    ("How many backup codes do I get with two-factor authentication?", "kb_two_factor", "demo-kb"),
    ("Is there a free trial for Plus?", "kb_plus", "demo-kb"),
]

# Traps: the same final words; the histories differ only in one detail. (intent, subtype, final, history
# template with {x}, the two values, the assistant's reply template)
TRAPS = [
    ("age_limit", "detail_swap", "Can I open an account with you?", "I'm {x} years old", ("16", "25"),
     "Thanks for letting me know."),
    ("age_limit", "detail_swap", "Can I open an account for a child?", "My daughter is {x}", ("11", "17"),
     "Thanks, noted."),
    ("country_support", "detail_swap", "Can I get a card?", "I live in {x}", ("Germany", "the US"),
     "Thanks for letting me know."),
    ("country_support", "detail_swap", "Can I open an account with you?", "I'm based in {x}",
     ("Canada", "the UK"), "Thanks, noted."),
    ("top_up_limits", "detail_swap", "Are there any limits on card top-ups?",
     "I'm looking to top up {x} by card", ("£20", "£2,000"), "Sure, you can top up by card in the app."),
    ("transfer_fee_charged", "detail_swap", "What is the fee for an international transfer?",
     "I want to send {x} to my sister abroad", ("€50", "€5,000"), "You can do that from Payments > New transfer."),
    ("transfer_timing", "detail_swap", "How long will it take to arrive?",
     "I want to send money to my brother in {x}", ("Spain", "Mexico"), "You can do that from Payments > New transfer."),
    ("getting_spare_card", "detail_swap", "How much does a spare card cost?", "I'm on the {x} plan",
     ("Standard", "Premium"), "Thanks, noted."),
    ("atm_support", "detail_swap", "What's the monthly limit for free ATM withdrawals?", "I have a {x} account",
     ("Standard", "Metal"), "Thanks, noted."),
    ("apple_pay_or_google_pay", "detail_swap", "Can I add it to Apple Pay?", "I have a {x} debit card",
     ("Visa", "Mastercard"), "Thanks, noted."),
    ("exchange_rate", "detail_swap", "What's the exchange rate today?", "I need to exchange {x}",
     ("dollars", "yen"), "You can exchange currencies in the app under Exchange."),
    ("international_fees", "detail_swap", "Will I be charged for using ATMs there?", "I'm travelling to {x} next month",
     ("Japan", "France"), "Have a great trip! Your card works in over 150 countries."),
    ("opening_hours", "detail_swap", "What are your opening hours?", "I'd like to visit the branch on {x}",
     ("Saturday", "Sunday"), "Of course, you're welcome to visit."),
    ("kb_shipping", "detail_swap", "How long does it take?", "How much is standard shipping to {x}?",
     ("Canada", "the UK"), "It depends on the destination; see the shipping rates table."),
    ("kb_plus", "context_swap", "Is there a fee for that?", "How do I {x}?",
     ("cancel my Plus membership", "pause my Plus membership"), "You can do that under Account > Membership."),
    ("cancel_transfer", "intent_flip", "How long does that take?", "I want to {x} my transfer",
     ("cancel", "speed up"), "I can help with that."),
    ("order_late", "detail_swap", "Can I cancel the order?", "My order {x} hasn't shipped yet",
     ("55120", "55121"), "Let me check that for you. It's being packed."),
    ("compromised_card", "context_swap", "What should I do now?", "{x}",
     ("I think my card was stolen", "I forgot my PIN"), "I'm sorry to hear that."),
    ("top_up_by_card_charge", "detail_swap", "Is there a fee for topping up?",
     "I want to top up with my {x} card", ("UK", "US"), "Sure, card top-ups are instant."),
    ("pending_transfer", "detail_swap", "Is that normal?", "My transfer has been pending for {x}",
     ("2 hours", "5 days"), "Sorry about the wait."),
]

# Should-hits: the same follow-up after reworded askings of one question (same intent, same details).
REWORDED = [
    ("top_up_by_card_charge", "How long does that take?", ("How do I top up with my card?", "How can I add money with a card?"),
     "Go to Top up > Card and enter the amount."),
    ("exchange_charge", "Is there a fee for that?", ("Can I exchange currencies in the app?", "Am I able to exchange currencies?"),
     "Yes, under Exchange you can convert between 30 currencies."),
    ("card_delivery_estimate", "and for Canada?", ("How long does card delivery to Germany take?",
                                                   "How long does it take to get a card delivered in Germany?"),
     "About 5 working days."),
    ("kb_shipping", "and for the UK?", ("How much is standard shipping to Canada?", "What does standard shipping to Canada cost?"),
     "Standard to Canada is CA$9.95, free over CA$100."),
]


def split_of(intent: str) -> str:
    return "heldout" if int(hashlib.sha256(intent.encode()).hexdigest(), 16) % 2 else "dev"


def _content(text: str) -> set[str]:
    stop = {"the", "a", "an", "i", "my", "you", "your", "is", "are", "do", "does", "can", "to", "of", "for", "in",
            "on", "it", "what", "how", "with", "and", "or", "me", "there", "any", "that", "this", "have", "be",
            "ok", "thanks", "thank", "anything", "else", "help", "please", "long", "much"}
    return {w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower()) if w not in stop and len(w) > 2}


def _history_text(turns) -> str:
    return " ".join(t["content"] for t in turns)


def main() -> None:
    rows = {"dev": [], "heldout": []}
    names = list(HISTORIES)
    for n, (text, intent, source) in enumerate(FINALS):
        own = _content(text)
        unrelated = [h for h in names if not own & _content(_history_text(HISTORIES[h]))]
        first, second = unrelated[(3 * n) % len(unrelated)], unrelated[(3 * n + 5) % len(unrelated)]
        if first == second:
            second = unrelated[(3 * n + 1) % len(unrelated)]
        rows[split_of(intent)].append({
            "id": f"real-ih{n + 1:02d}", "subtype": "irrelevant_history", "same_answer": True, "source": source,
            "intent": intent, "a": [*HISTORIES[first], u(text)], "b": [*HISTORIES[second], u(text)]})
    for n, (intent, subtype, final, template, (x, y), reply) in enumerate(TRAPS):
        rows[split_of(intent)].append({
            "id": f"real-tr{n + 1:02d}", "subtype": subtype, "same_answer": False, "intent": intent,
            "a": [u(template.format(x=x)), a(reply), u(final)],
            "b": [u(template.format(x=y)), a(reply), u(final)]})
    for n, (intent, final, (first, second), reply) in enumerate(REWORDED):
        rows[split_of(intent)].append({
            "id": f"real-rw{n + 1:02d}", "subtype": "same_context_reworded", "same_answer": True, "intent": intent,
            "a": [u(first), a(reply), u(final)], "b": [u(second), a(reply), u(final)]})
    for split, items in rows.items():
        path = OUT / f"conversation_pairs_real_{split}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items))
        kinds = {}
        for r in items:
            kinds[r["subtype"]] = kinds.get(r["subtype"], 0) + 1
        print(path.name, len(items), kinds)


if __name__ == "__main__":
    main()
