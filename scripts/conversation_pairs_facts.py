"""Write the conversation pairs on a detail stated earlier (``tests/data/conversation_pairs_facts_{dev,heldout}.jsonl``).

    .venv/bin/python scripts/conversation_pairs_facts.py

Two classes, on real customers' questions, verbatim (BANKING77 and CLINC150 of the shared data folder):

* traps (``detail_swap``): a self-contained final question whose answer depends on a detail the customer
  stated in an earlier turn (a city or country, a flight, an airline, a day, a sum, a plan, an age), the two
  conversations differing only in that detail; half of them wander (a side question) between the detail
  and the final question. Never served.
* ``irrelevant_history``: a self-contained final question after a history that states details (names,
  places, days, sums, plans) about something else. Should be served.

The assistant's turns and the details are ours. Pairs are split into dev and held-out by the final
question's intent (a hash of it), fixed before any rule was written to them.
"""
from __future__ import annotations

import json

# the same turn builders, output folder and dev/held-out split by intent as the real-question pairs
from conversation_pairs_real import OUT, a, split_of, u


WANDER = [u("oh and is there an app for android?"), a("Yes: search for Ask Bank in Google Play.")]

# (final question verbatim, intent, source, the customer's turn with {}, the assistant's reply, (value a, value b))
TRAPS = [
    ("what is the weather like tomorrow", "weather", "clinc150",
     "I'm travelling to {} for a conference", "Sounds great! Your card works there with no fees on card payments.",
     ("Lisbon", "Oslo")),
    ("give me the 7 day forecast", "weather", "clinc150",
     "We're heading to {} on holiday next week", "Lovely! Enjoy your trip.", ("Edinburgh", "Cardiff")),
    ("does my trip require vaccines", "vaccines", "clinc150",
     "I've booked a trip to {} in March", "Nice! Let me know if you need anything for the trip.", ("Kenya", "Norway")),
    ("how do i know what the outlets are like", "plug_type", "clinc150",
     "I'm flying out to {} on Friday", "Have a good flight!", ("Japan", "Italy")),
    ("what time does my flight get in", "flight_status", "clinc150",
     "I'm on flight {} from Dublin tonight", "Thanks, noted.", ("EI154", "EI164")),
    ("how big can a carry-on bag be", "carry_on", "clinc150",
     "I'm flying with {} on Saturday", "Got it.", ("Ryanair", "Lufthansa")),
    ("can you tell me the location of the nearest bank", "directions", "clinc150",
     "I'm staying in {} this week", "Thanks for letting me know.", ("Bristol", "York")),
    ("are there any international transaction fees associated with my visa card", "international_fees", "clinc150",
     "I'm off to {} next month", "Have a great time!", ("Switzerland", "Spain")),
    ("what is my bill's minimum payment", "min_payment", "clinc150",
     "My credit card statement balance is {}", "Thanks, I can see your statement.", ("£120", "£1,200")),
    ("How long will it take for the money to reach my account?", "transfer_timing", "banking77",
     "My employer is sending my salary from {}", "Thanks, I'll keep an eye out.", ("Germany", "Australia")),
    ("When should I expect to receive my card?", "card_delivery_estimate", "banking77",
     "I just moved to {} and ordered a new card", "Thanks, your order is in.", ("Spain", "Canada")),
    ("What's the earliest time to receive my card?", "card_delivery_estimate", "banking77",
     "I ordered a replacement card on {}", "I can see the order.", ("Monday", "Friday")),
    ("Will I be charged an extra fee if I need to exchange currency?", "exchange_charge", "banking77",
     "I want to exchange £500 into euros on {}", "Okay.", ("Saturday", "Tuesday")),
    ("What is the maximum I can top up?", "top_up_limits", "banking77",
     "I'm on the {} plan", "Thanks, I can see your plan.", ("Standard", "Premium")),
    ("Can I make an account for my daughter?", "age_limit", "banking77",
     "My daughter is {} and wants her own card", "How lovely.", ("12", "17")),
    ("Which ATMs am I allowed to get money from?", "atm_support", "banking77",
     "I'm in {} for the week", "Enjoy your stay!", ("Thailand", "France")),
    ("Is there a charge for transfers?", "top_up_by_bank_transfer_charge", "banking77",
     "I need to send {} to my landlord today", "Okay, you can do that from Payments.", ("£40", "£4,000")),
    ("How long does a transfer take?", "pending_transfer", "banking77",
     "I'm sending money to my sister in {}", "Okay.", ("Poland", "Canada")),
    ("how busy does it get around 7pm", "how_busy", "clinc150",
     "We've got a table at {} tonight", "Enjoy your meal!", ("Luigi's", "The Ivy")),
    ("Can I have it delivered on a specific date?", "card_delivery_estimate", "banking77",
     "I ordered a new card to my address in {}", "Thanks, it's been dispatched.", ("Leeds", "Belfast")),
]

