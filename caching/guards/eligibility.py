"""Eligibility: may a question share a cached answer at all, and what kind of answer does it want?

Personal questions (about this customer's own records), action requests ("Cancel my order") and
questions about the present moment ("is the API down", "today") bypass every shared answer cache.
Eligible questions get an intent class (answer type), recorded with each decision."""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from caching.guards.lexicon import (
    _ACTION_VERBS, _ASKS_ABOUT, _ID_HEADS, _ASKING_VERBS, _asks_for_information, _IMPERATIVE_FOLLOWERS, _INFO_VERBS, _MY_PERSONAL_NOUN, _NOUN_FRAME_AFTER_VERB,
    _REQUEST_VERBS, _STOP, _TIME_DEPENDENT, _TRANSACTIONAL_VERBS,
)
from caching.guards.signature import parsed

# Answer types. howto/policy/availability are one family: a "can I", a "how do I" and an
# "is it available" about the same thing are answered by the same help article.
INTENT_CLASSES: tuple[str, ...] = (
    "howto", "policy", "availability", "pricing", "duration", "schedule",
    "location", "contact", "reason", "status", "general",
)
INTENT_FAMILIES: dict[str, str] = {"howto": "procedure", "policy": "procedure", "availability": "procedure"}

CATEGORIES = ("general", "personal", "action", "time")


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    category: str  # "general" | "personal" | "action" | "time"
    intent: str  # one of INTENT_CLASSES
    reason: str
    rule: str = ""  # the rule that decided (a key of RULES), "" for general


# Every rule that makes a question ineligible, hard or soft. A hard rule always decides: the
# question gives personal details, names a record, asks about its own state in so many words
# ("where is my order", "my card is blocked", "tell me my balance", "which plan am I on"), tells us
# to act ("cancel my order", "rotate my key.", "can you close my account"), replies to the
# conversation, or is caught by the language-independent nets. A soft rule reads wording that is
# often, not always, personal, an action or about the present ("I ordered ...", "I need a new card",
# "my invoice", "I want to open an account", "latest", "now"): such a question may still read the
# semantic cache (``soft_only``), never write it.
RULES: dict[str, str] = {
    "action_imperative": "hard",  # "Cancel my order", "Upgrade to the pro plan", "can you refund it", "rotate my key."
    "action_declared": "soft",  # "I want to open an account" (no object of the customer's own)
    "action_want_mine": "hard",  # "I need my card replaced"
    "action_want": "soft",  # "I need a new card"
    "action_request_for_me": "hard",  # "could you check my order", "... for me"
    "personal_details": "hard",  # "my name is ...", an email address
    "personal_record": "hard",  # "order 4471"
    "personal_state_question": "hard",  # "where is my order", "has my package shipped"
    "personal_own_account": "hard",  # "tell me my balance", "how many points do I have"
    "personal_own_state": "hard",  # "which plan am I on", "am I verified", "do I still have access"
    "personal_own_tracking": "hard",  # "track where my parcel is"
    "personal_context_reply": "hard",  # "it's a savings account"
    "personal_status_event": "hard",  # "declined", "charged twice", "pending"
    "personal_my_subject": "hard",  # "my transfer didn't go through"
    "personal_pronoun_state": "hard",  # "is it too late to return it", "when will it arrive"
    "personal_my_state_word": "hard",  # "my ... stuck/refunded/missing"
    "personal_declarative": "soft",  # "I have a question about my card"
    "personal_failure_report": "soft",  # "the app did not let me log in"
    "personal_my_noun": "soft",  # "a PDF of my invoice"
    "personal_narrative": "soft",  # "I ordered ...", "I was ..."
    "time_words": "soft",  # "now", "latest", "this year", "is the X down"
    "foreign_personal": "hard",  # a first-person possessive in another language
    "foreign_own_state": "hard",  # "Welchen Plan habe ich?", "Bin ich im Pro-Plan?"
    "foreign_request": "hard",  # "Rotiere bitte den Schlüssel."
    "record_id": "hard",  # an id-like token with four digits or more
    "foreign_time": "hard",  # "heute", "maintenant"
}
_PERSONAL_OBJECTS = ("me", "my", "our", "us", "it", "this", "that", "them")


# Intent ------------------------------------------------------------------------------

