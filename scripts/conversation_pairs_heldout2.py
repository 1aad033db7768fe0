"""Writes tests/data/conversation_pairs_heldout2.jsonl (60 held-out conversation pairs, sixth session)."""
import json, sys

def conv(*texts):
    # alternating user/assistant turns starting with the user
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]

rows = []
def add(sub, same, a, b):
    rows.append({"id": f"ho2-{sub}-{sum(r['subtype'] == sub for r in rows) + 1:02d}", "subtype": sub,
                 "same_answer": same, "a": conv(*a), "b": conv(*b)})

R = "same_context_reworded"
add(R, True, ["How do I cancel my subscription?", "Go to Settings > Billing and choose Cancel subscription.", "will I get charged again after that?"],
    ["what's the way to end my subscription?", "You can cancel it under Settings > Billing.", "Will I be charged again after that?"])
add(R, True, ["Do you ship to Australia?", "Yes, we ship to Australia with tracked delivery.", "how long does it take?"],
    ["Can you deliver to Australia?", "We do, tracked delivery is available to Australia.", "How long will it take?"])
add(R, True, ["I'm on the Family plan", "Thanks, I can see your Family plan.", "how many profiles can I add?"],
    ["My account is on the Family plan", "Got it, Family plan.", "How many profiles am I allowed to add?"])
add(R, True, ["How do I change my delivery address?", "Open the order and choose Change address before it ships.", "is there a fee for that?"],
    ["Can I update the address on my delivery?", "Yes, open the order and pick Change address before dispatch.", "Does that cost anything?"])
add(R, True, ["My parcel arrived damaged", "Sorry to hear that. You can report it from the order page within 14 days.", "do I need to send photos?"],
    ["The package I got was broken", "I'm sorry! Report it on the order page within 14 days.", "Do I have to send pictures?"])
add(R, True, ["I want to upgrade to the Pro plan", "Pro is $20 a month; you can upgrade in Billing.", "is it billed monthly or yearly?"],
    ["I'd like to move up to Pro", "Pro costs $20 per month and you can switch in Billing.", "Is it charged monthly or annually?"])
add(R, True, ["I forgot my password", "Use Forgot password on the sign-in page and we'll email a reset link.", "how long is the link valid?"],
    ["I can't remember my password", "Click Forgot password when signing in and we'll email you a reset link.", "How long does the link stay valid?"])
add(R, True, ["I'd like to return a jacket", "You can return it within 30 days from your orders page.", "do I have to pay for return shipping?"],
    ["I want to send back a jacket", "Returns are accepted within 30 days via your orders page.", "Do I pay for the return postage?"])
add(R, True, ["How do I add a second user to my account?", "Go to Account > Users and choose Invite.", "do they need their own email?"],
    ["Can I add another user to my account?", "Yes: Account > Users, then Invite.", "Does the other user need their own email address?"])
add(R, True, ["My card was declined", "That can happen if the billing address doesn't match. Check it under Payment methods.", "what else could cause it?"],
    ["My payment card got declined", "Often the billing address doesn't match; check Payment methods.", "What else might cause that?"])
add(R, True, ["I'm travelling to Japan next month", "Thanks, noted.", "will my card work there?"],
    ["Next month I'm going to Japan", "Okay, thanks for letting us know.", "Will my card work over there?"])
add(R, True, ["How do I book a repair for my laptop?", "Book it online under Support > Repairs.", "how long does the repair take?"],
    ["Where do I book a laptop repair?", "You can book online in Support > Repairs.", "How long will the repair take?"])

C = "same_context_extra_chatter"
add(C, True, ["Do you deliver on Sundays?", "Yes, in most cities for a $5 fee.", "do I need to be home?"],
    ["hi there!", "Hello! How can I help?", "Do you deliver on Sundays?", "Yes, in most cities for a $5 fee.", "ok cool", "Anything else?", "do I need to be home?"])