# Histories that state details (names, places, days, sums, plans) about something, tagged with their subject
HISTORIES = {
    "sent_money": ("transfer", [u("I sent £250 to my brother in Spain on Monday"),
                                a("I can see it: it arrived on Tuesday."), u("great thanks"), a("Anything else?")]),
    "rome": ("travel", [u("I'm flying to Rome on Friday, will my card work there?"),
                        a("Yes, it works in Italy, with no fees on card payments.")]),
    "daughter": ("age", [u("My daughter is 15, can she get a card?"),
                         a("Yes, from 13 with a parent's consent: add her under Family.")]),
    "moving": ("address", [u("I'm on the Premium plan and I'm moving to Leeds next month"),
                           a("Thanks for letting us know: update your address under Profile once you've moved.")]),
    "parcel": ("delivery", [u("Order 55120 still hasn't arrived"), a("I'm sorry: it's with the courier and due tomorrow."),
                            u("ok cheers"), a("You're welcome. Anything else?")]),
    "tesco": ("payment", [u("I paid £89.99 at Tesco twice"),
                          a("One of them is a pending authorisation; it will drop off within 3 days.")]),
    "table": ("booking", [u("Can you book me a table for 4 at Luigi's on Saturday?"), a("Done: 7pm on Saturday."),
                          u("thanks!"), a("Enjoy! Anything else?")]),
    "bristol": ("branch", [u("I'm staying in Bristol this week, where is the nearest branch?"),
                           a("Our Bristol branch is on Corn Street, open 9 to 5.")]),
}

# Self-contained final questions, verbatim, with the history subjects that would bear on them
FINALS = [
    ("If I wanted to change my PIN, how would I do that?", "change_pin", "banking77", {"travel"}),
    ("Where do I go to edit my personal details on my account?", "edit_personal_details", "banking77", {"address"}),
    ("What's the process for terminating an account?", "terminate_account", "banking77", set()),
    ("How do I go about topping up with Google Pay?", "apple_pay_or_google_pay", "banking77", set()),
    ("Can I order a second card?", "getting_spare_card", "banking77", {"age"}),
    ("Is my PIN the same thing as my passcode?", "get_physical_card", "banking77", set()),
    ("Can I use my American Express card with Apple Pay?", "apple_pay_or_google_pay", "banking77", set()),
    ("What are the restrictions of the disposable cards?", "disposable_card_limits", "banking77", set()),
    ("Is there a way to set up an auto top-up?", "automatic_top_up", "banking77", set()),
    ("how many calories does a big mac have", "calories", "clinc150", set()),
    ("what timezone is phoenix in", "timezone", "clinc150", set()),
    ("Which countries do you operate in", "country_support", "banking77", {"travel"}),
    ("Do you accept Mastercard?", "supported_cards_and_currencies", "banking77", set()),
    ("What currencies can my account be in?", "fiat_currency_support", "banking77", {"travel", "transfer"}),
    ("Where can I get a new passcode?", "passcode_forgotten", "banking77", set()),
    ("My phone is lost I don't want someone to use my account, what can I do?", "lost_or_stolen_phone",
     "banking77", set()),
    ("What is the fee for a foreign currency exchange?", "exchange_charge", "banking77", {"travel", "transfer"}),
    ("what is the limit for top-ups?", "top_up_limits", "banking77", {"address"}),  # Premium plan in "moving"
    ("Can I change my pin number at a cash machine?", "change_pin", "banking77", {"travel"}),
    ("How do I get a card in the EU?", "country_support", "banking77", {"travel", "address", "age"}),
]


def pairs():
    out = []
    for n, (final, intent, source, turn, reply, (x, y)) in enumerate(TRAPS, 1):
        wander = WANDER if n % 2 == 0 else []
        def conv(value):
            return [u(turn.format(value)), a(reply), *wander, u(final)]
        out.append({"id": f"facts-trap{n:02d}", "subtype": "detail_swap", "same_answer": False, "source": source,
                    "intent": intent, "a": conv(x), "b": conv(y),
                    "note": f"the answer depends on the detail stated earlier ({x} / {y})"})
    names = list(HISTORIES)
    for n, (final, intent, source, bearing) in enumerate(FINALS, 1):
        usable = [h for h in names if HISTORIES[h][0] not in bearing]
        first, second = usable[(2 * n) % len(usable)], usable[(2 * n + 3) % len(usable)]
        out.append({"id": f"facts-ih{n:02d}", "subtype": "irrelevant_history", "same_answer": True, "source": source,
                    "intent": intent, "a": HISTORIES[first][1] + [u(final)], "b": HISTORIES[second][1] + [u(final)],
                    "note": f"the histories ({first}, {second}) are about other things"})
    return out


def main():
    rows = pairs()
    for name in ("dev", "heldout"):
        path = OUT / f"conversation_pairs_facts_{name}.jsonl"
        chosen = [r for r in rows if split_of(r["intent"]) == name]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen))
        print(path.name, len(chosen), sum(not r["same_answer"] for r in chosen), "traps")


if __name__ == "__main__":
    main()