_INTENT_RULES: list[tuple[str, re.Pattern]] = [
    ("reason", re.compile(r"^(?:(?:hi|hello|hey|ok|okay|so)[, ]+)?(?:why|how come|what is the reason|for what reason)\b")),
    ("status", re.compile(r"\b(?:where|when|why|what) (?:is|are|was|were|will|did|does|has|have|happened to) (?:my|our)\b|\bstatus of\b|\b(?:has|have|did|is|was) (?:my|our) \w+ (?:\w+ )?(?:arrive|arrived|ship|shipped|sent|gone through|go through|come|cleared|posted|processed|delivered|been)\b")),
    ("pricing", re.compile(r"\bhow much (?:is|are|does|do|will|would|should|for|to|it|did|was|were|extra|more)\b|\b(?:cost|costs|price|prices|pricing|priced|fee|fees|charge|charges|surcharge|tariff|commission|rate|rates|expensive|cheap|cheaper|afford)\b")),
    ("duration", re.compile(r"\bhow long\b|\bturnaround\b|\bprocessing time\b|\bdelivery time\b|\btake to (?:arrive|process|clear)\b")),
    ("schedule", re.compile(r"\bwhen\b|\bhours\b|\bare you open\b|\bopen on\b|\bdeadline\b|\bschedule\b|\btimetable\b")),
    ("contact", re.compile(r"\b(?:contact|reach|call|phone|email|e-mail|message|talk to|speak (?:to|with)|chat with|get in touch(?: with)?)\s+(?:you|your|us|support|someone|somebody|anyone|a person|a human|customer|the (?:team|store|office|bank|hotel|airline|company|shop|branch))\b|\byour (?:phone|email|contact)\b|\bhow (?:do|can|should) (?:i|we) (?:contact|reach|call)\b|\bcontact (?:details|info|information|number|form|page)\b|\bsupport (?:phone|email|chat|hours|line)\b")),
    ("howto", re.compile(r"\bwhere (?:can|do|should|would|could|will) (?:i|we) (?:find|locate|see|view|access|enter|change|update|download|upload|edit|manage|check|turn|set|setup|enable|disable|type|add|apply|get (?:to|the option|the setting))\b")),
    ("location", re.compile(r"\bwhere\b|\b(?:located|location|locations|nearest|directions to|address of|your address)\b")),
    ("howto", re.compile(r"^(?:find|locate|view|see|check|access|read|get|download|print|show me how)\b|\bhow (?:do|can|should|would|could|does|to|is|are|was|were)\b|\bsteps?\b|\binstructions?\b|\bguide\b|\bwhat (?:do|should|must) (?:i|we) (?:do|need)\b|\bway to\b|\bprocess\b|\bprocedure\b|\bhow$")),
    ("policy", re.compile(r"\bhow (?:many|much|often|big|large|small|old|far)\b")),
    ("availability", re.compile(r"\bavailable\b|\bdo you (?:have|offer|sell|carry|stock|provide|support|rent|serve)\b|\bis there (?:a|an|any)\b|\bare there any\b|\boffer\b")),
    ("policy", re.compile(r"\bpolic(?:y|ies)\b|\b(?:can|may|could) (?:i|we|you|my|our)\b|\bam i (?:allowed|able|eligible)\b|\bis it (?:possible|allowed|ok|okay)\b|\b(?:allowed|permitted|eligible|eligibility|require|required|requirements?|rules?|limits?|allowance)\b|\bdo (?:i|we|you) (?:need|have to)\b|\b(?:does|do|is|are) [\w ]{1,30}\b(?:include|included|cover|covered)\b|\bdo you\b|\bdoes (?:the|your|a|an)\b|\bwhich\b|\bwhat (?:are|is) (?:the|your)\b")),
]


def _intent(norm: str) -> str:
    for name, rx in _INTENT_RULES:
        if rx.search(norm):
            return name
    return "general"


# Eligibility ------------------------------------------------------------------------