add(C, True, ["How do I cancel my gym membership?", "Give one month's notice from the app under Membership.", "can I freeze it instead?"],
    ["How do I cancel my gym membership?", "Give one month's notice from the app under Membership.", "hmm let me think", "Take your time.", "can I freeze it instead?"])
add(C, True, ["I'm on the Basic plan", "Thanks, I can see Basic.", "how much storage do I get?"],
    ["good morning", "Good morning! How can I help?", "I'm on the Basic plan", "Thanks, I can see Basic.", "how much storage do I get?"])
add(C, True, ["Can I change my flight date?", "Yes, in Manage booking, up to 24 hours before departure.", "is there a fee?"],
    ["Can I change my flight date?", "Yes, in Manage booking, up to 24 hours before departure.", "thanks, that's helpful 😊", "You're welcome!", "is there a fee?"])
add(C, True, ["My internet keeps dropping", "Please restart your router and wait two minutes.", "what if that doesn't work?"],
    ["My internet keeps dropping", "Please restart your router and wait two minutes.", "ugh, ok", "I know it's frustrating.", "what if that doesn't work?"])
add(C, True, ["How do I redeem a gift card?", "Enter the code at checkout under Gift card.", "can I use two on one order?"],
    ["hey", "Hi! What can I do for you?", "How do I redeem a gift card?", "Enter the code at checkout under Gift card.", "great, thank you so much", "My pleasure.", "can I use two on one order?"])
add(C, True, ["I want to close my savings account", "You can close it in the app under Accounts > Close account.", "what happens to the interest?"],
    ["I want to close my savings account", "You can close it in the app under Accounts > Close account.", "sorry, one more thing", "Sure.", "what happens to the interest?"])
add(C, True, ["I ordered the wrong size shoes", "No problem, you can exchange them from your orders page.", "how long will the exchange take?"],
    ["I ordered the wrong size shoes", "No problem, you can exchange them from your orders page.", "phew 😅", "😊", "how long will the exchange take?"])
add(C, True, ["Do you price match?", "Yes, against major retailers within 7 days of purchase.", "how do I claim it?"],
    ["Do you price match?", "Yes, against major retailers within 7 days of purchase.", "oh nice!", "😊", "how do I claim it?"])
add(C, True, ["My order hasn't arrived yet", "Sorry about that. Standard delivery can take up to 7 working days.", "when can I report it missing?"],
    ["hello, hope you're well", "I'm well, thanks! How can I help?", "My order hasn't arrived yet", "Sorry about that. Standard delivery can take up to 7 working days.", "when can I report it missing?"])
add(C, True, ["How do I set up direct debit?", "Go to Payments > Direct debit and enter your bank details.", "when is the first payment taken?"],
    ["How do I set up direct debit?", "Go to Payments > Direct debit and enter your bank details.", "ok, done that", "Great!", "when is the first payment taken?"])
add(C, True, ["I'd like to add travel insurance to my booking", "You can add it under Manage booking > Extras.", "does it cover cancellations?"],
    ["I'd like to add travel insurance to my booking", "You can add it under Manage booking > Extras.", "brb, phone's ringing", "No problem.", "back!", "Welcome back.", "does it cover cancellations?"])

I = "irrelevant_history"
add(I, True, ["My order came damaged", "Sorry! I've sent a replacement; it ships tomorrow.", "thanks", "You're welcome.", "What are your customer service opening hours?"],
    ["I love the new app design!", "Thank you, glad you like it!", "What are your customer service opening hours?"])
add(I, True, ["I returned a lamp last week", "Your refund was issued yesterday and will show in 3 to 5 days.", "How do I turn on two-factor authentication?"],
    ["hi, how's it going?", "Great, thanks! How can I help?", "How do I turn on two-factor authentication?"])