_HOWTO_FRAME = re.compile(r"^(?:(?:hi|hello|hey|please|ok|okay)[, ]+)?(?:(?:find|locate|view|access|download|print)\b(?! me\b)|how (?:do|can|should|would|could|to)|how$|where (?:can|do|should) (?:i|we) (?:find|locate|see|view|access|enter|change|update|download|upload|edit|manage|check|set|setup|enable|disable|add|apply|get|request|print|obtain)|can (?:i|we)|could (?:i|we)|may i|is it possible|am i (?:allowed|able)|what (?:do|should) (?:i|we) (?:do|need)|what is the (?:best )?way)\b")
# A first-person story that ends in a how-to ("I forgot my password, what should I do?", "I want to
# close my account, how do I do it?") asks for the general procedure: its answer is the help article.
_HOWTO_CLAUSE = re.compile(r"(?:[,.;:?!-]|\b(?:so|and|but))\s*(?:how (?:do|can|should|would|could) (?:i|we)|how to|what (?:should|do|can|must) (?:i|we) do|what are (?:the|my) options|where (?:can|do|should) (?:i|we))\b|\bhow\s*[?!.]*$")
_SELF_ID = re.compile(r"\bmy (?:full |first |last )?(?:name|email|phone|postaladdress|address|username|date of birth|birthday|account number|card number) (?:is|was)\b|[\w.+-]+@[\w-]+\.\w+")
_STATE_Q = re.compile(r"\bwhere (?:did|has|have|had) (?:the|my|this|that|our)\b|\b(?:where|when|why|what|how much|how many|how long|how come) (?:is|are|was|were|will|would|did|does|do|has|have|had|happened to|about|has happened to|is going on with|is wrong with|is happening (?:to|with)|going on with|wrong with)(?: not)? (?:my|our)\b|\b(?:has|have|did|is|was|were|are|will|does|do) not (?:my|our) \w+|\b(?:has|have|had|did|is|was|were|are|will|does|do) (?:my|our) \w+")
_NARRATIVE = re.compile(r"\bi (?:need|want|would like|demand|expect) (?:my|our)\b|(?<!\bif )(?<!\bafter )(?<!\bbefore )(?<!\bwhen )(?<!\bonce )(?<!\buntil )(?<!\bwhether )(?<!\bam )(?<!\bwas )(?<!\bwere )(?<!\bhave )(?<!\bhad )(?<!\bdid )(?<!\bdo )(?<!\bcan )(?<!\bcould )(?<!\bshould )(?<!\bwould )(?<!\bwill )(?<!\bshall )(?<!\bmay )(?<!\bmust )\b(?:i|we) (?:just |already |recently |accidentally )?[a-z]{3,}ed\b(?! to (?:know|ask))|(?<!\bif )(?<!\bafter )(?<!\bbefore )(?<!\bwhen )(?<!\bonce )(?<!\buntil )(?<!\bwhether )\b(?:i|we) (?:have been|have not|had|was|were|got|just|already|accidentally|recently|never|still|ordered|paid|bought|received|sent|made|lost|tried|applied|booked|placed|submitted|returned|requested|noticed|see|saw|can not see|did not|do not see|am still|am waiting|have a|have an|was charged|haven|am having|keep getting|can not|could not|need help with my)\b")
_OWN_STATE = re.compile(r"\b(?:tell|show|give|send|check|get|find|list|read) me (?:\w+ ){0,4}?(?:my|our)\b|\b(?:can|could|will|would|should|may|might) (?:my|our)\b|\b(?:are|have|has|did|will|were|was) you (?:\w+ ){1,2}?(?:me|my|our|us)\b|\b(?:has|have|did|is|was) (?:anyone|someone|somebody) (?:\w+ ){1,3}?(?:my|our)\b|\bcheck (?:my|our)\b|\bwhy (?:did|was|were|has|have|had|is|are)(?: not)? (?:i|me|the \w+(?: \w+)? (?:give|charge|take|decline|block|refuse|reject|cancel)\w* (?:me|my))\b|\b(?:do i have(?! to\b)|have i got|am i (?:owed|due|eligible|entitled|getting)|do i owe|did i|have i|was i|my (?:balance|points|statement|credit score|limit|status)|how much (?:money )?(?:do i|have i|is in my|is on my|did i)|how many \w+(?: \w+)? (?:do|did|have) i(?! have to\b))\b")
_MY_SUBJECT = re.compile(r"(?<!\bif )(?<!\bwhen )(?<!\bonce )(?<!\bafter )(?<!\bbefore )(?<!\bwhether )(?<!\bcase )(?<!\bthat )\b(?:(?:my|our) (?:\w+ ){0,2}?|mine |ours )(?:is|are|was|were|has|have|had|did|does|do|will|got|been|keeps|kept|still|just|never|seems|seem|shows|says|stopped|failed|is not|has not|did not|will not|can not|would not|does not)\b")
_DECLARATIVE_MINE = re.compile(r"^(?:(?:hi|hello|hey|ok|okay|so|well|um|hmm)[, ]+)?(?:it is|it was|this is|that is|i|we|my|our|there is|there was|there are|someone|somebody)\b.*\b(?:my|our|me|i)\b")
_FAILURE_REPORT = re.compile(r"(?<!\bif )(?<!\bwhat if )(?<!\bhappens if )\b(?:did not|does not|do not|is not|are not|has not|have not|was not|were not|will not|can not|could not|would not|never)\s+(?:\w+\s+){0,2}?(?:work|working|arrive|arrived|show|showing|shown|go through|gone through|went through|appear|appeared|come|came|load|loading|receive|received|accept|accepted|process|processed|update|updated|clear|cleared|post|posted|let me|allow me|get through|reach|reached)\b")
_PRONOUN_STATE = re.compile(r"\bwhen (?:will|would|do|can|should|did) (?:i|we) (?:get|receive|have|see|hear|be able to use) (?:it|them|this|that|there|back|my|our|the money|the refund)\b|\b(?:when|where|why) (?:will|did|has|have|would|should|is|was) (?:it|they|(?:this|that)(?= (?:arrive|come|ship|be|get|go|happen|show)\b|$))\b(?! (?:take|cost|mean|work|usually|normally|typically|located))|\b(?:should|will|would|has|did) (?:it|they) (?:arrive|come|ship|be delivered|get here|be here|show up|go through)\b|\b(?:it|this|that|they|them)\b.*\b(?:too late|still|yet|arrived|shipped|on its way|on the way|not arrived|not come|not received)\b|\btoo late\b")
_ACTION_LEAD = re.compile(r"^(?:(?:hi|hello|hey|ok|okay|so|yes|hi there|thanks|thank you|great)[, ]+)?(?:(?:please|pls|kindly|just|now)\s+)?(?:(?:can|could|would|will) you (?:please |kindly |just )?|i (?:want|would like|need|wish|wanna|am looking|am trying|have to|must) (?:you )?to (?:please )?|i am trying to |i would love to |help me |let me |go ahead and |do not |never )?(\w+)(?: (\w+))?")
_OWN_TRACKING = re.compile(r"\b(?:know|tell|find out|see|check|track) (?:when|where|if|whether|how long) (?:my|our)\b|\b(?:get|make) (?:my|our) (?:\w+ ){1,3}?(?:to work|working|work again)\b")
_CONTEXT_REPLY = re.compile(r"^(?:(?:yes|yeah|yep|no|nope|ok|okay|sure|right|correct|exactly|great|thanks|thank you)\b[ ,.!]*)*(?:it is|it was|its|this is|that is|these are|they are|it is about|it concerns|about the|about my|there is|there was|there are|there were)\b(?!.*\?)|^(?:yes|yeah|yep|no|nope|correct|right)\b")
_STATUS_EVENT = re.compile(r"\b(?:declined|pending|reverted|rejected|bounced|on hold|not received|not arrived|not showing|not show up|not gone through|not go through|still waiting|been charged|got charged|was charged|double charged|charged twice|charged me|missing)\b")
_HYPOTHETICAL = re.compile(r"\b(?:if|would|could|might|can a|can an|can the|mean|means|happens|usually|typically|normally|reasons?|why do|why does|why are|why is a|what causes|in case)\b")
_ACTION_LEAD_QWORD = re.compile(r"^(?:how|what|where|when|why|which|who|can|could|is|are|do|does|will|would|should|may|am)\b")
_REQUEST_FOR_ME = re.compile(r"\b(?:can|could|would|will) you (?:please |kindly |just )?(\w+) (?:me|my|our|us|it|this|that|them)\b|\bfor me\b")
# "Which plan am I on", "am I verified", "are we still on the trial", "do I still have access": the
# asker's own state in every wording, even where the words without "I" would be general ("which plan
# am I on if I signed up through the app?"): a wrong bypass costs one fresh answer, a wrong serve
# shows another customer's answer. Not the asker's state: what a rule does to whoever asks ("am I allowed
# (to) ...", "am I charged for receiving money?", "am I going to need a visa?", "am I limited in ...", "why
# am I being asked to verify my identity?") and whom the asker is talking to ("am I talking to a real person?"); "why am I being charged" stays personal.
_OWN_STATE_Q = re.compile(
    r"\bam i\b(?! (?:allowed|able|permitted|supposed|required|meant|expected)\b"
    r"| (?:going to be |gonna be )?(?:charged|billed)\b| (?:going to|gonna) need\b| in need of\b| limited\b| free to\b"
    r"| (?:talking|speaking|chatting) (?:to|with)\b| being asked\b)"
    r"|\bare we (?:still |currently |already |now )?(?:on|in|subscribed|signed|enrolled|registered|verified|due|owed|"
    r"being|using|eligible|entitled|over|under|a|an)\b"
    r"|\b(?:do|did) (?:i|we) (?:still |already |currently |even |actually |now )?(?:have|own)\b(?! to\b)"
    r"|\bhave (?:i|we) (?:still |already )?got\b|\b(?:is|are) (?:my|our)\b")
# A message that starts with a verb and the customer as its object ("rotate my key.", "send me the
# invoice", "can you regenerate my token") tells us to act, whatever the verb. Not imperatives: a
# function word, a past tense or a gerund ("lost my card", "changing my email"), a verb that asks for
# information ("tell me how", "show me where", "help me", "inform me of"), "... me how/where/if/about", and
# a verb of giving with information as what we should give ("provide me the name of ...").
_IMPERATIVE_MINE = re.compile(
    r"^(?:(?:hi|hello|hey|ok|okay|so|yes|hi there|thanks|thank you|great)[, ]+)?(?:(?:please|pls|kindly|just|now|also)[, ]+)?"
    r"(?:(?:can|could|would|will) you (?:please |kindly |just )?)?([a-z]+) (my|me|our|us)\b(?: (\w+))?")
_NOT_IMPERATIVE = _STOP | _INFO_VERBS | frozenset("""
not regarding re per via without within near unlike except plus minus dear sorry
find locate view access download print show help let explain guide walk teach advise suggest recommend describe
clarify excuse pardon forgive bear mind thank
forgot lost left got made sent paid bought took broke saw found gave received came went had told kept brought
caught spent sold stole wore understood thought heard felt meant
""".split())
_NOT_PAST = frozenset("need feed embed speed shred seed proceed exceed succeed bleed breed heed".split())