add(I, True, ["Where's my parcel?", "It's with the courier and due on Thursday.", "ok thanks", "Anything else?", "Do you offer a student discount?"],
    ["How do I update my email address?", "Go to Profile > Email and choose Edit.", "Do you offer a student discount?"])
add(I, True, ["My password reset email didn't arrive", "I've sent another; please check your spam folder.", "got it", "Great.", "Can I pay with PayPal?"],
    ["thanks for the quick delivery!", "Happy to hear it arrived quickly!", "Can I pay with PayPal?"])
add(I, True, ["Is the blue kettle in stock?", "Yes, we have 12 in stock.", "How do I delete my account?"],
    ["good afternoon", "Good afternoon! What can I do for you?", "How do I delete my account?"])
add(I, True, ["How do I change my profile picture?", "Tap your avatar in Profile and choose a new photo.", "Do you have a loyalty programme?"],
    ["Is there a phone number I can call?", "Yes, 0800 123 456, weekdays 8am to 6pm.", "Do you have a loyalty programme?"])
add(I, True, ["the app crashes when I open it", "Please update to the latest version; that fixes it.", "that worked, thanks", "Glad to hear it!", "How do I unsubscribe from marketing emails?"],
    ["Do you sell gift cards?", "Yes, from $10 to $200 on our website.", "How do I unsubscribe from marketing emails?"])
add(I, True, ["How do I reset my PIN?", "Go to Cards > Reset PIN in the app.", "What is your returns policy for sale items?"],
    ["good evening", "Good evening! How can I help?", "What is your returns policy for sale items?"])
add(I, True, ["how do I change my password?", "Go to Settings > Security > Change password.", "How long does standard delivery take?"],
    ["I want to update my phone number", "You can do that under Profile > Phone.", "done", "Great!", "How long does standard delivery take?"])
add(I, True, ["the website looks great btw", "Thanks so much!", "Where can I find my invoices?"],
    ["My discount code won't apply", "It expired yesterday; I've added a new one to your account.", "cheers", "You're welcome!", "Where can I find my invoices?"])
add(I, True, ["My delivery was two days late", "Sorry about that. I've refunded the delivery fee.", "ok thank you", "You're welcome. Anything else?", "Can I change my username?"],
    ["tell me a joke", "Why did the scarecrow win an award? He was outstanding in his field!", "haha", "😊", "Can I change my username?"])
add(I, True, ["My coupon expired yesterday", "I've extended it by a week for you.", "Do you offer gift wrapping?"],
    ["I'm having trouble logging in", "Try clearing your browser cache, then sign in again.", "that fixed it", "Great!", "Do you offer gift wrapping?"])

X = "context_swap"
add(X, False, ["I'd like express shipping", "Sure, you can choose Express at checkout.", "how much does it cost?"],
    ["I'd like the premium support plan", "Sure, you can add it under Account > Support.", "how much does it cost?"])
add(X, False, ["I booked a table for tonight", "Your booking is confirmed for 7pm.", "can I cancel it?"],
    ["I just started a monthly subscription", "Welcome! Your subscription is active.", "can I cancel it?"])
add(X, False, ["How do I transfer my number to you?", "Request a PAC from your old provider and enter it when you sign up.", "how long does that take?"],
    ["How do I get a replacement card?", "Order one in the app under Cards > Replace card.", "how long does that take?"])
add(X, False, ["Can I withdraw cash at ATMs abroad?", "Yes, at any ATM with the Visa sign.", "is there a limit?"],
    ["Can I upload files to my shared folder?", "Yes, drag them into the folder or use Upload.", "is there a limit?"])
add(X, False, ["I want to get my phone screen repaired", "We repair screens in all our stores.", "do I need an appointment?"],
    ["I want to open a business account", "We can open business accounts in any branch.", "do I need an appointment?"])
add(X, False, ["I bought concert tickets through you", "Thanks, I can see your order.", "is it refundable?"],
    ["I bought the extended warranty for my TV", "Thanks, I can see your order.", "is it refundable?"])