def _ineligible(norm: str, tokens: list[str], sig: dict, intent: str) -> Iterator[Eligibility]:
    """The decision of every rule that makes the question ineligible (``Eligibility.rule`` names it),
    in order of precedence, lazily: the first decides for the rules alone; the learned model may pass
    over a soft one (``RULES``), never over a hard one that fires later."""
    howto = bool(_HOWTO_FRAME.search(norm) or _HOWTO_CLAUSE.search(norm)) or norm.endswith(" how")
    # Action requests: an imperative (or "I want to"/"can you" + verb) with an operation verb.
    m = _ACTION_LEAD.match(norm)
    if m:
        verb, after = m.group(1), m.group(2) or ""
        lead = norm[: m.start(1)]
        verb_c = verb if verb in _ACTION_VERBS else ("topup" if verb == "top" else verb)
        is_request_frame = bool(re.search(r"(?:you|to|please|kindly|not|never)\s*$", lead.strip()) or lead.strip().endswith(("you", "to", "please", "not", "never", "kindly")))
        if lead.startswith(("i ", "hi i ", "hello i ", "hey i ")) and verb_c not in _ACTION_VERBS and verb_c not in _INFO_VERBS \
                and verb_c.isalpha() and verb_c not in _STOP:
            verb_c = "get"  # "I want to get/open/apply for..." declares a request for us to act on
        addressed = bool(re.search(r"\byou\b", lead))
        if addressed:
            personal_object = after in _PERSONAL_OBJECTS or " for me" in norm or (
                after == "the" and verb_c in _TRANSACTIONAL_VERBS)
            if not personal_object:
                verb_c = ""
        imperative = verb_c in _ACTION_VERBS and not howto and (
            (after in _IMPERATIVE_FOLLOWERS or re.fullmatch(r"\d+", after or "x") is not None)
            or (is_request_frame and after not in _NOUN_FRAME_AFTER_VERB)
        ) and after not in _NOUN_FRAME_AFTER_VERB and not norm.endswith(" how")
        if verb_c == "open" and after == "hours":
            imperative = False
        if imperative:
            # "Cancel my order", "can you close my account": hard. "I want to open an account" declares
            # a wish that is often a how-to in disguise: soft, the model may read it as general.
            declared = lead.startswith(("i ", "hi i ", "hello i ", "hey i ", "we ")) and after not in _PERSONAL_OBJECTS
            yield Eligibility(False, "action", intent, f"action: asks us to {verb} something ('{' '.join(tokens[:4])}...')",
                              rule="action_declared" if declared else "action_imperative")
    if not howto:
        yield from _imperative(norm, tokens, sig, intent)
    want = re.match(r"^(?:(?:hi|hello|hey|ok|okay|so|please)[, ]+)?(?:(?:i|we) )?(?:need|want|would like|require|demand) (?:a|an|the|some|my|our|another)\b", norm)
    if want and not howto:
        own_object = want.group(0).endswith((" my", " our"))
        yield Eligibility(False, "action", intent, f"action: asks us for something ('{want.group(0)}')",
                          rule="action_want_mine" if own_object else "action_want")
    for rq in _REQUEST_FOR_ME.finditer(norm):
        if not howto and (rq.group(1) is None or rq.group(1) in _ACTION_VERBS or rq.group(1) in _REQUEST_VERBS):
            yield Eligibility(False, "action", intent, f"action: a request addressed to us ('{rq.group(0)}')", rule="action_request_for_me")
    # Personal details given in the question ("my name is ...", an email address) keep it out of
    # shared caches even when it then asks a how-to.
    if sid := _SELF_ID.search(norm):
        yield Eligibility(False, "personal", intent, f"personal: gives the customer's own details ('{sid.group(0)[:40]}')", rule="personal_details")
    # Personal: the customer's own order, account, balance, refund...
    if sig["ids"] and any(t in _ID_HEADS for t in tokens):
        yield Eligibility(False, "personal", intent, f"personal: refers to a specific record ({', '.join(sig['ids'])})", rule="personal_record")
    st = _STATE_Q.search(norm)
    if st and not howto:
        yield Eligibility(False, "personal", intent, f"personal: about the customer's own situation ('{st.group(0)}')", rule="personal_state_question")
    own_q = _OWN_STATE_Q.search(norm)
    if own_q:
        yield Eligibility(False, "personal", intent, f"personal: about the customer's own state ('{own_q.group(0)}')", rule="personal_own_state")
    own = _OWN_STATE.search(norm)
    if own:
        yield Eligibility(False, "personal", intent, f"personal: about the customer's own account ('{own.group(0)}')", rule="personal_own_account")
    track = _OWN_TRACKING.search(norm)
    if track:
        yield Eligibility(False, "personal", intent, f"personal: about the customer's own item ('{track.group(0)}')", rule="personal_own_tracking")
    if _CONTEXT_REPLY.search(norm) and not howto:
        yield Eligibility(False, "personal", intent, "personal: a reply that depends on the conversation so far", rule="personal_context_reply")
    if _STATUS_EVENT.search(norm) and not howto and not _HYPOTHETICAL.search(norm):
        yield Eligibility(False, "personal", intent, f"personal: asks about the state of a specific transaction ('{_STATUS_EVENT.search(norm).group(0)}')", rule="personal_status_event")
    mine = _MY_SUBJECT.search(norm)
    if mine and not howto:
        yield Eligibility(False, "personal", intent, f"personal: reports the state of the customer's own item ('{mine.group(0)}')", rule="personal_my_subject")
    dec = _DECLARATIVE_MINE.search(norm)
    if dec and not howto and not _ACTION_LEAD_QWORD.match(norm):
        yield Eligibility(False, "personal", intent, "personal: the customer describes their own situation", rule="personal_declarative")
    fail = _FAILURE_REPORT.search(norm)
    if fail and not howto:
        yield Eligibility(False, "personal", intent, f"personal: reports a failure the customer ran into ('{fail.group(0)}')", rule="personal_failure_report")
    own_item = _MY_PERSONAL_NOUN.search(norm)
    if own_item and not howto and not _HYPOTHETICAL.search(norm[: own_item.start()]):
        yield Eligibility(False, "personal", intent, f"personal: about the customer's own {own_item.group(1)} ('{own_item.group(0)}')", rule="personal_my_noun")
    nar = _NARRATIVE.search(norm)
    if nar and not howto:
        yield Eligibility(False, "personal", intent, f"personal: describes the customer's own case ('{nar.group(0)}')", rule="personal_narrative")
    pr = _PRONOUN_STATE.search(norm)
    if pr:
        yield Eligibility(False, "personal", intent, f"personal: about the customer's own item ('{pr.group(0)[:40]}')", rule="personal_pronoun_state")
    if re.search(r"\bmy\b", norm) and not howto and re.search(r"\b(?:status|arrive|arrived|received|declined|pending|missing|blocked|frozen|rejected|failed|stuck|charged|deducted|showing|shown|appear|appeared|reverted|refunded|cancelled|canceled)\b", norm):
        yield Eligibility(False, "personal", intent, "personal: about the state of the customer's own item", rule="personal_my_state_word")
    for rx, why in _TIME_DEPENDENT:
        tm = rx.search(norm)
        if tm:
            word = tm.group(1) if tm.groups() else tm.group(0)
            yield Eligibility(False, "time", intent, "time: " + why.format(word), rule="time_words")


def _imperative(norm: str, tokens: list[str], sig: dict, intent: str) -> Iterator[Eligibility]:
    """A message that tells us to act, in the imperative: its mood (``signature._mood``: a verb that
    asks us to act and its object, "rotate the key.") or a verb with the customer as its object
    ("fix my account")."""
    if sig.get("mood"):
        yield Eligibility(False, "action", intent, f"action: tells us to act ('{' '.join(tokens[:4])}...')", rule="action_imperative")
        return
    m = _IMPERATIVE_MINE.match(norm)
    if not m:
        return
    verb, obj, after = m.group(1), m.group(2), m.group(3) or ""
    if verb in _NOT_IMPERATIVE or (verb.endswith("ed") and verb not in _NOT_PAST) or (verb.endswith("ing") and len(verb) > 5):
        return
    if obj in ("me", "us") and after in _ASKS_ABOUT:
        return
    rest = norm[m.start(2):].split()
    if obj in ("me", "us") and ((verb in _ASKING_VERBS and not {"my", "our"} & set(rest[1:7]))
                                or _asks_for_information(verb, rest)):
        return  # "inform me of the fees", "provide me the name of ..." (not "inform my bank", "inform me of my balance")
    yield Eligibility(False, "action", intent, f"action: tells us to {verb} something of the customer's ('{m.group(0)}')",
                      rule="action_imperative")