add(X, False, ["I need my annual tax statement", "It's in your online banking.", "where do I find it?"],
    ["I need my Wi-Fi password", "It's printed on your router.", "where do I find it?"])
add(X, False, ["I'd like to apply for a credit card", "Great, you can apply online in about 10 minutes.", "what are the requirements?"],
    ["I'd like to apply for a job with you", "Great, you can apply on our careers page.", "what are the requirements?"])

D = "detail_swap"
add(D, False, ["I'm in Germany", "Thanks, noted.", "how much is delivery?"],
    ["I'm in Spain", "Thanks, noted.", "how much is delivery?"])
add(D, False, ["I'm on the Standard plan", "Thanks, I can see Standard.", "can I add another screen?"],
    ["I'm on the Premium plan", "Thanks, I can see Premium.", "can I add another screen?"])
add(D, False, ["I want to send $200 abroad", "You can do that under Payments > International.", "what's the fee?"],
    ["I want to send $2,000 abroad", "You can do that under Payments > International.", "what's the fee?"])
add(D, False, ["Can you check my order 55120?", "I can see order 55120.", "has it shipped yet?"],
    ["Can you check my order 55102?", "I can see order 55102.", "has it shipped yet?"])
add(D, False, ["How long does shipping to Ireland take?", "Usually 3 to 5 working days.", "and to France?"],
    ["How long does shipping to Ireland take?", "Usually 3 to 5 working days.", "and to Italy?"])
add(D, False, ["I'd like to book a table for 2 people", "Sure, what day?", "Saturday", "Saturday works.", "do I need to pay a deposit?"],
    ["I'd like to book a table for 8 people", "Sure, what day?", "Saturday", "Saturday works.", "do I need to pay a deposit?"])
add(D, False, ["I'd like a table on Friday", "Sure, we have space on Friday.", "are you open late that day?"],
    ["I'd like a table on Monday", "Sure, we have space on Monday.", "are you open late that day?"])
add(D, False, ["I'm 17", "Thanks for letting me know.", "can I open a current account?"],
    ["I'm 19", "Thanks for letting me know.", "can I open a current account?"])

F = "intent_flip"
add(F, False, ["My internet is slow", "Shall I run a line test?", "yes please"],
    ["My internet is slow", "Shall I book an engineer visit?", "yes please"])
add(F, False, ["I don't want my subscription to renew", "I can change that setting for you. Shall I do it now?", "yes"],
    ["I want my subscription to renew automatically", "I can change that setting for you. Shall I do it now?", "yes"])
add(F, False, ["I'd like to close my account", "I can help with that.", "what do I need to do?"],
    ["I'd like to reopen my account", "I can help with that.", "what do I need to do?"])
add(F, False, ["I want to stop getting marketing emails", "I can help with that.", "how do I do that?"],
    ["I want to start getting marketing emails", "I can help with that.", "how do I do that?"])
add(F, False, ["I'd like a refund for my order", "Shall I refund it to your card?", "that's fine"],
    ["I'd like a refund for my order", "Shall I give you store credit instead?", "that's fine"])
add(F, False, ["I want to add my son to my car insurance", "Sure, I can help.", "how much will my premium change?"],
    ["I want to remove my son from my car insurance", "Sure, I can help.", "how much will my premium change?"])
add(F, False, ["I need to book a service", "Would you like the 9am or the 4pm slot?", "the first one"],
    ["I need to book a service", "Would you like the 4pm or the 9am slot?", "the first one"])
add(F, False, ["I want to upgrade my broadband", "Sure. Would you like me to check what's available?", "go ahead"],
    ["I want to downgrade my broadband", "Sure. Would you like me to check what's available?", "go ahead"])

with open(sys.argv[1] if len(sys.argv) > 1 else "tests/data/conversation_pairs_heldout2.jsonl", "w", encoding="utf-8") as f:
    for r in rows:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
print(len(rows))