@dataclass(frozen=True)
class _Analysis:
    question: str
    norm: str
    tokens: tuple[str, ...]
    signature: dict
    eligibility: Eligibility  # the rules' decision (the first rule that fires, or general)
    hard: Eligibility | None  # the first hard rule that fires, if any


@lru_cache(maxsize=8192)
def _analyse(question: str) -> _Analysis:
    norm, tokens, sig = parsed(question)
    intent = _intent(norm)
    fired = _ineligible(norm, list(tokens), sig, intent)
    first = next(fired, None)
    hard = first if first is not None and RULES[first.rule] == "hard" else None
    if first is not None and hard is None:
        hard = next((e for e in fired if RULES[e.rule] == "hard"), None)
    return _Analysis(question, norm, tokens, sig, first or Eligibility(True, "general", intent, f"general {intent} question"), hard)


# A language-independent safety net under the English rules: the guards read English, so in any
# other language a first-person possessive, a record id or a "now" word makes the question
# ineligible. It costs hit rate in those locales and never shares a personal answer.
_FOREIGN_PERSONAL = re.compile(  # "chow mein", "lo mein" are dishes
    r"(?<!\bchow )(?<!\blo )\b(mein|meine|meinen|meinem|meiner|meines|mir|mich|mon|ma|mes|mien|mienne|mi|mis|mío|mía|"
    r"mio|mia|miei|mie|mijn|meu|minha|meus|minhas)\b", re.I)
_RECORD_ID = re.compile(r"\b(?=[a-z0-9-]*\d)(?=[a-z0-9-]*[a-z])[a-z0-9]+(?:-[a-z0-9]+)*\b|\b\d{5,}\b", re.I)
_FOREIGN_TIME = re.compile(
    r"\b(heute|morgen|gestern|jetzt|gerade|aktuell|derzeit|aujourd'hui|demain|hier|maintenant|actuellement|"
    r"hoy|mañana|ayer|ahora|oggi|domani|ieri|adesso|vandaag|morgen|gisteren|nu)\b", re.I)


# "How do I … my …" is a how-to question in any language; only there a possessive stays general.
_FOREIGN_HOWTO = re.compile(
    r"^\s*(wie (kann|könnte|muss|soll) (ich|man)|wie (ändere|lösche|storniere|finde|erhalte|bekomme|setze|"
    r"aktiviere|deaktiviere|exportiere|importiere|kündige|verwalte) ich|comment (puis-je|faire|je peux)|"
    r"cómo (puedo|hago)|come (posso|faccio)|hoe (kan|moet) ik)\b", re.I)


# The asker's own state, in the question's inverted word order ("Welchen Plan habe ich?", "Bin ich im
# Pro-Plan?", "Habe ich noch Zugriff?"), as ``_OWN_STATE_Q`` in English.
_FOREIGN_OWN_STATE = re.compile(r"\b(?:bin|habe|hab) ich\b|\b(?:sind|haben) wir\b|\b(?:suis|ai)-je\b|\b(?:ben|heb) ik\b", re.I)
# "bitte" outside a question ("Rotiere bitte den Schlüssel.", "Rechnung bitte zuschicken"): a request.
_FOREIGN_REQUEST = re.compile(r"\bbitte\b", re.I)


def _id_like(question: str) -> bool:
    return any(sum(ch.isdigit() for ch in m.group(0)) >= 4 for m in _RECORD_ID.finditer(question))


def _nets(question: str, intent: str) -> Eligibility | None:
    """The language-independent nets (all hard)."""
    howto = _FOREIGN_HOWTO.search(question)
    if (m := _FOREIGN_PERSONAL.search(question)) and not howto:
        return Eligibility(False, "personal", intent, f"personal: first-person possessive ('{m.group(0)}')", rule="foreign_personal")
    if (m := _FOREIGN_OWN_STATE.search(question)) and not howto:
        return Eligibility(False, "personal", intent, f"personal: about the asker's own state ('{m.group(0)}')", rule="foreign_own_state")
    if (m := _FOREIGN_REQUEST.search(question)) and not howto and "?" not in question:
        return Eligibility(False, "action", intent, f"action: asks us to act ('{m.group(0)}')", rule="foreign_request")
    if _id_like(question):
        return Eligibility(False, "personal", intent, "personal: refers to a specific record (an id)", rule="record_id")
    if m := _FOREIGN_TIME.search(question):
        return Eligibility(False, "time", intent, f"time: depends on the current time ('{m.group(0)}')", rule="foreign_time")
    return None


def _checked(question) -> str:
    if not isinstance(question, str):
        raise TypeError(f"a question is text (str), not {type(question).__name__}")
    if not question.strip():
        raise ValueError("an empty question has no eligibility")
    return question


def soft_only(question: str) -> bool:
    """Whether only soft rules refuse the question: no hard rule and no net fires. Such a question
    may *read* the semantic cache (``SEMANTIC_SOFT_READS``): an entry there was written for a general
    question, so serving it shows nobody's question or answer, and the judge and the vetoes still
    decide whether that general answer answers this question. It never writes a shared cache: its
    own answer, vector and search results stay its own, as for any ineligible question."""
    found = classify(question)
    if found.eligible or RULES[found.rule] != "soft":
        return False
    return _hard_anywhere(question, found.intent) is None


def _hard_anywhere(question: str, intent: str) -> Eligibility | None:
    """The first hard rule that fires anywhere in the question, or a net: what no soft refusal's
    exception (a soft read) may pass over."""
    return _analyse(question).hard or _nets(question, intent)


@lru_cache(maxsize=8192)
def classify(question: str) -> Eligibility:
    """Is the question shareable across customers, and what kind of answer does it want? The first
    rule that fires (``RULES``), else the language-independent nets, else general. (A pure function
    of the text, remembered: a repeated question is what the caches serve.)"""
    found = _analyse(_checked(question)).eligibility
    return found if not found.eligible else (_nets(question, found.intent) or found)


# The rules alone, by the name the judge's training reads (the same decision as ``classify`` since
# no learned model may pass over a rule).
classify_rules = classify
