"""A conversation as the Ask input: validation, and resolution of its last message.

A customer follows up the way people do ("how long does that take?", "and for Canada?", "is it
free?"). Such a message has no answer of its own: its answer depends on the turns before it, so
the shared answer caches may only ever see a standalone question that carries that context.

* ``conversation_parse``: the ``question`` or ``messages`` of a request body, validated (the
  chat-completions shape: user and assistant turns, alternating, ending with a user message;
  bounded in turns and characters) into a ``Conversation``; bad input raises ``AskRejected``
  (a 4xx with a clear code) before anything is looked up or stored.
* ``resolve``: the conversation's last message as a ``Resolution``: the question the pipeline
  answers (``question``), how it was found (``how``) and whether the shared caches may see it
  (``cacheable``). Resolution never guesses into a cache: a dependent message it cannot rewrite
  confidently is answered from retrieval on its context with every shared cache bypassed, and
  one with no context at all gets a short clarifying reply.

The resolver on the default install is rules over the words (English; German is recognised and
its follow-ups bypass the caches, see ``docs/conversations.md``). With a trusted model configured
(``CONVERSATION_MODEL_REWRITE``) the model may rewrite a follow-up instead
(``supportbot.conversation_model``); its rewrite is held to the same running-conditions rule.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field, replace

from django.conf import settings

from caching import guards
from caching.answer_checks.asked import REWRITE_MARK, asked_cases, kinds_in, places_as_countries
from caching.answer_checks.text import sentences_of

from retrieval.embeddings import embed_texts
from retrieval.generations import query_embedder
from retrieval.subject import PERSONS, QUESTION_WORDS, SENTENCE_END
from supportbot.questions import AskRejected, clean_question, normalize_question, spelled_out

ROLES = ("user", "assistant")
TOPIC_MARK = REWRITE_MARK  # what a rewritten question carries of the conversation's words follows this


class How:
    """How a message became the question the pipeline answers (``AskEvent.resolution``)."""

    SINGLE = "single"  # one message, standalone: the question itself
    STANDALONE = "standalone"  # a standalone message in a conversation whose conditions do not bear on it
    REWRITTEN = "rewritten"  # rewritten from the conversation by the rules (confident)
    MODEL = "model"  # rewritten by the trusted model (confident)
    UNRESOLVED = "unresolved"  # depends on the conversation, not rewritten confidently: no shared cache
    CLARIFY = "clarify"  # depends on a conversation it did not come with: a clarifying reply

    CHOICES = (SINGLE, STANDALONE, REWRITTEN, MODEL, UNRESOLVED, CLARIFY)
    CACHEABLE = (SINGLE, STANDALONE, REWRITTEN, MODEL)


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    content: str
    cited: tuple[str, ...] = ()  # titles the assistant's answer cited (known for the chat page's own thread)


@dataclass(frozen=True)
class Conversation:
    turns: tuple[Turn, ...]

    @property
    def message(self) -> str:
        return self.turns[-1].content

    @property
    def history(self) -> tuple[Turn, ...]:
        return self.turns[:-1]

    @classmethod
    def single(cls, question: str) -> "Conversation":
        return cls((Turn("user", question),))

    def spelled_out(self, locale: str) -> "Conversation":
        """The customer's messages with their chat shorthand written out (``questions.spelled_out``)."""
        turns = tuple(replace(t, content=spelled_out(t.content, locale)) if t.role == "user" else t for t in self.turns)
        return self if turns == self.turns else Conversation(turns)


@dataclass(frozen=True)
class Resolution:
    message: str  # the customer's last message, as sent (cleaned)
    question: str  # what guards, keys, retrieval and the answerer read
    how: str  # one of How.CHOICES
    detail: str = ""  # why, for the record and the review queue
    conditions: tuple[str, ...] = ()  # the running conditions the resolved question carries
    history: tuple[Turn, ...] = field(default=(), repr=False)  # earlier turns, for the model's prompt

    @property
    def cacheable(self) -> bool:
        return self.how in How.CACHEABLE

    @property
    def clarify(self) -> bool:
        return self.how == How.CLARIFY

    @property
    def exact_only(self) -> bool:
        """A rewrite that carries the conversation's words ("... (about: ...)") is looked up by the
        exact cache only: the semantic judge was never calibrated on such word lists, and two of
        them one word apart (a detail swapped) are two questions."""
        if self.how != How.REWRITTEN:
            return False
        # ... and so is one carrying a detail the semantic cache's guards cannot tell apart ("Can I get
        # overnight delivery? (texas)" against "(alaska)": a name, where two places would be vetoed)
        return TOPIC_MARK in self.question or not all(
            _guarded(v) for v in self.conditions if not _states(self.message, v))


# --------------------------------------------------------------------------- validation

def conversation_parse(body: dict) -> Conversation:
    """The conversation of an Ask body: ``question`` (one message) or ``messages``, not both."""
    if "messages" in body and "question" in body:
        raise AskRejected("ambiguous_input", "send either question or messages, not both")
    if "messages" in body:
        return messages_parse(body["messages"])
    if "question" not in body:
        raise AskRejected("missing_question", "question or messages is required")
    return Conversation.single(clean_question(body["question"]))


def messages_parse(raw) -> Conversation:
    """Validate chat-completions ``messages``: a list of ``{"role", "content"}``, user and assistant
    alternating, ending with a user message, within ``CONVERSATION_MAX_MESSAGES`` and
    ``CONVERSATION_MAX_CHARS``; every user message is a valid question on its own terms."""
    if not isinstance(raw, list):
        raise AskRejected("invalid_messages", "messages must be a list of {role, content} objects")
    if not raw:
        raise AskRejected("empty_conversation", "messages must hold at least one user message")
    if len(raw) > settings.CONVERSATION_MAX_MESSAGES:
        raise AskRejected("too_many_messages",
                          f"a conversation holds at most {settings.CONVERSATION_MAX_MESSAGES} messages")
    turns, total = [], 0
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise AskRejected("invalid_message", f"messages[{i}] must be an object with exactly role and content")
        role, content = m["role"], m["content"]
        if role not in ROLES:
            raise AskRejected("invalid_role", f"messages[{i}].role must be user or assistant")
        if not isinstance(content, str):
            raise AskRejected("invalid_message", f"messages[{i}].content must be a string")
        total += len(content)
        if total > settings.CONVERSATION_MAX_CHARS:
            raise AskRejected("conversation_too_long",
                              f"the conversation is longer than {settings.CONVERSATION_MAX_CHARS} characters")
        if turns and turns[-1].role == role:
            raise AskRejected("messages_not_alternating", f"messages[{i}] has the same role as the one before it")
        if role == "user":
            try:
                text = clean_question(content)
            except AskRejected as exc:
                raise AskRejected("empty_message" if exc.code == "empty_question" else exc.code,
                                  f"messages[{i}]: {exc.message}") from None
        else:
            text = _SPACE.sub(" ", unicodedata.normalize("NFC", content)).strip()
            if not text:
                raise AskRejected("empty_message", f"messages[{i}]: an assistant message is empty")
        turns.append(Turn(role, text))
    if turns[-1].role != "user":
        raise AskRejected("last_message_not_user", "the last message must be the customer's (role user)")
    return Conversation(tuple(turns))


# --------------------------------------------------------------------------- the words

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[£$€]?[^\W_]+(?:[.,'’-][^\W_]+)*%?", re.UNICODE)

# Replies to what the assistant just offered or asked: their meaning is the offer's.
_REPLIES_EN = {
    "yes", "yes please", "yeah", "yep", "no", "no thanks", "nope", "ok", "okay", "sure", "please", "please do",
    "go ahead", "do it", "do that", "that one", "this one", "the first one", "the second one", "the third one",
    "the last one", "the first", "the second", "the other one", "both", "neither", "either", "sounds good",
    "yes go ahead", "ok do it", "fine", "correct", "right", "exactly", "that's right", "thats right",
    "the first option", "the second option", "the other option", "option 1", "option 2", "book it", "cancel it",
    "confirm", "agreed", "alright", "thanks", "thank you", "cheers",
}
_REPLIES_DE = {
    "ja", "ja bitte", "nein", "nein danke", "ok", "okay", "gerne", "bitte", "mach das", "machen sie das",
    "das erste", "das zweite", "die erste", "die zweite", "der erste", "der zweite", "beide", "keins", "genau",
    "richtig", "stimmt", "danke", "einverstanden",
}
# A message that starts like this replies to the assistant ("yes, go ahead with that").
_REPLY_START = re.compile(r"^(?:yes|yeah|yep|yup|no|nope|nah|ok|okay|sure|alright|go ahead|sounds good|"
                          r"ja|nein|gerne)\b(?![^?]*\?)", re.IGNORECASE)
# What a question asks about a thing, without the thing: "what's the price?", "is there a fee?".
# A message made only of these (and function words) asks about whatever the conversation is about.
_ATTRIBUTES = {
    "price", "prices", "cost", "costs", "fee", "fees", "charge", "charges", "deadline", "deadlines", "limit", "limits",
    "time", "times", "timeframe", "duration", "rate", "rates", "discount", "discounts", "minimum", "maximum", "catch",
    "difference", "requirement", "requirements", "rules", "terms", "conditions", "penalty", "process", "option",
    "options", "cheaper", "cheapest", "expensive", "free", "included", "include", "includes", "available",
    "availability", "possible", "allowed", "eligible", "refundable", "worth", "extra", "additional", "total",
    "quick", "quickly", "fast", "soon", "late", "later", "earliest", "latest", "next", "step", "steps", "cancel",
    "cancelled", "change", "changed", "apply", "applies", "work", "works", "mean", "means", "pay", "paid", "cover",
    "covered", "come", "take", "takes", "need", "needed", "required", "details", "info", "information", "exactly",
    "preis", "kosten", "kostet", "gebühr", "gebühren", "frist", "dauer", "dauert", "lange", "kostenlos", "gratis",
}
# ... and what a product or service has, which a question in a conversation asks of the conversation's
# thing ("do I need to pay a deposit?"); alone, "what's the warranty?" is still asked as it is.
_THING_ATTRIBUTES = _ATTRIBUTES | {"deposit", "deposits", "warranty", "guarantee", "notice", "excess", "surcharge",
                                   "interest", "penalties"}

# ... of which these are what is done, not what a thing has: "how do I change my password?" names its
# subject (the password); "do you charge a cancellation fee?" asks a fee of whatever the chat is about.
_ATTRIBUTE_VERBS = {"cancel", "change", "apply", "pay", "take", "need"}
_VERB_OBJECT = re.compile(rf"\b(?:{'|'.join(sorted(_ATTRIBUTE_VERBS))})\s+(?:my|our|the|your|a|an)\s+(?P<thing>\w+)")
# A bare question word is about whatever came before.
_BARE_EN = {"why", "how", "when", "where", "who", "which", "what", "how much", "how long", "how come", "really",
            "how many", "which one", "what else", "and", "and then", "anything else", "so", "then what"}
_BARE_DE = {"warum", "wieso", "wie", "wann", "wo", "wer", "welche", "welcher", "was", "wie viel", "wie lange",
            "wirklich", "und", "und dann", "sonst noch was"}
# A message opening like this continues the previous question with something else.
_ELLIPSIS_EN = re.compile(r"^(?:and|or|but|also|plus)?\s*(?:what|how)\s+about\b|^(?:and|or|but|also)\b"
                          r"|^same\s+(?:for|with|in)\b|^what\s+if\b|^(?:for|in|to|with)\s+\S+\s*\??$")
# ... or ends by adding to what was asked before ("Can I add my sister as well?"), or asks to get in touch without
# saying with whom or where ("Could I ring on Saturday morning?"): the conversation's number or address
_ADDITIVE_EN = re.compile(r"\b(?:as well|too|also)$")
_NO_OBJECT_EN = re.compile(r"\b(?:can|could|may|should|shall|do|would)\s+(?:i|we)\s+(?:also\s+|still\s+)?"
                           r"(?:call|ring|phone|contact|reach|email|e-mail|text)\s*(?:$|on|at|in|during|before|after|"
                           r"between|this|next|tomorrow|today|tonight|now|instead|then)\b")
# A conjunction that opens a question of its own: "and how long does standard delivery take?"
_JOINED_QUESTION = re.compile(r"^(?:and|or|but|also|plus)\s+(?P<rest>.+)$")
# ... in German too, or one with its own condition first ("Und wenn ich am Samstag bestelle, wann wird das Paket verpackt?")
_JOINED_QUESTION_DE = re.compile(r"^(?:und|oder|aber)\s+(?P<rest>.+)$")
_CONDITION_THEN_QUESTION_DE = re.compile(r"^(?:wenn|falls)\s[^,–—?]+[,–—]\s*\S.*\?\s*$", re.IGNORECASE)
_ELLIPSIS_DE = re.compile(r"^(?:und|oder|aber|auch)\b|^(?:was|wie)\s+(?:ist|sieht\s+es)\s+(?:es\s+)?mit\b"
                          r"|^(?:gilt|geht)\s+das\s+auch\b|^(?:für|in|nach)\s+\S+\s*\??$")
_ELLIPSIS_SLOT = re.compile(
    r"^(?:and|or|but|also|plus)?\s*(?:(?:what|how)\s+about|same\s+(?:for|with|in))?\s*(?:for|in|to|with|on)?\s*"
    r"(?:the\s+)?(?P<slot>.+?)\s*[?.!]*$", re.IGNORECASE)
_ELLIPSIS_SLOT_DE = re.compile(
    r"^(?:und|oder|aber|auch)?\s*(?:(?:was|wie)\s+(?:ist|sieht\s+es)\s+(?:es\s+)?(?:aus\s+)?mit)?\s*"
    r"(?P<prep>für|in|nach|mit|als|bei|beim|im|ab)?\s*(?:der|die|das|dem|den)?\s*(?P<slot>.+?)\s*[?.!]*$",
    re.IGNORECASE)

# Words that point back. "it" and "that" have uses that point nowhere ("is it possible to ...",
# "a fee that applies"): see ``_points_back``.
_ANAPHORA_EN = {"they", "them", "those", "these", "he", "she", "him", "her", "his", "its", "their", "theirs",
                "there", "same", "one", "ones", "former", "latter", "else"}
_ANAPHORA_DE = {"dafür", "dazu", "davon", "damit", "darauf", "darüber", "daran", "dabei", "dadurch", "dagegen",
                "dorthin", "dort", "er", "sie", "ihn", "ihm", "ihr", "ihnen", "dies", "diese", "dieser", "dieses",
                "diesen", "diesem", "derselbe", "dasselbe", "dieselbe", "auch",
                # the rest of the closed class: pronominal adverbs ("was steht darin?", "gilt das hierfür?"), the
                # demonstratives that are never articles ("was passiert dann mit denen?"), "beide", "solche"
                "darin", "daraus", "darunter", "daneben", "dahin", "hierfür", "hierzu", "hiervon", "hiermit", "denen",
                "deren", "dessen", "beide", "beiden", "beides", "solche", "solchen", "solcher", "solches",
                "dieselben", "denselben", "demselben"}
# "denen", "deren", "dessen" after a comma (with its preposition) start a relative clause: "Kunden, deren Konto …";
# so does "der", "die", "den", "dem" there ("für AO-552310, die eigentlich auf die alte Karte laufen würde")
_RELATIVE_ONLY_DE = {"denen", "deren", "dessen"}
_AFTER_COMMA_DE = re.compile(r",\s*(?:\w+\s+)?(denen|deren|dessen|der|die|den|dem)\b", re.IGNORECASE)
# "der", "die", "den", "dem" stand for a noun (a demonstrative: "kann ich die nochmal tauschen?") when an adverb or
# a particle follows, which never follows an article.
_DEMONSTRATIVE_DE = {"der", "die", "den", "dem"}
_PARTICLE_AFTER_PRONOUN_DE = {"hier", "da", "dort", "noch", "nochmal", "nochmals", "auch", "dann", "jetzt", "schon",
                              "einfach", "bitte", "ja", "mal", "denn", "eigentlich", "wirklich", "überhaupt", "nicht",
                              "zurück", "trotzdem", "sofort", "gleich", "wieder", "später", "irgendwie", "etwa"}
# "this week", "this year": "this" about the calendar, not the conversation.
_THIS_TIME = {"week", "weekend", "month", "year", "morning", "afternoon", "evening", "time", "season",
              "quarter", "summer", "winter", "spring", "autumn", "christmas"}
# Before "that"/"this"/"it": the word that makes it a pronoun rather than a relative ("a fee that applies").
_POINTING_BEFORE = {
    "about", "for", "with", "of", "on", "in", "into", "to", "from", "after", "before", "like", "than", "by",
    "do", "does", "did", "is", "was", "are", "will", "would", "can", "could", "should", "shall", "may", "might",
    "must", "has", "have", "had", "get", "got", "make", "want", "need", "take", "use", "buy", "order", "cancel",
    "change", "book", "waive", "cover", "include", "includes", "covers", "return", "refund", "send", "ship",
    "pay", "try", "keep", "see", "know", "mean", "explain", "and", "or", "but", "if", "so", "how", "what", "why",
    "when", "where", "which", "who", "isn't", "doesn't", "won't", "can't", "is", "does", "whats", "what's",
}
# "it" as a dummy subject points nowhere: "is it possible to ...", "how long does it take to ship to
# Canada", "it's free to return": a subject "it" (after a question's verb, or leading) followed by
# "to" or a "possible/ok/allowed..." adjective. An object "it" ("can I return it if ...") points back.
_DUMMY_IT_AFTER = re.compile(
    r"(?:^|\b(?:is|was|does|did|do|will|would|can|could|should|isn't|doesn't|won't|wouldn't)\s+)"
    r"it(?:'s|\s+is|\s+was|\s+be)?\s+(?:(?:take|takes|cost|costs|make|makes|mean|means)\s+(?:\w+\s+){0,3}to\s+\w+|"
    r"(?:possible|ok|okay|allowed|free|safe|normal|necessary|required|worth|better|cheaper|quicker|easier|"
    r"true|fine|legal|wise|best)\s+(?:to|if|whether|that)\s+\w+|(?:\w+\s+){0,2}to\s+(?:\w+)\s+(?:to|a|an|the|my|your)\b)")

_STOP_EN = {
    "a", "an", "the", "i", "me", "my", "mine", "we", "us", "our", "you", "your", "it", "its", "that", "this",
    "these", "those", "they", "them", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "can",
    "could", "would", "will", "should", "shall", "may", "might", "must", "have", "has", "had", "to", "of", "in",
    "on", "for", "with", "at", "by", "from", "about", "and", "or", "but", "if", "so", "what", "how", "when",
    "where", "which", "who", "why", "there", "here", "please", "thanks", "thank", "hi", "hello", "hey", "just",
    "also", "any", "some", "much", "many", "long", "get", "got", "not", "no", "yes", "ok", "okay", "then", "too",
    "very", "really", "still", "again", "one", "ones", "else", "same", "other", "want", "need", "like", "know",
    "tell", "as", "up", "out", "into", "than", "all", "more", "less", "only", "well", "now", "im", "i'm", "ive",
    "i've", "it's", "that's", "what's", "whats", "dont", "don't", "doesn't", "isn't", "can't", "cant", "there's",
    "asking", "ask", "question", "questions", "wondering", "wonder", "curious", "quick", "about",
}
_STOP_DE = {
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "und", "oder", "aber",
    "ich", "mein", "meine", "wir", "sie", "es", "ist", "sind", "war", "wie", "was", "wann", "wo", "für", "mit",
    "bei", "von", "zu", "im", "in", "auf", "an", "nach", "auch", "noch", "bitte", "danke", "kann", "können",
    "muss", "gibt", "habe", "hat", "haben", "wird", "werden", "nicht", "kein", "keine", "lange", "viel",
}
_GERMAN_MARKERS = {"ich", "wie", "ist", "der", "die", "das", "und", "für", "nicht", "kann", "gibt", "mein",
                   "meine", "was", "wann", "bitte", "dauert", "kostet", "sie", "es", "ein", "eine", "mit", "auch"}

# Conditions: the details that change an answer and that a follow-up leaves unsaid.
_COUNTRIES = {
    "us", "usa", "united states", "america", "canada", "mexico", "uk", "united kingdom", "britain", "england",
    "scotland", "wales", "ireland", "germany", "austria", "switzerland", "france", "spain", "italy", "portugal",
    "netherlands", "belgium", "luxembourg", "denmark", "sweden", "norway", "finland", "poland", "czechia",
    "hungary", "greece", "turkey", "australia", "new zealand", "japan", "china", "india", "brazil", "eu",
    "europe", "asia", "deutschland", "österreich", "schweiz", "frankreich", "spanien", "italien", "kanada",
    "niederlande", "belgien", "polen", "vereinigte staaten", "großbritannien", "alaska", "hawaii",
    "puerto rico", "quebec", "ontario", "london", "berlin", "paris", "manchester", "leeds",
}
_TIERS = {"free", "basic", "standard", "premium", "premier", "plus", "pro", "business", "enterprise", "family", "student",
          "gold", "silver", "bronze", "platinum", "starter", "team", "personal", "lite", "max", "ultimate"}
_COMMON_CAPITALISED = {
    "i", "i'm", "i've", "i'd", "i'll", "hi", "hello", "hey", "thanks", "thank", "ok", "okay", "yes", "no", "please",
    "sorry", "great", "cool", "sure", "also", "and", "but", "or", "so", "well", "oh", "ah", "right", "perfect",
    "what", "how", "when", "where", "which", "who", "why", "can", "could", "would", "will", "do", "does", "did",
    "is", "are", "was", "the", "a", "an", "my", "our", "your", "it", "that", "this", "there", "if", "just",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mr", "mrs", "ms", "dr",
}
_DAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"}


# What a follow-up says that names no thing (``supportbot.answerers.extractive``: its own words that the conversation did
# not say name what it asks about, these never): what a thing has ("how much extra?") and function words ("on that?")
NAMING_NOTHING = frozenset(_THING_ATTRIBUTES | _STOP_EN | _STOP_DE | {"limit", "limits", "extra", "anymore", "longer",
                                                                     "time"})
# What to do now ("was mach ich jetzt?", "was soll ich dann tun?"): a question asking of the case told before it
WHAT_NOW = frozenset({"mach", "mache", "machen", "tun", "soll", "sollte", "jetzt", "nun", "dann"})


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _lower_words(text: str) -> list[str]:
    return [w.casefold().replace("’", "'") for w in _words(text)]


def is_german(text: str, locale: str) -> bool:
    if locale.split("-")[0] == "de":
        return True
    words = _lower_words(text)
    return bool(words) and sum(w in _GERMAN_MARKERS for w in words) >= max(2, len(words) // 3)


_DETERMINERS = {"a", "an", "the", "my", "your", "our", "their", "some", "any", "each", "every", "all"}
_PRONOUNS_WITH_ANTECEDENT = {"it", "its", "they", "them", "their", "those", "these", "that", "one", "ones"}
# "the same true/thing/rule ...": the same as what was said before, whatever follows.
_SAME_AS_BEFORE = {"true", "thing", "things", "goes", "go", "apply", "applies", "rule", "rules", "question", "answer",
                   "here", "there", "deal", "price", "way"}
# Pronouns that, in a message with no conversation, point at the message's own earlier words.
_OWN_WORDS_PRONOUNS = {"it", "its", "they", "them", "their", "those", "these"}
# A person the customer names ("My son is 16 - can I add him ...?"): alone, "he", "him", "her" point there.
_PERSON_PRONOUNS = {"he", "him", "his", "she", "her", "hers"}


# A message alone has nothing else to point at: "it" followed by a clause of its own ("do I need
# it to be boxed", "can I return it if it's opened") is read as pointing at its own words.
_DUMMY_IT_ALONE = re.compile(r"\bit(?:'s|\s+is|\s+was|\s+be|\s+take|\s+takes|\s+cost|\s+costs|\s+possible|\s+ok|"
                             r"\s+okay|\s+allowed|\s+free|\s+safe|\s+normal|\s+necessary|\s+required|\s+worth)?"
                             r"(?:\s+\w+){0,3}\s+(?:to|if|whether|when|that|until|before)\s+\w+")


def _antecedent_before(words: list[str], i: int, alone: bool = False) -> bool:
    """Whether the message names something before position ``i`` that a pronoun there can refer
    to ("Can I return an item if I opened it?"): a determiner followed by a content word, then a
    clause of the pronoun's own."""
    return any(words[j] in _DETERMINERS and words[j + 1] not in _STOP_EN and len(words[j + 1]) > 2
               and (alone or any(w in _CLAUSE_MARKERS for w in words[j + 2:i]))
               for j in range(max(0, i - 1)))


# The pronoun of "can I return an item if I opened it?" is in a clause of its own after the thing it
# names; in "does Premier get a discount on it?" nothing separates them: "it" is the conversation's.
_CLAUSE_MARKERS = {"if", "when", "whenever", "after", "before", "once", "because", "since", "until", "unless",
                   "while", "and", "but", "so", "that", "which", "who", "though", "although"}


# "one" that stands for a noun ends its noun phrase after a determiner and a modifier: "a US one in Canada",
# "the middle one per month"; it names the message's own noun when one comes before ("my card expires, how do I
# get a new one?"). After these words it is the number or the idiom ("only one", "more than one", "a quick one").
_ONE_AS_NUMBER_BEFORE = {"a", "an", "no", "any", "every", "each", "only", "just", "than", "at", "quick", "no.",
                         "number", "step", "day", "page", "option", "plan", "and", "or", "of", "to", "in", "for"}
# The words after a "one" that ends its noun phrase (where a noun would follow the number "one").
_ONE_ENDS_BEFORE = {"in", "for", "per", "on", "at", "with", "from", "to", "instead", "too", "as", "or", "and",
                    "is", "cost", "costs", "work", "works", "come", "comes", "have", "has", "still", "also",
                    "then", "there", "here", "now"}


# The words before a "one" that make it stand for a noun whatever follows: "that one", "the second one".
_ONE_AFTER_POINTER = {"that", "this", "the", "which", "other", "same", "first", "second", "cheaper", "bigger"}


def _one_stands_for_a_noun(words: list[str], i: int) -> bool:
    """Whether the "one" at ``i`` stands for a noun: after a pointer word, or ending its noun phrase after a
    determiner and a modifier ("a US one in Canada")."""
    before = words[i - 1] if i else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    return before in _ONE_AFTER_POINTER or (i >= 2 and words[i - 2] in _DETERMINERS
                                            and before not in _ONE_AS_NUMBER_BEFORE
                                            and (not after or after in _ONE_ENDS_BEFORE))


# "this is Jane", "this is the Smith household": an introduction, not a pointer into the conversation.
_INTRODUCTION = re.compile(r"\bthis is (?:[A-Z][\w'-]+|the [A-Z][\w'-]+)")


def _names_a_place(words: list[str]) -> bool:
    """Whether the words name a place (``conditions``: a country, a city, a state)."""
    return "place" in conditions(" ".join(words), names=False).values()


def _points_back_en(words: list[str], text: str, alone: bool = False) -> str:
    """The word that makes an English message point back at the conversation, or ""."""
    lowered = text.casefold()
    words = [w[:-2] if w.endswith("'s") and w not in ("it's", "that's", "what's", "there's") else w for w in words]
    for i, w in enumerate(words):
        before = words[i - 1] if i else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        one = w in ("one", "ones")
        if w in _PRONOUNS_WITH_ANTECEDENT and _antecedent_before(words, i - one, alone or one):
            continue  # refers to something the message itself names (not "the middle one"'s own modifier)
        if alone and w in _OWN_WORDS_PRONOUNS and len([x for x in words[:i] if x not in _STOP_EN and len(x) > 2]) >= 2:
            continue  # alone, with a subject of its own before it: "... over-ear headphones once I've opened them?"
        if alone and w in _PERSON_PRONOUNS and PERSONS & set(words[:i]):
            continue  # alone, a person it names before: "My son is 16 - can I add him to my team?"
        if alone and w in ("there", "here") and _names_a_place(words[:i]):
            continue  # alone, a place it names before: "I shop in the Mexico store. What does Pro cost there?"
        if w == "same" and (after == "time" or (alone and after not in _STOP_EN and after not in _SAME_AS_BEFORE
                                                and len(after) > 2)):
            continue  # "at the same time"; alone, "the same jacket" names its own thing
        if w in _ANAPHORA_EN:
            if w == "there" and after in ("is", "are", "a", "an", "any", "some", "no", "was", "were", "'s", "be"):
                continue  # "is there a fee", "there are two plans": existential, points nowhere
            if w == "there" and before in ("is", "are", "was", "were", "be"):
                continue
            if one and not _one_stands_for_a_noun(words, i):
                continue  # "one" as a number ("one order", "only one"); "a US one in Canada" stands for a noun
            if w == "else" and before not in ("what", "anything", "something", "who", "where"):
                continue
            if w == "same" and before != "the":
                continue
            return w
        if w in ("that", "this"):
            if w == "this" and after in _THIS_TIME:
                continue
            if w == "this" and after in ("app", "website", "site", "chat", "page", "browser", "device", "computer",
                                         "laptop", "tablet", "phone"):
                continue  # "is there currency exchange on this app?", "remember this browser": the business's own, or
                #           the device the customer writes from
            if w == "this" and after == "is" and _INTRODUCTION.search(text):
                continue  # "Hello, this is Jane from …": the customer introducing themselves
            if not before or not after or before in _POINTING_BEFORE or after in ("one", "ones"):
                return w
            if w == "this":
                return w  # "this plan", "this order": the conversation's
            continue  # "a fee that applies": a relative
        if w == "it":
            if _DUMMY_IT_AFTER.search(lowered) or (alone and _DUMMY_IT_ALONE.search(lowered)):
                continue  # "is it possible to ...", "how long does it take to ship to Canada"
            return w
    return ""


_RELATIVE_DE = re.compile(r"\b[A-ZÄÖÜ]\w*\s*,\s*(?:das|die|der|dem|den)\b")  # "ein Lager, das ich …"
# Words that start a clause: "damit" before one is the conjunction ("damit das Paket heute rausgeht").
_CLAUSE_START_DE = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "ich", "wir", "man",
                    "es", "er", "sie", "du", "ihr", "mein", "meine", "meinen", "meinem", "meiner", "unser", "unsere",
                    "ihre", "ihren", "dein", "deine", "alles", "nichts"}
# "es" that points nowhere: "wie lange dauert es, bis …", "wie geht es dir", "wie spät ist es".
_DUMMY_ES_DE = re.compile(r"\bes\s*,?\s*(?:bis|dass|wenn|ob)\b|\bgeht\s+es\b|\bspät\s+ist\s+es\b", re.IGNORECASE)
# Pronouns that may point at a noun of the message itself when it comes with no conversation.
_POINT_AT_OWN_NOUN_DE = {"das", "dies", "es", "er", "sie", "ihn", "ihm", "diese", "dieser", "dieses", "diesen", "diesem",
                         "der", "die", "den", "dem", "denen", "deren", "dessen", "beide", "beiden", "beides", "solche",
                         "solchen", "solcher", "solches", "darin", "daraus", "darunter", "dahin"}


# The shop addressed politely, capitalised anywhere in a sentence ("Gibt es bei Ihnen Rabatt?").
_POLITE_DE = {"sie", "ihnen", "ihr", "ihre", "ihren", "ihrem", "ihrer"}


def _own_noun_before(original: list[str], i: int) -> bool:
    """A German noun (capitalised, not the first word, not the polite address) before word ``i``; in a message typed
    in lower case, two content words before it ("hab den rabattcode vergessen, könnt ihr den noch anrechnen?")."""
    if any(w[:1].isupper() for w in original[1:]):
        return any(w[:1].isupper() and w.casefold() not in _POLITE_DE for w in original[1:i])
    return len([w for w in original[:i] if w.casefold() not in _STOP_DE and len(w) > 3]) >= 2


def _after_comma(word: str, after: str, text: str) -> bool:
    """Whether ``word`` followed by ``after`` stands right after a comma (or a comma and its preposition) in ``text``:
    a relative pronoun."""
    return any(m.group(1).casefold() == word and (not after or _words(text[m.end():])[:1] == [after])
               for m in _AFTER_COMMA_DE.finditer(text))


def _points_back_de(words: list[str], original: list[str], text: str = "", alone: bool = False) -> str:
    relative = bool(_RELATIVE_DE.search(text))
    for i, w in enumerate(words):
        after_orig = original[i + 1] if i + 1 < len(original) else ""
        before = words[i - 1] if i else ""
        if alone and w in _POINT_AT_OWN_NOUN_DE and _own_noun_before(original, i):
            continue  # "Die Schuhe passen nicht, kann ich sie zurückgeben?": its own noun, no conversation
        if alone and w in ("dort", "dorthin", "dahin") and _names_a_place(original[:i]):
            continue  # a place it names before: "Ich bestelle aus Kanada. Wie lange dauert es dorthin?"
        if w in _ANAPHORA_DE:
            if w in _RELATIVE_ONLY_DE and _after_comma(w, after_orig, text):
                continue  # a relative clause: "alle Kunden, denen ich es geschickt habe"
            if w in _POLITE_DE and original[i][:1].isupper():
                continue  # the polite "Sie", "Ihnen", "Ihr": the shop ("Gibt es bei Ihnen Rabatt?")
            if w == "ihr" and (i == 1 or not after_orig[:1].isupper()):
                continue  # the informal plural "ihr" addresses the shop ("Liefert ihr auch nach Kanada?", "Habt ihr Gutscheine?")
            if w == "damit" and (after_orig.casefold() in _CLAUSE_START_DE or re.search(r",\s*damit\b", text, re.I)):
                continue  # the conjunction: "damit das Paket heute rausgeht", "…, damit nicht ständig …"
            if w == "auch" and i:
                continue
            return w
        if w in ("das", "dies") and (not after_orig or not after_orig[:1].isupper()):
            if w == "das" and relative and i and original[i - 1][:1].isupper():
                continue  # "ein Lager in Dresden, das ich besuchen kann": a relative pronoun after its noun
            if w == "das" and _article_before_lower_noun(words, i):
                continue  # "wie viele zeichen muss das neue passwort haben?": typed in lower case, an article
            return w  # "Wie lange dauert das?": a pronoun (a German noun after an article is capitalised)
        if w in _DEMONSTRATIVE_DE and after_orig.casefold() in _PARTICLE_AFTER_PRONOUN_DE and i \
                and not _article_before_lower_noun(words, i + 1) and not _after_comma(w, after_orig, text):
            return w  # "kann ich die nochmal gegen L tauschen?" (not "die noch offene Bestellung")
        if w == "es" and before not in ("gibt",) and not (i + 1 < len(words) and words[i + 1] == "gibt"):
            if _DUMMY_ES_DE.search(text):
                continue
            return w
    return ""


def _own_question_after_conjunction(words: str, text: str, german: bool) -> bool:
    """Whether what follows a message's opening conjunction (``words``: its lower-case words; ``text``: as written) is
    a question of its own, not an ellipsis ("and what about Canada?"). In German: one with a question word and no
    "dann" ("Und wie schnell wird dann meine Rechnung angepasst?" follows on from the return before it), or a condition
    first and a main clause after it ("Und wenn ich am Samstag bestelle, wann wird das Paket verpackt?"; not "Und wenn
    ich denselben Führer nach Wien schicken lasse?")."""
    if (_ELLIPSIS_DE if german else _ELLIPSIS_EN).search(words):
        return False
    if german and _CONDITION_THEN_QUESTION_DE.match(text):
        return True
    return bool(_QUESTION_START.match(words)) and not (german and {"dann", "da"} & set(words.split()))


def _article_before_lower_noun(words: list[str], i: int) -> bool:
    """Whether "das" at ``i`` of a message typed in lower case is the article of an adjective and its noun ("das neue
    passwort", "das alte konto"): an inflected adjective (-e, -en) and a content word after it. A pronoun is followed
    by a verb or a particle ("das geht", "das gleiche für Express")."""
    if i + 2 >= len(words):
        return False
    adjective, noun = words[i + 1], words[i + 2]
    return (len(adjective) >= 4 and adjective.endswith(("e", "en")) and noun not in _STOP_DE and len(noun) >= 3
            and noun.isalpha())


@dataclass(frozen=True)
class Dependence:
    kind: str  # "" standalone | "reply" | "bare" | "ellipsis" | "anaphora"
    word: str = ""


# A label of the product's screens, quoted ("the 'This wasn't me' link", "„Dieses Gerät merken“") or, in
# English, written with a capital inside the sentence before "this" ("If I tick Remember this browser"): its
# "this" is part of the name, not a word pointing back at the conversation.
_QUOTED_LABEL = re.compile(r"""(?:(?<=\s)|^)(?:'(?:[^'\n]|'(?=[a-z])){2,60}'|"[^"\n]{2,60}"|‘[^’\n]{2,60}’|“[^”\n]{2,60}”|„[^“”\n]{2,60}[“”])(?=[\s.,;:!?)]|$)""")
_CAPITALISED_LABEL = re.compile(r"(?<=[a-z,]\s)(?!I\b)[A-Z][a-z]+\s+(?:this|these)\b")


def quoted_labels(text: str) -> list[str]:
    """The labels a text quotes, without their quotation marks ("This wasn't me")."""
    return [m.group(0)[1:-1].strip() for m in _QUOTED_LABEL.finditer(text)]


def _labels_masked(message: str) -> str:
    """The message with the labels it quotes or names written as one word ("label"), so that their words
    point nowhere."""
    return _CAPITALISED_LABEL.sub("label", _QUOTED_LABEL.sub("label", message))


def dependence(message: str, locale: str = "en", *, alone: bool = False) -> Dependence:
    dep = _dependence(message, locale, alone=alone)
    if alone and dep.kind == "anaphora" and _told_in_its_own_words(message, locale):
        return Dependence("")
    return dep


# what the other sentences must say to be the asked thing's antecedent ("My tent pole snapped. Can you fix it?"), not a
# pointing word of their own ("It broke. Can you fix it?")
MIN_TOLD_WORDS = 2


def _told_in_its_own_words(message: str, locale: str) -> bool:
    """Whether a message with no conversation, whose word points at something (``_dependence``), tells that thing in
    its own sentences: its question sentence (the last that asks, else the last) points at nothing, and the sentence
    pointing is one that tells the case ("Its a present for my husband - can you gift wrap the order?": "its" points
    at the order the question names); or its question sentence points back at what the sentences before it say ("wie
    schwer ist euer Zelt? will wissen ob ich das noch tragen kann": "das" is the tent)."""
    sentences = [x for x in SENTENCE_END.split(message.strip()) if x.strip()]
    if len(sentences) < 2:
        return False
    asking = max((i for i, x in enumerate(sentences) if "?" in x), default=len(sentences) - 1)
    if not _dependence(sentences[asking], locale, alone=True).kind:
        return True
    german = is_german(message, locale)
    stop = _STOP_DE if german else _STOP_EN
    before = [w for x in sentences[:asking] for w in _lower_words(x) if w not in stop and len(w) > 2]
    return len(before) >= MIN_TOLD_WORDS


def _dependence(message: str, locale: str = "en", *, alone: bool = False) -> Dependence:
    """Whether the message depends on the conversation, and how: a reply to the assistant's offer
    ("yes please"), a bare question word ("why?"), an ellipsis continuing the last question ("and
    for Canada?", "what about Plus?") or a word pointing back ("is it free?", "how long does that take?").
    ``alone``: the message has no conversation, so a pronoun with a candidate in its own words
    ("do I need it to be boxed?") points there; in a conversation it may point back, and only a
    clause of its own ("if I opened it") or a dummy "it" ("is it possible to") says otherwise."""
    german = is_german(message, locale)
    message = _labels_masked(message)
    words = _lower_words(message)
    phrase = " ".join(words)
    if phrase in (_REPLIES_DE if german else _REPLIES_EN) or phrase in _REPLIES_EN:
        return Dependence("reply", phrase)
    if phrase in (_BARE_DE if german else _BARE_EN):
        return Dependence("bare", phrase)
    joined = (_JOINED_QUESTION_DE if german else _JOINED_QUESTION).match(phrase)
    parts = message.split(None, 1) if joined else []
    if len(parts) > 1 and _own_question_after_conjunction(joined.group("rest"), parts[1], german):
        # "and how long does standard delivery take?", "Also, how much is Premier if I pay yearly?": the conjunction
        # adds a question, which is read as it asks ("and how long does that take?" still points back)
        return _dependence(parts[1], locale, alone=alone)
    if (_ELLIPSIS_DE if german else _ELLIPSIS_EN).search(phrase):
        return Dependence("ellipsis", words[0] if words else "")
    if not german and not alone and (_ADDITIVE_EN.search(phrase) or _NO_OBJECT_EN.search(phrase)):
        # "Can I add my sister as well?", "Could I ring on Saturday?"; alone, the help centre's own ("Does the bulky
        # item surcharge apply to Plus members too?", "Could I call on Saturday?": its support line)
        return Dependence("anaphora", words[-1])
    if _REPLY_START.match(message.strip()):
        return Dependence("reply", words[0])
    word = _points_back_de(words, _words(message), message, alone) if german else _points_back_en(words, message, alone)
    if word:
        return Dependence("anaphora", word)
    stop = _STOP_DE if german else _STOP_EN
    content = [w for w in words if w not in stop]
    if content and all(w in _ATTRIBUTES for w in content) and not conditions(message):
        return Dependence("attribute", content[0])  # "what's the price?": of what?
    return Dependence("")


# --------------------------------------------------------------------------- conditions

def _kind(value: str) -> str:
    v = value.casefold()
    if v in _COUNTRIES:
        return "place"
    if v in _TIERS or v.endswith(" plan"):
        return "tier"
    if v in _DAYS:
        return "day"
    if re.fullmatch(r"[£$€]?\d[\d.,]*%?(?:\s?\w+)?", v):
        return "amount"
    return "name"


_SMALL_TALK_TIMES = {"today", "tonight", "now", "right now", "currently", "yesterday", "soon", "later", "recently",
                     "this morning", "this afternoon", "this evening", "lately"}
_SIGNATURE_KINDS = {"places": "place", "tiers": "tier", "dates": "day", "times": "day", "time_words": "day",
                    "numbers": "amount", "money": "amount", "ids": "amount"}


def conditions(text: str, *, names: bool = True) -> dict[str, str]:
    """The answer-changing details a text states, by kind: places, tiers, days, amounts and names
    (capitalised words that are not the start of a sentence or a common word), as
    ``{casefolded value: kind}``. ``names=False`` keeps only the recognised kinds and numbers."""
    found: dict[str, str] = {}
    lowered = text.casefold()
    kept = text.lower()  # not casefold(), which writes "ß" as "ss": "Großbritannien" would never be found
    for place in _COUNTRIES:
        if re.search(rf"(?<!\w){re.escape(place)}(?!\w)", kept) and (len(place) > 2 or
                                                                       re.search(rf"\b{place.upper()}\b", text)):
            found[place] = "place"
    for tier in _TIERS:
        if re.search(rf"\b{tier}\b\s+(?:plan|tier|membership|account|subscription|package|member|customers?)\b",
                     lowered) or re.search(rf"(?<![a-z] )\b{tier.capitalize()}\b", text):
            if tier in _AMBIGUOUS_TIERS and not re.search(
                    rf"\b{tier.capitalize()}\b|\b{tier}\s+(?:plan|tier|membership|subscription|package)\b", text):
                continue
            found[tier] = "tier"
    for day in _DAYS:
        if re.search(rf"\b{day}\b", lowered):
            found[day] = "day"
    for m in re.finditer(r"[£$€]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:%|kg|km|miles?|days?|months?|"
                         r"years?|hours?|weeks?|items?|euros?|dollars?|pounds?|gb|mb)?\b", lowered):
        value = m.group(0).strip()
        if value and not any(value in k for k in found):
            found[value] = "amount"
    # and every detail the semantic cache's guards would veto a hit on (caching.guards.signature):
    # "the sale", "express", "yearly", "students", sizes, ids, dates
    # (not the mood: "start it from your orders page" is how a turn is said, not a detail of the case)
    for field_name, values in guards.signature(text).items():
        if field_name in guards.VETO_FIELDS and field_name != "mood":
            for value in values:
                value = str(value).casefold()
                if field_name == "time_words" and value in _SMALL_TALK_TIMES:
                    continue
                if field_name == "tiers" and value in _AMBIGUOUS_TIERS and value not in found:
                    continue  # "is it free?", "a personal account": the word, not the plan (see above)
                if value and not any(value in k or k in value for k in found):
                    found[value] = _SIGNATURE_KINDS.get(field_name, field_name)
    if names:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
            tokens = _words(sentence)
            run: list[str] = []
            for i, tok in enumerate(tokens + [""]):
                capital = tok[:1].isupper() and tok.casefold() not in _COMMON_CAPITALISED
                # a sentence's first word is capitalised anyway: a name only with a capitalised word after it
                if capital and (i > 0 or (i + 1 < len(tokens) and tokens[i + 1][:1].isupper())):
                    run.append(tok)
                    continue
                if run:
                    value = " ".join(run).casefold()
                    if not any(value == k.casefold() or value in k.casefold().split() for k in found) and len(value) > 1:
                        found[value] = _kind(value)
                    run = []
    return _negated(found, text)


# Plan names that are also everyday words: a plan only when capitalised or followed by "plan".
_AMBIGUOUS_TIERS = ("free", "personal", "team", "business", "max", "plus")
_NEGATION = r"(?:\bnot|\bno|\bnever|\bwithout|\bnon|n't|n’t)"


def _negated(found: dict[str, str], text: str) -> dict[str, str]:
    """The conditions, a negated one marked: "I'm not a Plus member" states ``not plus``, never
    ``plus``, so it cannot resolve like "I'm a Plus member"."""
    lowered = text.casefold()
    out = {}
    for value, kind in found.items():
        if kind in ("tier", "place", "day", "name") and re.search(
                rf"{_NEGATION}(?:[\s-]+[\w'’-]+){{0,3}}[\s-]+{re.escape(value)}(?!\w)", lowered):
            out[f"not {value}"] = kind
        else:
            out[value] = kind
    return out


def _running(turns: tuple[Turn, ...]) -> dict[str, str]:
    """The conditions the customer stated so far, the later of two of one kind (place, tier, day)
    replacing the earlier, with the names the assistant's last turn brought up (the product it
    just offered)."""
    state: dict[str, str] = {}
    for turn in turns:
        if turn.role != "user" or _small_talk(turn):  # "typical rainy weekend" states nothing of the case
            continue
        stated = conditions(turn.content)
        for kind in {k for k in stated.values() if k in ("place", "tier", "day")}:
            for old in [v for v, k in state.items() if k == kind]:  # an earlier turn's, not this one's
                del state[old]
        state.update(stated)
    # and the facts the assistant's turns named (its order numbers, plans, products, prices): a
    # conversation reworded keeps its facts, another conversation has others
    side = _side_turns(turns)
    for i, turn in enumerate(turns):
        if turn.role == "assistant" and i not in side and not _chatter_reply(turns, i):
            # an answer to a side question is about something else; a reply to small talk about nothing
            for value, kind in conditions(turn.content).items():
                state.setdefault(value, kind)
    last_assistant = next((t for t in reversed(turns) if t.role == "assistant"), None)
    if last_assistant is not None:
        for title in last_assistant.cited:
            state.setdefault(title.casefold(), "topic")
    return state


def _topic(text: str, german: bool) -> str:
    """The content words of a question (what it is about), in order."""
    stop = _STOP_DE if german else _STOP_EN
    return " ".join(w for w in _lower_words(text) if w not in stop and len(w) > 1)


# --------------------------------------------------------------------------- resolution

CLARIFY_TEXT = {
    "en": ("Could you say a little more about what you mean? I can't tell from \"{message}\" alone which product, "
           "order step or country it's about."),
    "de": ("Können Sie etwas genauer sagen, was Sie meinen? Aus \"{message}\" allein kann ich nicht erkennen, um "
           "welches Produkt, welchen Schritt oder welches Land es geht."),
}


def clarify_text(resolution: Resolution, locale: str) -> str:
    template = CLARIFY_TEXT.get(locale.split("-")[0], CLARIFY_TEXT["en"])
    return template.format(message=resolution.message[:80])


def resolve(conversation: Conversation, locale: str = "en", rewriter=None, *, scoped: bool = True) -> Resolution:
    """The standalone question of the conversation's last message (see the module docstring).
    ``rewriter``: an optional callable ``(conversation, locale) -> str | None`` (the trusted model).
    ``scoped=False``: an unresolved message stays unresolved (how an earlier turn is read, ``_previous_resolution``)."""
    aside = _chatter_exchanges(conversation.history)
    if aside:  # the customer's aside and the assistant's courtesy after it (``_chatter_exchanges``)
        kept = Conversation(tuple(t for i, t in enumerate(conversation.turns) if i not in aside))
        inner = resolve(kept, locale, rewriter, scoped=scoped)
        # the model's prompt still gets every turn (``customers_words`` and ``last_reply`` pass the asides over)
        return replace(inner, history=conversation.history,
                       detail=f"{inner.detail} ({len(aside) // 2} aside left out)"[:300])
    try:
        resolution = _resolve(conversation, locale, rewriter)
    except TooMuchContext as exc:
        resolution = Resolution(conversation.message, _context_question(conversation.message, conversation.history),
                                How.UNRESOLVED, f"too much context to carry in a question ({exc})",
                                history=conversation.history)
    if resolution.how in (How.UNRESOLVED, How.REWRITTEN) and not is_german(conversation.message, locale):
        # too much conversation, a follow-up of a question that was not resolved, or a rewrite carrying earlier
        # topics' words: if earlier topics were closed and a thread of a new subject began, the message is read
        # in that thread (sixth session; rewrites too since the twelfth)
        after = _after_closed_topic(conversation.history)
        if after is not None:
            inner = resolve(Conversation((*after, conversation.turns[-1])), locale, rewriter, scoped=scoped)
            if inner.cacheable:
                return replace(inner, history=conversation.history,
                               detail=f"{inner.detail} (in the thread after a closed topic)"[:300])
    if resolution.how == How.UNRESOLVED and scoped and rewriter is None and settings.CONVERSATION_SCOPED_KEY:
        return _scoped(conversation, locale, resolution)
    return resolution


_REPLY_WORDS = {"yes", "yeah", "yep", "yup", "no", "nope", "nah", "ok", "okay", "sure", "alright", "fine",
                "correct", "right", "agreed", "neither", "both", "either"}


def _scoped(conversation: Conversation, locale: str, unresolved: Resolution) -> Resolution:
    """A message the rules could not rewrite (a reply to the assistant's offer, a bare "why?", a
    follow-up after the assistant's question), keyed by the conversation itself: the message with
    every word of every turn (the assistant's last turn, which a reply answers, always among them;
    a customer's yes or no always; only pure small talk, side exchanges and the replies to them
    left out) and the running conditions. Two conversations get one key only if they said the same
    things, the same details, and end in the same words, so they have one answer; it is looked up
    by the exact cache only (``Resolution.exact_only``). German, or more than
    ``CONVERSATION_TOPIC_WORDS`` words or ``CONVERSATION_MAX_CONDITIONS`` conditions: unresolved."""
    message, history = conversation.message, conversation.history
    if is_german(message, locale) or not history or _topicless(history, message):
        return unresolved  # "is it free?" after nothing but "hi, how are you?" has nothing to be keyed by
    side = _side_turns(history)
    have = {_stem(w) for w in _lower_words(message)}
    words: list[str] = []
    # the assistant's last turn that says something: a reply answers "Shall I cancel it?", not the "Take your
    # time." after the customer's "hmm let me think" (sixth session)
    last_assistant = max((i for i, t in enumerate(history) if t.role == "assistant" and not _small_talk(t)
                          and not _chatter_reply(history, i)),
                         default=max((i for i, t in enumerate(history) if t.role == "assistant"), default=None))
    for i, turn in enumerate(history):
        said_yes_or_no = turn.role == "user" and set(_lower_words(turn.content)) & _REPLY_WORDS
        if i != last_assistant and not said_yes_or_no and (
                _small_talk(turn) or i in side or _chatter_reply(history, i)):
            continue
        for w in map(_stem, _topic_words(turn.content)):
            if (w not in have and w not in words) or i == last_assistant:
                words.append(w)
    if not words:
        return unresolved
    if len(words) > settings.CONVERSATION_TOPIC_WORDS:
        return unresolved
    try:
        question, carried = _with_conditions(_with_topic(message, " ".join(words)), _running(history),
                                             conditions(message))
    except TooMuchContext:
        return unresolved
    return Resolution(message, question, How.REWRITTEN, f"keyed by the conversation ({unresolved.detail})"[:300],
                      conditions=carried, history=history)


# The customer leaves the conversation's subject in words ("ok that's a dealbreaker then. different question: if I close my
# account, ...", "Andere Frage: ..."): what follows is asked on its own, and nothing said before travels with it
_NEW_QUESTION = re.compile(
    r"\b(?:(?:a|one)\s+)?(?:different|another|new|separate|unrelated|other)\s+(?:question|topic|subject|matter|thing)\b|"
    r"\bon\s+(?:a|another|an\s+unrelated|a\s+different)\s+note\b|\bchanging\s+(?:the\s+)?subject\b|"
    r"\b(?:eine\s+)?(?:andere|neue)\s+frage\b|\banderes\s+thema\b|\bthemawechsel\b", re.IGNORECASE)
_NEW_QUESTION_END = re.compile(r"\s*(?:though|then|too)?\s*[:,.;!?\-–—]*\s*", re.IGNORECASE)


def _after_new_question(text: str) -> str:
    """A message's words after it says a new question begins ("different question: ..."), or the message."""
    marked = _NEW_QUESTION.search(text)
    return text[_NEW_QUESTION_END.match(text, marked.end()).end():].strip() if marked else text


def _new_question(message: str, locale: str) -> str:
    """What a message asks after the customer says it is a new question ("different question: ..."), when that
    stands on its own (points at nothing); else ""."""
    rest = _after_new_question(message)
    if rest == message:
        return ""
    if len(_lower_words(rest)) < MIN_TOLD_WORDS or dependence(rest, locale, alone=True).kind:
        return ""
    return rest


# The customer takes in the last answer before going on ("ok and if I'm a Plus member?", "Thanks. Also, how much is
# Premier if I pay yearly?", "hmm, what about express?", "alles klar, und nach Wien?"): what follows is the message
_ACKNOWLEDGED = re.compile(
    r"^(?:(?:ok(?:ay)?|k|alright|all\s+right|right|hm+|ah+|oh+|i\s+see|got\s+it|gotcha|great|cool|nice|perfect|"
    r"thanks|thank\s+you|thx|ty|cheers|good\s+to\s+know|makes\s+sense|understood|fair\s+enough|sounds\s+good|"
    r"achso|ach\s+so|alles\s+klar|danke|super|verstehe|gut)\b(?:\s+(?:so|then|dann))?[\s,.!:;\u2013\u2014-]*)+",
    re.IGNORECASE)


def _acknowledged(message: str) -> str:
    """A message without the acknowledgment it opens with ("ok and if I'm on Plus?" -> "and if I'm on Plus?"), or the
    message when nothing of its own follows one."""
    rest = _ACKNOWLEDGED.sub("", message.strip(), count=1)
    return rest if rest != message.strip() and len(_lower_words(rest)) >= 2 else message


def _resolve(conversation: Conversation, locale: str, rewriter) -> Resolution:
    message = conversation.message
    history = conversation.history
    dep = dependence(message, locale, alone=not history)
    if (history and not dep.kind and (core := _acknowledged(message)) != message
            and dependence(core, locale).kind):
        # only where the acknowledgment hid the follow-up: a message whose own words point back is resolved as written
        return replace(_resolve(Conversation((*history, Turn("user", core))), locale, rewriter), message=message)
    if history:
        core, told = _told_after(message)
        # what the customer tells after their follow-up ("ok and on christmas eve? want to sort out a present order
        # that day") is resolved without it ("that day" points at nothing asked), as the ellipsis rule reads one
        # ("what about overnight? kind of need it tomorrow"); a case it names is told after the resolved question ("...
        # I'm in Toronto btw"; twenty-second session)
        inner = _resolve(Conversation((*history, Turn("user", core))), locale, rewriter) if told else None
        if inner is not None and inner.how in (How.REWRITTEN, How.MODEL):
            named = asked_cases(places_as_countries(told, locale))
            return replace(inner, message=message,
                           question=_with_told(inner.question, told) if named else inner.question)
    if history and (fresh := _new_question(message, locale)):
        return replace(_standalone(fresh, history, _running(history), locale, is_german(fresh, locale),
                                   fresh=True), message=message)
    german = is_german(message, locale)
    earlier_users = [t for t in history if t.role == "user"]
    if not earlier_users and not any(t.role == "assistant" for t in history):
        if dep.kind:
            return Resolution(message, message, How.CLARIFY,
                              f"{dep.kind} ({dep.word!r}) with no conversation before it", history=history)
        return Resolution(message, message, How.SINGLE, "one message", history=history)

    running = _running(history)
    if dep.kind == "anaphora" and (own := _asks_in_its_own_words(message, locale)):
        return replace(_resolve(Conversation((*history, Turn("user", own))), locale, rewriter), message=message)
    if not dep.kind:
        return _standalone(message, history, running, locale, german)

    if rewriter is not None and not german:
        rewritten = rewriter(conversation, locale)
        if rewritten:
            return _checked_model_rewrite(message, rewritten, running, history)
    if german:
        return _german_follow_up(conversation, locale, dep, running)
    if dep.kind in ("reply", "bare"):
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          f"a {dep.kind} ({dep.word!r}) whose meaning is the conversation's", history=history)
    last_assistant = next((t for t in reversed(history) if t.role == "assistant"), None)
    if _assistant_asked(last_assistant):  # "can you do it now?" after "shall I cancel it?" or "...renew it?"
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          f"{dep.kind} ({dep.word!r}) after the assistant's question", history=history)
    previous = _previous_resolution(conversation, locale)
    if previous is None or not previous.cacheable:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          f"{dep.kind} ({dep.word!r}) after a question that was itself not resolved",
                          history=history)
    if dep.kind == "ellipsis":
        return _ellipsis(message, previous, running, history)
    return _anaphora(message, dep, previous, running, history)


def _told_after(message: str) -> tuple[str, str]:
    """A message split into its questions and what it tells after the last of them, when that asks nothing
    ("ok and on christmas eve?" | "want to sort out a present order that day"); (message, "") otherwise."""
    head, mark, tail = message.rstrip().rpartition("?")
    if not mark or not head.strip() or not tail.strip() or _asks(tail.strip(" .!")):
        return message, ""
    return f"{head}?", " ".join(tail.split())


def _with_told(question: str, told: str) -> str:
    """A resolved question with what the customer told after it: before the conversation's words, if any."""
    if TOPIC_MARK in question:
        head, rest = question.split(TOPIC_MARK, 1)
        return f"{head} {told}{TOPIC_MARK}{rest}"
    return f"{question} {told}"


def _asks_in_its_own_words(message: str, locale: str) -> str:
    """A follow-up whose pointing word is in a sentence telling what the customer did ("ok ill reset it. how long is
    the reset link valid for?", "Returned it on Monday. When do refunds reach PayPal?"), and whose later sentence asks
    a question that points at nothing and names its thing in words enough: that question, resolved as if sent alone
    (its conversation's conditions still travel with it where they bear on it); else ""."""
    sentences = [x for x in SENTENCE_END.split(message.strip()) if x.strip()]
    if len(sentences) < 2:
        return ""
    asking = max((i for i, x in enumerate(sentences) if "?" in x), default=None)
    if not asking or any(_asks(x) for x in sentences[:asking]):
        return ""
    question = " ".join(sentences[asking:])
    if dependence(question, locale).kind:
        return ""
    named = [w for w in _lower_words(question) if w not in NAMING_NOTHING and w not in WHAT_NOW and len(w) > 2]
    return question if len(named) >= MIN_TOLD_WORDS else ""


_QUESTION_START = re.compile(rf"^(?:{QUESTION_WORDS})\b", re.I)


def _asks(text: str) -> bool:
    """Whether a text asks something ("?" or a question word first), not states it."""
    return "?" in text or bool(_QUESTION_START.search(text))


def _previous_resolution(conversation: Conversation, locale: str) -> Resolution | None:
    """The resolution of the customer's last question before this message: the latest earlier user
    turn that asks something (chatter such as "thanks, that's quick" is passed over)."""
    turns = conversation.turns
    users = [i for i, t in enumerate(turns[:-1]) if t.role == "user" and not _small_talk(t)]
    asking = [i for i in users if _asks(turns[i].content)]
    idx = max(asking, default=None)
    if idx is None:  # "I'm asking about Acme Plus." states the subject without a question
        idx = max((i for i in users if len(_topic(turns[i].content, False).split()) >= 2), default=None)
    if idx is None:
        return None
    return resolve(Conversation(turns[:idx + 1]), locale, scoped=False)


def _with_conditions(question: str, running: dict[str, str], own: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    """The question with the running conditions it does not state itself (own kinds win); more
    than ``CONVERSATION_MAX_CONDITIONS`` of them is too much context to carry (``TooMuchContext``):
    dropping one could drop the detail that changes the answer."""
    if len(running) > settings.CONVERSATION_MAX_CONDITIONS:
        raise TooMuchContext(f"{len(running)} conditions stated")
    own_kinds = {k for k in own.values() if k in ("place", "tier", "day")}
    extra = sorted(v for v, k in running.items()
                   if v not in own and not (k in own_kinds) and not _states(question, v))
    carried = tuple(sorted(set(own) | set(extra)))
    if not extra:
        return question, carried
    if not question.endswith(")"):  # "how much is shipping" and "How much is shipping?" get one key
        question = f"{question.rstrip(' ?.!')}?"
    return f"{question} ({'; '.join(_PLACE_NAMES.get(v, v) for v in extra)})", carried


# A country carried in a question is spelled out: the help centre's sections say "United Kingdom".
_PLACE_NAMES = {"uk": "the uk (united kingdom)", "us": "the us (united states)", "usa": "the usa (united states)",
                "eu": "the eu (european union)"}


def _guarded(value: str) -> bool:
    """Whether the semantic cache's guards tell a question carrying ``value`` apart from one carrying
    another value of its kind (a place, plan, day, number: a veto field of ``caching.guards.signature``)."""
    value = _PLACE_NAMES.get(value.removeprefix("not "), value.removeprefix("not "))
    if ":" in value:
        return True  # read from the guards' own signature ("month:03")
    return any(guards.signature(value).get(f) for f in guards.VETO_FIELDS if f != "mood")


def _states(text: str, value: str) -> bool:
    """Whether ``text`` states the condition ``value`` as a whole word ("2" is not stated by "123")."""
    return re.search(rf"(?<![\w.,]){re.escape(value)}(?![\w]|[.,]\d)", text.casefold()) is not None


# The questions a customer's stated country or plan bears on, by the words that ask them: where
# something is sent, opened, sold or taxed; what something costs or includes. A how-to about the
# account ("how do I reset my password?") means the same for a customer in Leeds or on Premium.
_PLACE_BEARING = {
    "deliver", "delivers", "delivery", "deliveries", "ship", "ships", "shipping", "shipped", "post", "postage",
    "courier", "send", "sent", "collect", "collection", "pickup", "open", "opens", "opening", "close", "closes",
    "closing", "hours", "branch", "branches", "store", "stores", "shop", "shops", "near", "nearest", "local",
    "tax", "taxes", "vat", "duty", "duties", "customs", "currency", "price", "prices", "cost", "costs", "much", "fee",
    "fees", "charge", "charges", "available", "availability", "stock", "arrive", "arrives", "arrival", "long",
    "days", "express", "next-day", "overnight", "international", "abroad", "coverage", "signal", "speed",
    "speeds", "engineer", "appointment", "nearby", "parking", "book", "booking", "slot", "slots", "lieferung", "versand", "kosten", "preis", "öffnungszeiten", "filiale",
}
_TIER_BEARING = {
    "price", "prices", "cost", "costs", "fee", "fees", "charge", "charges", "charged", "paying",
    "bill", "billing", "invoice", "save", "saving", "savings", "discount", "discounts", "annual",
    "annually", "monthly", "yearly", "free", "include", "included", "includes", "including", "limit", "limits",
    "allowance", "users", "profiles", "devices", "storage", "features", "feature", "benefit", "benefits", "perks",
    "upgrade", "downgrade", "switch", "cancel", "cancellation", "refund", "trial", "plan", "plans", "tier",
    "membership", "subscription", "renew", "renewal", "support", "priority", "much", "delivery", "shipping",
    "return", "returns", "exchange", "exchanges", "long", "days", "quickly", "fast", "express",
    "extra", "cheaper", "expensive", "worth", "kosten", "preis", "gebühr", "tarif",
}


_DAY_BEARING = {
    "open", "opens", "opening", "close", "closes", "closing", "hours", "deliver", "delivers", "delivery", "deliveries",
    "arrive", "arrives", "book", "booking", "appointment", "slot", "slots", "available", "availability", "collect",
    "collection", "pickup", "staffed", "busy", "price", "prices", "cost", "costs", "surcharge", "fee", "fees",
    "öffnungszeiten", "geöffnet", "lieferung",
}


_MONEY = re.compile(r"[£$€]|\b(?:euros?|dollars?|pounds?|gbp|usd|eur|quid|bucks)\b")
_MONEY_BEARING = {
    "fee", "fees", "charge", "charges", "charged", "cost", "costs", "price", "limit", "limits", "maximum", "minimum",
    "max", "min", "rate", "rates", "exchange", "tax", "taxes", "instant", "instantly", "verify", "verification",
    "allowed", "cheaper", "expensive", "commission",
}


# "I'm 16", "I am 16 years old", "my daughter is 11", "aged 17": an age the customer states
_AGE = re.compile(r"\b(?:i'?m|i\s+am|(?:he|she|they)\s+(?:is|are)|(?:he|she)'s|(?:son|daughter|child|kid|boy|girl|"
                  r"brother|sister|partner|wife|husband|mum|mom|dad|father|mother)\s+is|aged?|turning|turned)\s+"
                  r"(?P<age>\d{1,3})(?:\s*(?:years?|yrs?)(?:\s+old)?)?(?!\s*(?:[£$€%]|euros?|dollars?|pounds?|"
                  r"items?|days?|weeks?|months?|kg|minutes?|hours?|times?)\b)\b", re.IGNORECASE)
_AGE_BEARING = {"open", "account", "accounts", "card", "cards", "eligible", "eligibility", "child", "children", "kid",
                "kids", "teen", "teenager", "teenagers", "minor", "minors", "minimum", "age", "old", "young", "apply",
                "application", "sign", "join", "allowed", "loan", "loans", "credit", "overdraft", "mortgage", "junior"}


def _ages(turns: tuple[Turn, ...]) -> dict[str, str]:
    """The latest age the customer stated in ``turns`` (as ``{"age N": "amount"}``), or ``{}``."""
    for turn in reversed(turns):
        found = [m.group("age") for m in _AGE.finditer(turn.content)]
        if found:
            return {f"age {found[-1]}": "amount"}
    return {}


_OPEN_A_THING = re.compile(r"\bopen\s+(?:a|an|my|the|another|new|joint|second)\b", re.IGNORECASE)


def _bears_on(message: str, kind: str) -> bool:
    """Whether a stated condition of ``kind`` (a place, a plan, a day, ``money``) bears on the message's answer."""
    words = set(_lower_words(message))
    if kind == "day" and _OPEN_A_THING.search(message):
        words.discard("open")  # "can I open an account?" on Friday: opening something, not the opening hours
    if kind == "money":
        return bool(words & _MONEY_BEARING)
    if kind == "age":
        return bool(words & _AGE_BEARING)
    if kind == "day":
        return bool(words & _DAY_BEARING)
    if kind == "place":
        return bool(words & _PLACE_BEARING)
    if kind == "tier":
        return bool(words & _TIER_BEARING)
    return True


def _standalone(message: str, history: tuple[Turn, ...], running: dict[str, str], locale: str,
                german: bool, *, fresh: bool = False) -> Resolution:
    """A message that points nowhere: standalone, unless it continues the conversation (an earlier
    turn is on its topic, ``CONVERSATION_RELATED_COSINE``) or the customer's country, plan or day
    bears on it: then the topic of the customer's related question and the conditions of those
    turns travel with it, so "is there a fee?" about one thing is never the same question as
    about another. ``fresh``: asked after the customer says it is a new question; it continues nothing."""
    last_assistant = next((t for t in reversed(history) if t.role == "assistant"), None)
    if _answers_assistant(message, last_assistant):
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "a reply to the assistant's question", history=history)
    own = conditions(message)
    if (not german and not self_contained(message) and not _new_subject_after_closed_topic(message, history)
            and not _names_a_new_thing(message, history)):
        return _underspecified(message, history, running, last_assistant)
    if not german and not fresh and (why := continues(message, history)):
        return _continuing(message, history, running, last_assistant, why)
    related = _related_turns(message, history)
    # the customer's country, plan and day, stated or asked about (the latest of each kind), where
    # they bear on the question: "what time do you open?" after "I'm coming to the Leeds branch". A detail
    # asked about inside a question of theirs frames the questions that follow it until they ask another:
    # "Do you have a branch in Leeds?", then "What are your opening hours?" is asked of Leeds; "Do you
    # deliver to Ireland?", "How do I reset my password?", then "What are your opening hours?" is not (a
    # later question on the Irish delivery's topic still carries it: ``related`` below)
    users = [t for t in _since_fresh_start(history) if t.role == "user"]
    asking = [bool(_asked(t.content)) for t in users]
    latest = max((i for i, a in enumerate(asking) if a), default=-1)
    # after "different question:" (``fresh``) not even what that latest question asks about ("Do you ship to Canada?"):
    # the customer has left its subject; what they told of themselves stays ("I'm in Mexico City.")
    stated = _running(tuple(replace(t, content=t.content.replace(_asked(t.content), " ")) if fresh and i == latest else t
                            for i, t in enumerate(users) if i == latest or not asking[i]))
    bearing = {v: k for v, k in stated.items() if k in ("place", "tier", "day") and _bears_on(message, k)}
    # a sum of money the customer means to send, pay or top up bears on fees, limits and timings
    bearing.update({v: k for v, k in stated.items() if k == "amount" and _MONEY.search(v) and _bears_on(message, "money")})
    # and an age ("I'm 16", "my daughter is 11") bears on who may open, hold or apply for something
    if _bears_on(message, "age"):
        bearing.update(_ages(tuple(users)))
    # and where the customer is or is going and when, from any turn of theirs since the topic was last
    # closed, a wander or not ("I'm in Thailand for the week" ... "Which ATMs am I allowed to use?"):
    # which questions such a detail bears on no word list can say, so it travels unless the message
    # states its own detail of that kind
    own_kinds = set(_where_and_when(message).values())
    if not set(_lower_words(message)) & _SITUATION_FREE:
        bearing.update({v: k for v, k in _situation(history).items() if k not in own_kinds})
    if not related and not bearing:
        return Resolution(message, message, How.STANDALONE, "standalone; the conversation is about something else",
                          history=history)
    for turn in related:
        bearing.update({v: k for v, k in conditions(turn.content).items() if v in running})
    topic = _conversation_topic(tuple(related), message, users_only=True)
    question, carried = _with_conditions(_with_topic(message, topic) if topic else message, bearing, own)
    if question == message:
        return Resolution(message, message, How.STANDALONE,
                          "standalone; it states its own conditions, or those stated do not bear on it",
                          conditions=carried, history=history)
    if german:
        return Resolution(message, question, How.UNRESOLVED,
                          "German message on the conversation's topic: not rewritten, shared caches bypassed",
                          history=history)
    return Resolution(message, question, How.REWRITTEN, "standalone wording; conditions stated earlier carried",
                      conditions=carried, history=history)


# A name after these is where the customer is, goes or travels with ("I'm staying in Bristol", "flying
# with Ryanair", "a table at Luigi's"): a place in all but the word list of countries.
_AT_PLACE = r"\b(?:in|to|from|near|visiting|via|around)\s+(?:the\s+)?"


# What a customer's sign-in and the app's own settings are about: the same wherever and whenever the
# customer is ("how do I turn on two-factor authentication?" in Canada or on Friday).
_SITUATION_FREE = {"password", "passcode", "two-factor", "2fa", "authentication", "login", "log-in", "username",
                   "app", "email", "emails", "notifications", "paperless", "newsletter", "newsletters", "unsubscribe"}


def _where_and_when(text: str) -> dict[str, str]:
    """The places (a country, or a name after "in", "to", "from", "near") and the days and dates ("Friday",
    "in March", "on the 3rd") a text states."""
    found = {}
    for value, kind in conditions(text).items():
        if value.startswith("not "):
            continue
        if kind == "day" and value not in _DAYS and ":" not in value and not re.search(r"\d", value):
            continue  # "every evening", "next week": when something happens, not a day of the customer's
        if kind in ("place", "day") or (kind == "name" and re.search(
                _AT_PLACE + re.escape(value) + r"(?!\w)", text.casefold())):
            found[value] = "place" if kind == "name" else kind
    return found


def _situation(history: tuple[Turn, ...]) -> dict[str, str]:
    """The customer's running situation: the places (countries, and names said after "in", "to",
    "from", "near": "I'm travelling to Lisbon", "I'm staying in Bristol") and the days and dates ("on
    Friday", "in March") the customer stated, in a turn of theirs that asks nothing (it sets the
    scene for what follows), since the topic was last closed (their thanks and the assistant's
    reply), the later of one kind replacing the earlier. A detail inside a question of theirs
    ("I'm flying to Rome on Friday, will my card work there?") was asked about and answered there.
    Side questions and a wandering chat do not end a situation: "I'm in Thailand for the week",
    then "is there an app for android?", then "which ATMs can I use?" is still asked from Thailand."""
    state: dict[str, str] = {}
    for i, turn in enumerate(history):
        if turn.role != "user":
            continue
        words = _lower_words(turn.content)
        if set(words) & _THANKS and len(words) <= 4 and i + 1 < len(history):
            state = {}  # "done, thanks" / "You're welcome. Anything else?": that topic is done
            continue
        if _small_talk(turn):
            continue
        if _asked(turn.content):
            continue  # "I'm flying to Rome on Friday, will my card work there?": asked and answered there
        found = _where_and_when(turn.content)
        for kind in set(found.values()):
            state = {v: k for v, k in state.items() if k != kind}
        state.update(found)
    return state


def _asked(text: str) -> str:
    """The question a turn asks: its last sentence that asks ("not now thanks. Can I add …?",
    "sorry, quick one - do you sell gift cards?"), or ""."""
    return next((q for q in reversed(re.split(r"(?<=[.!?])\s+|\s+[-–—]\s+", text))
                 if _asks(q)), "")


def _since_fresh_start(history: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """The turns from the customer's latest fresh start on: a question of theirs that stood on its own
    where it was asked (self-contained, pointing nowhere, continuing nothing before it). A country,
    plan or day stated before it belongs to a subject the customer has left ("my broadband in
    Manchester", then "can I add a second email address?"), and does not travel to a self-contained
    question asked later ("what are your customer service opening hours?")."""
    for i in range(len(history) - 1, 0, -1):
        turn = history[i]
        if turn.role != "user" or _small_talk(turn):
            continue
        asked = _asked(turn.content)
        if (asked and not dependence(asked).kind and self_contained(asked)
                and not continues(asked, history[:i])):
            return history[i:]
    return history


def _related_turns(message: str, history: tuple[Turn, ...]) -> list[Turn]:
    """The customer's earlier turns on the message's topic: sentence-embedding cosine at least
    ``CONVERSATION_RELATED_COSINE`` (the retrieval embedder, the same the semantic cache uses)."""
    candidates = [t for t in history if t.role == "user" and _topic(t.content, False)]
    if not candidates:
        return []
    vectors = embed_texts([message] + [t.content for t in candidates], embedder=query_embedder(cached=True))
    return [t for t, v in zip(candidates, vectors[1:])
            if float(vectors[0] @ v) >= settings.CONVERSATION_RELATED_COSINE]


# Words that carry a message on from what was said before: "can I still change the address?",
# "how much is that in total?", "can I have a different one?".
_CONTINUATION = {"still", "instead", "anyway", "either", "already", "yet", "otherwise", "rest", "remaining",
                 "remainder", "total", "both", "another", "different", "then", "corrected", "replacement",
                 "meantime", "meanwhile", "afterwards", "now"}
# A comparison with no "than": with what the conversation said ("do Plus members pay less?" after a price).
_COMPARATIVE = {"less", "cheaper", "lower", "fewer", "faster", "quicker", "sooner", "longer", "shorter", "later",
                "higher", "pricier", "dearer"}
# ... used as a verb, with its object after it ("if you lower the price after I've received it"): no comparison
_COMPARATIVE_VERB = re.compile(rf"\b({'|'.join(sorted(_COMPARATIVE))})\s+(?:the|a|an|my|your|its|their|our|his|her|"
                               rf"this|that|these|those|prices?|it|them)\b", re.IGNORECASE)
# A request that the assistant act for this customer ("can you send me a corrected copy?",
# "please cancel the booking", "book me in"): about the customer's own case, which the conversation set out.
_ACTION_REQUEST = re.compile(
    r"^(?:(?:so|ok|okay|right|great|then)\W+)?(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"(?!tell\b|explain\b|recommend\b|suggest\b|help\b|confirm\s+(?:if|whether)\b)\w+|please\s+\w+|"
    r"(?:cancel|send|book|change|update|refund|resend|email|move|reschedule|swap|upgrade|downgrade|renew|pause|"
    r"freeze|add|remove|apply|process|arrange|order|reserve|transfer|close|reopen|reactivate|sort|fix|"
    r"check|confirm|put|sign|make|set)\s+(?:me|my|the|it|that|this|them|us|our)\b)", re.IGNORECASE)
# "the appointment", "the order", "that booking": the customer's own thing, which an earlier turn
# named (which appointment, which order); "the price of the Basic plan" says which itself.
_CASE_NOUNS = ("order|orders|booking|bookings|appointment|appointments|reservation|parcel|package|item|items|"
               "refund|replacement|repair|payment|invoice|bill|ticket|tickets|claim|case|contract|card|slot|table|"
               "room|session|device|product|purchase|engineer|visit|flight|trip|stay|car|vehicle|quote|loan")
# ... the thing itself, not a rule or a page about such things: "the refund policy", "the order form"
_GENERIC_AFTER = ("policy|policies|process|procedure|rules|terms|window|period|page|pages|form|forms|fee|fees|"
                  "length|lengths|duration|types|sizes|"
                  "price|prices|cost|costs|option|options|limit|limits|team|department|number|line|section|status page")
_CASE_REFERENCE = re.compile(rf"\b(?:the|that|this|those|these)\s+(?:\w+\s+)?(?P<noun>{_CASE_NOUNS})\b"
                             rf"(?!\s+(?:of|for|{_GENERIC_AFTER})\b)", re.IGNORECASE)
# What the customer is owed or allowed on the facts of the case: "how much compensation can I claim?".
_ENTITLEMENT = re.compile(r"\b(?:can\s+i\s+claim|am\s+i\s+(?:entitled|eligible|covered|owed|due|liable)|"
                          r"do\s+i\s+(?:qualify|owe)|what\s+do\s+i\s+owe|will\s+i\s+be\s+(?:charged|refunded|"
                          r"compensated|covered|billed)|is\s+(?:my|it|that|this)\s+(?:\w+\s+)?(?:still\s+)?covered|"
                          r"how\s+much\s+(?:compensation|money|of\s+a\s+refund|refund|do\s+i\s+get))\b", re.IGNORECASE)
# A refund, replacement or compensation of the customer's own: whether they get one, and how, is the
# case's ("can I get a refund to my card?" after a warranty bought 20 days ago, or after
# non-refundable tickets), whatever the case was.
_OWN_REMEDY = re.compile(r"\b(?:can|could|may|will|would|do|shall)\s+i\s+(?:still\s+)?(?:get|have|claim|receive|"
                         r"be\s+(?:given|offered|sent))\s+(?:a\s+|an\s+|my\s+|the\s+|any\s+)?(?:full\s+|partial\s+)?"
                         r"(?:refund|money\s+back|replacement|exchange|compensation|credit|reimbursement)\b", re.IGNORECASE)
# Nouns so common in support chats that sharing one with an earlier turn says nothing.
_GENERIC_NOUNS = {"help", "thing", "things", "way", "ways", "anything", "something", "everything", "someone",
                  "people", "person", "customer", "customers", "company", "team", "today", "day", "days", "week",
                  "month", "year", "time", "times", "lot", "bit", "kind", "sort", "good", "great", "nice",
                  "able", "sure", "happy", "glad", "sorry", "problem", "issue", "possible", "best", "better",
                  "online", "website", "site", "app", "work", "works", "working", "use", "using", "find", "see",
                  "look", "looking", "make", "go", "going", "let", "give", "check", "send", "say", "said",
                  "change", "update", "cancel", "buy", "pay", "offer", "sell", "have", "order", "ordering", "do"}


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    # "plus", "status", "bonus", "analysis": no plural
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _content_sequence(text: str) -> list[str]:
    """A text's content words, stemmed, in order (generic ones left out)."""
    return [_stem(w) for w in _lower_words(text)
            if len(w) > 2 and w not in _STOP_EN and w not in _GENERIC_NOUNS and not w.isdigit()]


def _without_repeats(message: str, history: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """The history without earlier askings of the same question (same content words) and the answers
    to them: a customer who asks again ("how do I return an item?" twice) is not talking about what
    an earlier turn did; the turns around them still count."""
    words = _content_sequence(message)
    kept, skip_answer = [], False
    for turn in history:
        if turn.role == "user":
            skip_answer = bool(words) and _content_sequence(turn.content) == words
            if skip_answer:
                continue
        elif skip_answer:
            skip_answer = False
            continue
        kept.append(turn)
    return tuple(kept)


def _shared_subject(message: str, history: tuple[Turn, ...]) -> str:
    """A content word of the message that an earlier turn used in the same sense: with the same
    neighbour where the message gives it one ("delivery slot" after "the delivery slot you booked"),
    alone where the message has none ("can I change the address?" after "your address"). "Gift
    wrapping" after "gift cards", or "returns policy" after "privacy policy", is another subject."""
    words = _content_sequence(message)
    seen, recent, pairs = set(), set(), set()
    turns = _without_repeats(message, history)
    for at, turn in enumerate(turns):
        seq = _content_sequence(turn.content)
        seen.update(seq)
        if at >= len(turns) - settings.CONVERSATION_SHARED_WORD_TURNS:
            recent.update(seq)
        pairs.update(frozenset(p) for p in zip(seq, seq[1:]))
    for i, w in enumerate(words):
        if w not in seen:
            continue
        neighbours = [words[j] for j in (i - 1, i + 1) if 0 <= j < len(words)]
        # a bare word is weak evidence: in a long chat that wandered, some turn long ago used it in passing
        if (not neighbours and w in recent) or any(frozenset((w, n)) in pairs for n in neighbours):
            return w
    return ""


def continues(message: str, history: tuple[Turn, ...]) -> str:
    """Why a message that names a subject of its own still continues the conversation (empty if it
    does not): it carries on from what was said ("still", "instead", "in total"), asks the assistant
    to act on the customer's own case ("can you send me a corrected copy?"), or talks about a thing
    an earlier turn talked about ("can I change the delivery slot?" after a chat about a delivery).
    Its answer may then rest on a detail of that conversation (which order, which invoice, which
    product), so it is not the same question as anyone else's. A message about something the
    conversation never mentioned ("how do I reset my password?" after a chat about a refund) is
    left alone."""
    words = set(_lower_words(message))
    marker = sorted(words & _CONTINUATION)
    if marker:
        return f"carries on from the conversation ({marker[0]!r})"
    verbs = {m.group(1).casefold() for m in _COMPARATIVE_VERB.finditer(message)}  # "if you lower the price"
    compared = sorted(words & _COMPARATIVE - verbs)
    if compared and "than" not in words:
        return f"compares with what the conversation said ({compared[0]!r} than what?)"
    if _ACTION_REQUEST.search(message.strip()):
        return "asks the assistant to act on the customer's own case"
    case = _CASE_REFERENCE.search(message)
    if case:
        return f"refers to the customer's {case.group('noun').casefold()!r} the conversation set out"
    if _ENTITLEMENT.search(message) and _running(tuple(t for t in history if t.role == "user")):
        return "asks what the customer is owed or allowed, after stating the facts of the case"
    if _OWN_REMEDY.search(message) and any(t.role == "user" and not _small_talk(t) for t in history):
        return "asks for a refund or replacement of the customer's own, which the case decides"
    shared = _shared_subject(message, history)
    if shared:
        return f"talks about what an earlier turn did ({shared!r})"
    return ""


def _continuing(message: str, history: tuple[Turn, ...], running: dict[str, str], last_assistant: Turn | None,
                why: str) -> Resolution:
    """A message with a subject of its own that continues the conversation (``continues``): it
    carries the conversation's words and conditions (looked up by the exact cache only), or is
    not resolved after the assistant's question or with too much conversation to carry."""
    if _assistant_asked(last_assistant):
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          f"{why}, after the assistant's question", history=history)
    topic = _conversation_topic(history, message)
    if not topic and _topicless(history, message):
        return Resolution(message, message, How.STANDALONE, f"{why}, but nothing but small talk before it",
                          history=history)
    if not topic:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          f"{why}, and nothing in the conversation to carry", history=history)
    question, carried = _with_conditions(_with_topic(message, topic), running, conditions(message))
    return Resolution(message, question, How.REWRITTEN, f"{why}: the conversation carried"[:300],
                      conditions=carried, history=history)


_HOW_TO = re.compile(r"^(?:how|where|when)\s+(?:do|can|could|should|would|will|may)\s+(?:i|we|you)\b|"
                     r"^how\s+(?:long|much|many|soon|often)\s+(?:\w+\s+)?(?:do|does|can|will|should)\s+(?:i|we)\b|"
                     r"^(?:how|where)\s+(?:to|is|are)\b|^(?:can|could|may|should|do|does|will|would|is|are)\s+"
                     r"(?:i|we|you)\b|^what(?:'s\s+|\s+(?:is|are|does|do)\s+)(?:your|the|a|an)\b", re.IGNORECASE)


# A message naming this many content words (not attributes such as fee or notice, nor the light verbs and small talk
# below) says what it is about.
MIN_NAMING_WORDS = 3
_LIGHT_WORDS = {"need", "needs", "give", "get", "got", "take", "make", "have", "has", "use", "want", "like", "know", "let",
                "put", "keep", "able", "allowed", "possible", "still", "just", "also", "really", "actually", "please",
                "thanks", "thank", "great", "cheers", "lovely", "brill", "brilliant", "cool", "perfect", "okay", "sorry",
                "hey", "hiya", "hello", "quick", "question", "one", "thing", "last", "more", "unrelated", "usually",
                "normally", "what", "whats", "how", "when", "where", "which", "who", "why", "would", "could", "should",
                "does", "did", "can", "will", "way", "much", "many", "long", "soon", "again",
                # what paying or saving comes to is the plan's or the product's the conversation set out
                "pay", "paying", "paid", "save", "saving", "saved", "cost", "costs", "charge", "charged", "spend",
                "annually", "monthly", "yearly", "weekly", "big", "small", "old",
                # how many of whom: "Is there a maximum number of people I can add?" (to what?)
                "maximum", "minimum", "max", "min", "number", "amount", "total", "people", "person", "someone"}


def _names_a_new_thing(message: str, history: tuple[Turn, ...]) -> bool:
    """Whether a message names what it is about in words enough (``MIN_NAMING_WORDS``) of which the conversation said
    none: "do I need to book to use the gym floor?" after a chat about a payment, "what's the limit for a single
    contactless payment?" after one about a standing order (not "Is there a maximum number of people I can add?" after
    a chat about adding people, nor "and what rate do the printed maps get?")."""
    # of the sentence that asks: "kinda slow ngl... can i pay extra for express?" names only "express"
    sentences = [x for x in re.split(r"(?<=[.!?…])\s+", message.strip()) if x.strip()]
    words = _lower_words(next((x for x in reversed(sentences) if "?" in x), sentences[-1] if sentences else ""))
    if words and words[0] in ("and", "or", "but", "so", "und", "oder"):
        return False
    naming = {w for w in words if w not in _STOP_EN and w not in _THING_ATTRIBUTES and w not in _LIGHT_WORDS
              and len(w) > 2}
    if len(naming) < MIN_NAMING_WORDS:
        return False
    said = {w.rstrip("s")[:5] for t in history for w in _lower_words(t.content)}
    # nor one an earlier turn is about in other words ("add people" after "set up a team ... Invite")
    return not any(w.rstrip("s")[:5] in said for w in naming) and not _related_turns(message, history)


def self_contained(message: str) -> bool:
    """Whether a message without a pointing word names what it is about, so it means the same in
    any conversation: it asks something of the business or of a procedure ("what are your opening
    hours?", "how do I turn on two-factor authentication?", "do you ship to Canada?") with a
    subject of its own (a content word that is not a bare attribute such as fee, price, time), or
    names a product, place, plan or amount. "Is there an early exit fee?" or "can I get a refund?"
    in a conversation are about the conversation's product: not self-contained."""
    words = _lower_words(message)
    subject = [w for w in words if w not in _STOP_EN and w not in _THING_ATTRIBUTES and len(w) > 2]
    if not subject:
        return False
    if any(k in ("name", "place", "tier") for k in conditions(message).values()):
        return True
    acted_on = {m.group("thing") for m in _VERB_OBJECT.finditer(" ".join(words))}
    if len(subject) < 2 and any(w in _THING_ATTRIBUTES and not (w in _ATTRIBUTE_VERBS and acted_on & set(subject))
                                for w in words):
        return False  # "do you charge a cancellation fee?", "do I need to pay a deposit?": of what?
    if _HOW_FAST.match(" ".join(words)) and len([w for w in subject if w not in _MANNER]) < 2:
        return False  # "how quickly do you usually answer?": answer what? (not "how fast do you ship to Canada?")
    if any(w in ("you", "your", "yours") for w in words):
        return True  # asks the business itself: "do you price match?", "what are your opening hours?"
    joined = " ".join(words)
    if _THERE_IS.search(joined) and not any(w in _THING_ATTRIBUTES for w in words):
        return True  # "is there parking nearby?", "is there a mobile app?" (not "is there a fee?")
    takes = _HOW_LONG_DOES.search(joined)
    if takes and len([w for w in takes.group("subject").split() if w in subject]) >= 2:
        return True  # "how long does standard delivery take?" (not "how long does it take?")
    if "than" in words and len(subject) >= 3:
        return True  # a comparison naming both sides: "is express shipping faster than standard?"
    named = next((m for m in (p.search(joined) for p in _NAMED_AFTER) if m), None)
    rest = named.group("rest").split() if named else []
    if len([w for w in rest if w in subject]) >= 2 and not any(w in _THING_ATTRIBUTES for w in rest):
        # "how long does it take to get a new credit card?", "what will I need for identity verification?",
        # "how long is the password reset link valid?" (not "how much is the early exit fee?": of what?)
        return True
    return bool(_HOW_TO.search(joined)) and len(subject) >= 2 - (len(words) >= 6)


# How long or how fast something is done, and the words that say only how or how often it is done
_HOW_FAST = re.compile(r"^how\s+(?:quickly|soon|fast|long)\b")
_MANNER = {"quickly", "soon", "fast", "long", "usually", "normally", "typically", "generally", "often", "take", "takes",
           "get", "usual", "normal"}


# A dummy "it" whose infinitive names the thing ("how long does it usually take to get a new pin?"), and
# what a procedure needs ("what will I need for identity verification?"): with two words of a subject
# after them, not "how long does it take to get a replacement?" (of what?).
_TAKES_TO = re.compile(r"^how\s+(?:long|much)\s+(?:does|do|will|would|can)\s+it\s+(?:\w+\s+)?(?:take|takes|cost|costs)\s+"
                       r"to\s+(?P<rest>.+)")
_NEED_FOR = re.compile(r"^what\s+(?:will|would|do|does|should|must)\s+(?:i|we)\s+(?:need|have|bring)\s+"
                       r"(?:to\s+\w+\s+)?(?:for|to)\s+(?P<rest>.+)")
_WHAT_TO_DO = re.compile(r"^what\s+(?:should|can|do|must|shall)\s+(?:i|we)\s+do\s+(?:if|when|about|after)\s+(?P<rest>.+)")
_HOW_LONG_IS = re.compile(r"^how\s+(?:long|much|many)\s+(?:is|are)\s+(?:the|a|an|your)\s+(?P<rest>.+)")
_NAMED_AFTER = (_TAKES_TO, _NEED_FOR, _WHAT_TO_DO, _HOW_LONG_IS)
_THERE_IS = re.compile(r"^(?:is|are)\s+there\s+(?:a|an|any)?\s*\w+")
_HOW_LONG_DOES = re.compile(r"^how\s+(?:long|much)\s+(?:does|do|will|would)\s+(?!it\b|that\b|this\b|they\b|these\b|"
                            r"those\b)(?P<subject>(?:\w+\s+){1,4})(?:take|cost)\b")


def _underspecified(message: str, history: tuple[Turn, ...], running: dict[str, str],
                    last_assistant: Turn | None) -> Resolution:
    """A question that leaves its subject to the conversation ("is there an early exit fee?"): the
    topic of the customer's last question and the running conditions travel with it; after the
    assistant's own question, or with no earlier question, it is not resolved."""
    if _assistant_asked(last_assistant):
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "a question without a subject of its own, after the assistant's question", history=history)
    previous = _previous_resolution(Conversation((*history, Turn("user", message))), "en")
    if previous is not None and not previous.cacheable:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "a question without a subject of its own, after one that was not resolved", history=history)
    asked = previous is not None and _asks(previous.message)
    # a statement that only states conditions ("I'm in Canada.") gives them, which travel anyway, not
    # a topic; one that says what happened ("my order came with a broken lamp") is the topic
    topic = _conversation_topic(history, message) if asked or (
        previous is not None and not _only_conditions(previous.message)) else ""
    base = _with_topic(message, topic) if topic else message
    question, carried = _with_conditions(base, running, conditions(message))
    if question == message and _topicless(history, message):
        return Resolution(message, message, How.STANDALONE, "standalone; nothing but small talk before it",
                          history=history)
    if question == message:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "a question without a subject of its own, and nothing in the conversation to give it one",
                          history=history)
    return Resolution(message, question, How.REWRITTEN,
                      f"no subject of its own: {previous.question if previous else 'the conditions stated'!r}"[:300],
                      conditions=carried, history=history)


# Words a statement of a condition is made of besides the condition: "I live in Canada", "I'm on the Basic plan".
_STATING = {"live", "living", "lives", "based", "located", "from", "member", "plan", "tier", "account", "customer",
            "subscription", "membership", "package", "moved", "moving", "staying", "currently", "country", "city",
            "area", "near", "day", "date", "signed", "subscribed", "using", "use", "pay", "paying"}


def _only_conditions(text: str) -> bool:
    """Whether a statement says nothing but conditions ("I'm based in Canada", "I'm on Premium")."""
    stated = " ".join(conditions(text)).split()
    return all(w in _STATING or w in stated for w in _topic(text, False).split())


_CLOSERS = re.compile(r"\banything (?:else|further|more)\b|\bsomething else\b|\bhelp (?:you )?with\b.*\belse\b|"
                      r"\bwhat else\b|\b(?:other|any more|more|further) questions?\b|\bsonst noch\b|\bweitere fragen\b|"
                      # the customary opener asks nothing of the customer either
                      r"(?:^|[.!]\s+)(?:how|what)\s+can\s+i\s+(?:help(?:\s+you)?(?:\s+with)?|do\s+for\s+you|assist(?:\s+you)?)"
                      r"(?:\s+today)?\?\s*$|(?:^|[.!]\s+)what\s+would\s+you\s+like\s+to\s+know\?\s*$|"
                      r"\bwie\s+kann\s+ich\s+(?:ihnen\s+|dir\s+)?helfen\?\s*$|"
                      # "Of course, what's your question?", "Sure, what would you like to ask?"
                      r"(?:^|[.!,]\s*)what(?:'s|\s+is)\s+(?:your|the)\s+(?:next\s+|other\s+)?question\?\s*$|"
                      r"(?:^|[.!,]\s*)what\s+(?:else\s+)?(?:would|do)\s+you\s+(?:like|want|need)\s+to\s+(?:know|ask)\?\s*$",
                      re.IGNORECASE)


def _answers_assistant(message: str, last_assistant: Turn | None) -> bool:
    """Whether the message answers the assistant's last question ("Would you like a refund or a
    replacement?" / "The replacement would be better"): a statement after a question that is not
    the customary "anything else?"."""
    return _assistant_asked(last_assistant) and not _asks(message)


def _assistant_asked(last_assistant: Turn | None) -> bool:
    """Whether the assistant's last turn asked the customer something (an offer, a choice, a
    detail), other than the customary "anything else?"."""
    return (last_assistant is not None and "?" in last_assistant.content
            and not _CLOSERS.search(last_assistant.content))



class TooMuchContext(Exception):
    """More context than a resolved question may carry: the turn bypasses the shared caches."""


# Words a question's topic keeps although they are function words: a negation or a comparison
# said in passing changes the answer ("I'm not a member", "more data", "the other order").
_TOPIC_KEEP = {"not", "no", "never", "don't", "dont", "doesn't", "isn't", "can't", "cant", "won't", "didn't",
               "wasn't", "aren't", "haven't", "hasn't", "without", "more", "less", "only", "all", "other", "same",
               "one", "ones", "up", "out", "too", "much", "many", "long", "again", "else", "any", "some", "before",
               "after", "then", "now", "still", "just", "also"}


def _topic_words(text: str) -> list[str]:
    """The words of a turn a rewritten question carries: all but articles, pronouns and the like."""
    return [w for w in _lower_words(text) if len(w) > 1 and (w not in _STOP_EN or w in _TOPIC_KEEP)]


def _with_topic(message: str, topic: str) -> str:
    """The message with the conversation's words; "how long does that take" and "How long does
    that take?" get one key."""
    return f"{message.rstrip(' ?.!')}?{TOPIC_MARK}{topic})"


# Small talk: thanks, praise, apologies, the weather, an interruption. A turn made only of these
# words (and function words) says nothing about the customer's case.
_SOCIAL = {
    "thanks", "thank", "cheers", "ta", "helpful", "help", "helped", "great", "lovely", "brilliant", "perfect", "cool",
    "nice", "awesome", "amazing", "fantastic", "wonderful", "excellent", "appreciate", "appreciated", "kind",
    "sorry", "apologies", "lol", "haha", "hah", "ugh", "wow", "oh", "ah", "hmm", "aww", "yay", "phew", "bye",
    "goodbye", "morning", "afternoon", "evening", "today", "day", "week", "been", "far", "happy", "glad", "hear",
    "weather", "sunny", "rain", "raining", "rainy", "cold", "hot", "warm", "awful", "terrible", "typical", "nightmare",
    "doorbell", "door", "someone's", "someone", "back", "hang", "sec", "second", "moment", "minute", "brb", "wait",
    "cat", "dog", "kids", "keyboard", "walked", "across", "busy", "tired", "crazy", "mad", "funny", "fun",
    "enjoy", "enjoyed", "hope", "weekend", "patience", "problem", "worries", "worry", "bother", "bothering",
    "fine", "good", "well", "welcome", "pleasure", "anytime", "care", "take", "time", "stay", "dry", "safe",
    "was", "were", "where", "yeah", "yep", "ok", "okay", "alright", "sure", "right", "anyway", "really", "always",
    "very", "much", "so", "again", "here", "there", "now", "been", "isn't", "it's", "that's", "you've", "you're",
    "we're", "i'll", "i'd", "let", "feel", "feeling", "lucky", "hello", "hi", "hey", "dear", "mate", "lot",
    "disaster", "lovely", "got", "ages", "forever", "queue", "waiting", "poor", "bad", "shame", "pity",
    "way", "btw", "clears", "cheer", "hehe", "bless", "pleased", "sounds",
    # about the assistant itself: "are you a real person or a bot", "what is your name", "tell me a joke"
    "bot", "robot", "name", "joke", "jokes", "assistant",
    # acknowledgements and fillers (sixth session): "noted", "understood", "ok done", "thx", "hmmm", "oops"
    "noted", "understood", "interesting", "stuff", "star", "done", "helps", "explaining", "distracted", "thx",
    "ty", "np", "hmmm", "umm", "um", "uh", "oops", "ohh", "ahh", "neat", "sweet", "legend", "lifesaver", "having",
    "we'll", "omg", "wanted", "say", "saying", "patient", "relief", "news", "typo", "apologise", "apologize", "ha",
    "kid", "needed", "trying", "try", "earlier", "meant",
}
# ... and the assistant's own fillers ("Of course!", "Sure, go ahead.", "What's your question?"); a
# customer's "go ahead" replies to an offer, so these words are small talk only in the assistant's turns
_SOCIAL_ASSISTANT = {"course", "ahead", "go", "doing", "anything", "else", "shoot", "listening", "ask", "need", "kind",
                     "love", "hearing", "rest", "loyal", "customer", "answer", "as", "cats", "asking", "being"}
# Phrases of chatter whose words alone could be the case's ("let me check", "one more thing", "my phone
# rang", "makes sense", "I see"): taken out before a turn's words are read as small talk or not
_CHATTER_PHRASES = re.compile(
    r"\blet\s+me\s+(?:check|see|think|look)(?:\s+(?:about\s+)?(?:it|that))?\b|\b(?:i'll|i\s+will|i\s+need\s+to)\s+"
    r"think\s+about\s+(?:it|that)\b|\b(?:my\s+)?phone(?:'s|\s+is)?\s+(?:rang|ringing|went\s+off)\b|"
    r"\b(?:one\s+more|another|other)\s+(?:thing|question|quick\s+question)\b|\b(?:hold|hang)\s+on\b|"
    r"\b(?:give\s+me\s+(?:a|one)|just\s+a|one)\s+(?:sec|second|minute|moment|mo)\b|\bmakes\s+sense\b|\bfair\s+enough\b|"
    r"\bgood\s+to\s+know\b|\boh\s+no\b|\blast\s+time\b|\bat\s+work\b|\bon\s+my\s+phone\b|"
    r"\bhow'?s\s+your\s+day(?:\s+going)?\b|\bdo\s+you\s+(?:like|enjoy)\s+your\s+job\b|"
    r"\blove\s+(?:your|the)\s+\w+|\b(?:your|the)\s+(?:website|site|app|shop|store|service)\s+(?:is|looks)\s+"
    r"(?:great|amazing|brilliant|lovely|awesome|good|nice)\b|\b(?:been|am|i'm)\s+a\s+(?:loyal\s+|long-time\s+)?"
    r"customer\s+(?:for|since)\s+\w+|\bthat\s+was\s+(?:fast|quick)\b|\bchecking\s+a\s+few\s+things\b|"
    r"\bbefore\s+i\s+decide\b|\basking\s+for\s+a\s+friend\b|\bi\s+see\b|\bgot\s+it\b|\bgotcha\b|\bi\s+get\s+it\b", re.IGNORECASE)
# A turn without a word ("😊", "!!") says nothing, unless it is a sign that answers ("👍" to "shall I cancel it?")
_ANSWERING_SIGNS = re.compile("[\U0001F44D\U0001F44E\u2705\u274C\u2714\u2716]")
# "are you a real person or a bot?", "is this a human?": small talk about the assistant itself
_ABOUT_ASSISTANT = re.compile(r"^\W*(?:hi|hello|hey)?\W*(?:are|r)\s+(?:you|u)\s+(?:a\s+|an\s+)?(?:real|human|bot|robot|"
                              r"person|machine|ai|computer)\b(?:\s+(?:person|human|being|or\s+(?:a\s+|an\s+)?(?:bot|"
                              r"robot|machine|ai|computer|human|person)))*\W*$", re.IGNORECASE)


def _small_talk(turn: Turn) -> bool:
    """A turn of small talk ("sorry, doorbell, back now", "lovely weather today", "No problem!"):
    only social words, no condition. Its words say nothing about the case, so a conversation with
    it and one without carry the same topic."""
    if turn.role == "user" and _ABOUT_ASSISTANT.match(turn.content):
        return True
    if not _lower_words(turn.content):  # "😊", "!!": nothing said, unless a sign that answers ("👍")
        return bool(turn.content.strip()) and not _ANSWERING_SIGNS.search(turn.content)
    text = _CHATTER_PHRASES.sub(" ", turn.content)
    social = _SOCIAL | _SOCIAL_ASSISTANT if turn.role == "assistant" else _SOCIAL
    words = [w for w in _lower_words(text) if w not in _STOP_EN or w in _TOPIC_KEEP]
    # "typical rainy weekend here": a time word said as small talk is not a detail of the case
    return all(w in social or w in _STOP_EN for w in words) \
        and not [v for v in conditions(text, names=False) if v not in _SOCIAL]


# The assistant's open offer that closes a reply ("Anything else I can help you with?", "Is there anything else I can
# help you with for your trip?", "Kann ich sonst noch etwas für Sie tun?"): the assistant took the turn before as said
# in passing, and asks what the customer needs
_OPEN_OFFER = re.compile(r"(?:\banything\s+else\b|\bwhat\s+else\s+can\s+(?:i|we)\b|\bsonst\s+noch\b|\bnoch\s+etwas\b)"
                         r"[^.!?]*\?\s*$", re.IGNORECASE)
# Details that keep a customer's aside in the case, however the assistant took it: a place, a plan, a name, a weekday
# (and a figure: ``_chatter_exchanges``; "a long one" is no amount)
_ASIDE_KEEPS = {"place", "tier", "name"}
MAX_ASIDE_REPLY_WORDS = 25


def _keeps_aside(text: str) -> bool:
    return any(kind in _ASIDE_KEEPS or value in _DAYS for value, kind in conditions(text).items())


@functools.lru_cache(maxsize=256)  # read by ``resolve``, ``customers_words`` and ``last_reply`` of one Ask
def _chatter_exchanges(history: tuple[Turn, ...]) -> frozenset[int]:
    """The positions of the customer's asides and the assistant's courtesies after them ("lol my dog just ate one of my
    hiking socks" / "Oh no! Hopefully it was an old pair. Anything else I can help you with?"): a customer's turn
    after their first that asks nothing, names no place, plan, amount, weekday or name and has no figure, answered
    by a short reply that states no detail and closes with an open offer. The offer says the assistant took the turn
    as said in passing; the conversation's case is what came before it. Twenty-first session: two blind
    conversations' asides ("dog ate", "no coffee this morning is brutal") were carried in the rewrite's words, and
    the question was handed off as about dogs."""
    users = [i for i, t in enumerate(history) if t.role == "user"]
    out: set[int] = set()
    for i in users[1:]:
        if i + 1 >= len(history) or history[i + 1].role != "assistant":
            continue
        said, reply = history[i].content, history[i + 1].content
        if _small_talk(history[i]):  # "ok thanks" / "Anything else?" closes a topic (``_after_closed_topic``)
            continue
        if _asks(said) or re.search(r"\d", said) or re.search(r"\d", reply):
            continue
        if _keeps_aside(said):
            continue
        offer = _OPEN_OFFER.search(reply)
        rest = reply[:offer.start()] if offer else ""
        if offer is None or len(_lower_words(rest)) > MAX_ASIDE_REPLY_WORDS or _keeps_aside(rest):
            continue
        out |= {i, i + 1}
    return frozenset(out)


def _chatter_reply(turns: tuple[Turn, ...], i: int) -> bool:
    """Whether turn ``i`` is the assistant's reply to the customer's small talk ("ugh, rainy weekend" /
    "Hope it clears up!") that states nothing of the case: small talk too."""
    if turns[i].role != "assistant" or i == 0 or turns[i - 1].role != "user":
        return False
    if _ABOUT_ASSISTANT.match(turns[i - 1].content):
        return True  # "are you a bot?" / "I'm Ask, a virtual assistant ...": about itself, whatever it says
    reply = turns[i].content
    # an amount only as a figure the reply writes ("Sounds like a long one!" says no amount)
    return _small_talk(turns[i - 1]) and not [v for v, k in conditions(reply, names=False).items()
                                              if k != "amount" or v in reply.casefold()]


def _side_turns(turns: tuple[Turn, ...]) -> set[int]:
    """The positions of side exchanges: a question of the customer's that stood on its own where it
    was asked ("sorry, quick one - do you sell gift cards?": self-contained, pointing nowhere,
    continuing nothing before it), and the assistant's answer to it. Not the first question (it
    sets the conversation up) nor the latest (a follow-up may be about it)."""
    asking = [i for i, t in enumerate(turns) if t.role == "user" and not _small_talk(t)
              and _asks(t.content)]
    users = [i for i, t in enumerate(turns) if t.role == "user"]
    side: set[int] = set()
    for i in asking[:-1]:
        if i == users[0]:
            continue
        text = _asked(turns[i].content) or turns[i].content
        if dependence(text).kind or not self_contained(text) or continues(text, turns[:i]):
            continue
        side.add(i)
        if i + 1 < len(turns) and turns[i + 1].role == "assistant":
            side.add(i + 1)
    return side


def _conversation_topic(history: tuple[Turn, ...], message: str, skip: tuple[str, ...] = (),
                        users_only: bool = False) -> str:
    """What the conversation is about: the words of every earlier turn, the customer's and the
    assistant's (``users_only``: the customer's), in order, once each, those of the message itself
    aside. A rewritten question carries them all, so that any detail said in passing ("the heavy
    tent", "the sofa" in the assistant's recap, "I'm not a member") keeps two conversations
    apart; the price is that reworded conversations rarely share. More than
    ``CONVERSATION_TOPIC_WORDS`` is too much to carry: the turn bypasses the shared caches."""
    side = set() if users_only else _side_turns(history)
    out = _topic_stems(history, message, side, skip=skip, users_only=users_only)
    if len(out) > settings.CONVERSATION_TOPIC_WORDS:
        raise TooMuchContext(f"{len(out)} topic words")
    return _canonical_topic(history, message, skip, users_only, side)


def _topic_stems(history: tuple[Turn, ...], message: str, side: set[int], *, skip: tuple[str, ...] = (),
                 users_only: bool = False) -> list[str]:
    """The stems of the earlier turns' topic words (``users_only``: the customer's turns'), in order, once each,
    those of the message aside; small talk, the replies to it and the ``side`` turns left out."""
    have = {_stem(w) for w in _lower_words(message)}
    out: list[str] = []
    for i, turn in enumerate(history):
        if ((users_only and turn.role != "user") or turn.content in skip or _small_talk(turn) or i in side
                or _chatter_reply(history, i)):
            continue
        for w in map(_stem, _topic_words(turn.content)):  # "Sunday" and "Sundays" are one word of the topic
            if w not in have and w not in out:
                out.append(w)
    return out


# Words of a topic that say nothing of the case, whoever says them ("I'd like to…", "Sure,", "of course",
# "sorry to hear that"): a conversation reworded keeps its case, not its courtesies
_TOPIC_FILLER = {"i'd", "i'll", "we'll", "you'll", "sure", "course", "certainly", "absolutely", "fine", "sorry",
                 "hear", "apology", "apologies", "apologise", "apologize", "happy", "glad", "thanks", "thank",
                 "problem", "worries", "alright", "yeah", "great", "lovely", "perfect", "cool", "okay", "ok",
                 "hi", "hello", "hey", "like", "let", "able", "just", "also", "too"}
# One word for what two wordings of a conversation say alike ("ordered" / "bought", "came" / "arrived",
# "ship" / "deliver"), as a topic's stems
_TOPIC_SYNONYMS = {
    "bought": "order", "buy": "order", "purchased": "order", "purchase": "order", "ordered": "order",
    "came": "arrive", "arrived": "arrive", "arriving": "arrive", "damaged": "broken", "broke": "broken",
    "faulty": "broken", "deliver": "delivery", "delivering": "delivery", "delivered": "delivery",
    "ship": "delivery", "shipping": "delivery", "shipped": "delivery", "shipment": "delivery",
    "started": "start", "starting": "start", "cancelled": "cancel", "cancelling": "cancel",
    "cancellation": "cancel", "returned": "return", "returning": "return", "refunded": "refund",
    "postage": "delivery", "switch": "change", "switching": "change", "changing": "change", "changed": "change",
    "upgrading": "upgrade", "upgraded": "upgrade", "booked": "book", "booking": "book",
}
# Words that tie the word after them to a role in the case: "from X" and "to X" are two directions,
# "not X" is X denied ("transfer from savings to current" is not "from current to savings")
_TOPIC_TIES = {"from", "to", "into", "not", "no", "never", "don't", "dont", "doesn't", "isn't", "can't", "cant",
               "won't", "didn't", "wasn't", "aren't", "haven't", "hasn't", "without", "before", "after", "more",
               "less", "other", "than", "until", "except"}
_DIRECTED_TIES = {"from", "to", "into", "before", "after", "more", "less", "other", "than", "until", "except"}


def _canonical_topic(history: tuple[Turn, ...], message: str, skip: tuple[str, ...], users_only: bool,
                     side: set[int]) -> str:
    """The topic a rewritten question carries, in a form two wordings of one conversation share (sixth
    session): the case's words of the same turns as ``_conversation_topic``, courtesies left out
    (``_TOPIC_FILLER``), one word for two that say the same (``_TOPIC_SYNONYMS``), a negation, a direction
    or a comparison tied to the word after it ("not member", "from uk", "before march"), once each, in
    order: "I ordered a lamp and it arrived broken" and "I'd like help, I bought a lamp and it came broken"
    carry one topic. Every word that can change the answer is still there, in its order: sorting would
    make "the blue lamp is late, the red chair broken" the swap of its colours."""
    have = {_canonical_word(w) for w in _lower_words(message)}
    words: list[str] = []  # in order: "the blue lamp is late, the red chair broken" is not "the red lamp ..."
    for i, turn in enumerate(history):
        if ((users_only and turn.role != "user") or turn.content in skip or _small_talk(turn) or i in side
                or _chatter_reply(history, i)):
            continue
        details = {w for value in conditions(turn.content) for w in _lower_words(value)}
        tie = ""
        for w in _lower_words(turn.content):
            if w in _TOPIC_TIES:
                tie = "not" if w not in _DIRECTED_TIES else w
                continue
            if len(w) < 2 or (w in _STOP_EN and w not in _TOPIC_KEEP) or w in _TOPIC_FILLER:
                if w not in ("the", "a", "an", "my", "your", "our"):  # "to the UK" is still tied
                    tie = "" if tie in ("from", "to", "into") else tie
                continue
            word = _canonical_word(w)
            # "from" and "to" tie a place or a name ("to Canada"), not a verb ("want to add") nor a figure,
            # whose order tells ("10am to 4pm", "10am-4pm")
            if tie in ("from", "to", "into") and (w not in details or any(c.isdigit() for c in w)):
                tie = ""
            token = f"{tie}-{word}" if tie else word
            tie = ""
            if (word in have and token == word) or token in words:
                continue
            words.append(token)
    return " ".join(words)


def _canonical_word(word: str) -> str:
    return _TOPIC_SYNONYMS.get(word) or _TOPIC_SYNONYMS.get(_stem(word)) or _stem(word)


def _topic_closed(history: tuple[Turn, ...]) -> bool:
    """Whether the conversation's last exchange closed its topic: the customer's thanks and the
    assistant's reply ("ok thanks" / "You're welcome. Anything else?"). The assistant's "anything
    else?" alone does not: "Done, it ends on 31 May. Anything else?" / "Is there a cancellation fee?"
    is still about the gym; nor does a pause ("hang on, someone's at the door" / "Take your time.")."""
    if not history or history[-1].role != "assistant":
        return False
    return (len(history) >= 2 and history[-2].role == "user" and _small_talk(history[-2])
            and bool(set(_lower_words(history[-2].content)) & _THANKS))


_THANKS = {"thanks", "thank", "cheers", "ta", "appreciate", "appreciated", "brilliant", "perfect", "great", "helpful"}
# Verbs that say what the customer does, not what the question is about ("what should I bring with me?")
_DOING = {"bring", "wear", "expect", "prepare", "arrive", "leave", "stay", "start", "stop", "happen", "happens",
          "come", "take", "know", "tell", "ask", "said", "need", "want", "get", "put", "keep", "call", "wait"}


def _new_subject_after_closed_topic(message: str, history: tuple[Turn, ...]) -> bool:
    """A question with a subject of its own that no earlier turn touched, asked after the topic before it
    was closed ("ok thanks" / "You're welcome. Anything else?" / "Do you have a student discount?"): a
    new question, which means what it means alone. Without the close, "is there an early exit fee?"
    after a broadband deal is about that deal."""
    if not _topic_closed(history):
        return False
    subject = [w for w in _content_sequence(message) if w not in _THING_ATTRIBUTES and w not in _DOING
               and _stem(w) not in {_stem(a) for a in _THING_ATTRIBUTES}]
    if not subject:
        return False
    # a word of the subject said before in any form ("cancellation" after "cancel") ties it to the chat
    said = {w[:5] for t in history for w in _content_sequence(t.content)}
    return not any(w[:5] in said for w in subject)


_SO_FAR = re.compile(r"\b(?:so\s+far|for\s+now|until\s+now)\b", re.IGNORECASE)  # thanks, but not done


def _after_closed_topic(history: tuple[Turn, ...]) -> tuple[Turn, ...] | None:
    """The thread a follow-up belongs to when the customer closed earlier topics (sixth session): the turns
    from the first question after the latest close ("ok thanks for all that" / "You're welcome! Anything
    else?") on, if that question is a fresh start of a new subject (self-contained, pointing nowhere,
    continuing nothing, no word of it said before the close), with the customer's standing facts stated
    before ("I'm on the Basic plan", "I live in Canada": turns that state only conditions) and the replies to
    them. None when there is no such close. A long chat that went through a login problem, a roaming
    charge and a bill date, and then asks "How do I set up a direct debit?" / "…" / "how long does it take to
    start?", asks what the same thread asks alone; a follow-up right after the close ("is it free?" after
    "thanks" / "Anything else?") still reads the topic before it."""
    for c in range(len(history) - 3, -1, -1):
        turn = history[c]
        if not (turn.role == "user" and history[c + 1].role == "assistant" and _small_talk(turn)
                and set(_lower_words(turn.content)) & _THANKS and not _SO_FAR.search(turn.content)):
            continue
        j = next((i for i in range(c + 2, len(history)) if history[i].role == "user" and not _small_talk(history[i])),
                 None)
        if j is None:
            return None
        asked = _asked(history[j].content) or history[j].content
        if dependence(asked).kind or not self_contained(asked) or continues(asked, history[:j]):
            return None
        said = {w[:5] for t in history[:c] for w in _content_sequence(t.content)}
        if any(w[:5] in said for w in _content_sequence(asked)):
            return None
        standing: list[Turn] = []
        for i, t in enumerate(history[:c]):
            if t.role == "user" and conditions(t.content) and _only_conditions(t.content):
                standing.append(t)
                if i + 1 < c and history[i + 1].role == "assistant":
                    standing.append(history[i + 1])
        return (*standing, *history[j:])
    return None


def _topicless(history: tuple[Turn, ...], message: str) -> bool:
    """Whether the conversation before the message is only small talk (greetings, "are you a bot?",
    the weather, the assistant's replies to them): it has no subject a message could rest on, so a
    message that points nowhere means there what it means alone."""
    return not _running(history) and not _conversation_topic(history, message)


def _new_words(text: str, message: str, german: bool) -> str:
    """The content words of ``text`` the message does not already have."""
    have = set(_lower_words(message))
    return " ".join(w for w in _topic(text, german).split() if w not in have)


# A German ellipsis naming a thing of no known kind ("und für die Wanderkarten im Warenkorb?") is read as the previous
# question of it when it is this short; a longer message says more than a detail.
MAX_GERMAN_SLOT_WORDS = 5
# A condition or a question of its own after "und": what the ellipsis says is more than a detail.
_GERMAN_CLAUSE = re.compile(r"^(?:wenn|falls|ob|dass|ich|wir|man|es|sie|er)\b|[,;:]|\b(?:was|wie|wann|wo|welche[rsnm]?|"
                            r"warum|kann|können|ist|sind|gibt)\b", re.IGNORECASE)


def _german_follow_up(conversation: Conversation, locale: str, dep: Dependence, running: dict[str, str]) -> Resolution:
    """A German follow-up is never rewritten for the shared caches (the rules' word lists are English first): it is
    ``unresolved``. But "und Express?" after "Was kostet der Versand nach Deutschland?" is read, by retrieval and the
    answerer, as the previous question with the new detail ("Was kostet der Versand nach Deutschland für Express?")
    when the ellipsis names a detail of a known kind; else as its context question (the message, then the customer's
    earlier messages), which found the Plus article's "free Express on orders over €75" for it."""
    message, history = conversation.message, conversation.history
    unresolved = f"German follow-up ({dep.kind} {dep.word!r}): not rewritten, shared caches bypassed"
    told = _told_antecedent_de(message, history)
    if told and dep.kind == "anaphora":
        # "hab mich 5x vertippt und bin gesperrt, wie lange dauert das?": "das" is what the message tells, not the
        # conversation's last question (the reset link's 30 minutes); read alone, still never keyed
        return Resolution(message, message, How.UNRESOLVED, f"{unresolved}; read alone: its own words tell what it "
                          f"points at ({told})"[:300], history=history)
    if dep.kind == "ellipsis" and not _assistant_asked(next((t for t in reversed(history) if t.role == "assistant"),
                                                            None)):
        previous = _previous_resolution(conversation, locale)
        if previous is not None and previous.cacheable:
            read = _ellipsis(message, previous, running, history, german=True)
            if read.how == How.REWRITTEN:
                return Resolution(message, read.question, How.UNRESOLVED,
                                  f"{unresolved}; read as the previous question with the new detail",
                                  history=history)
    return Resolution(message, _context_question(message, history), How.UNRESOLVED, unresolved, history=history)


# Where a German message's question begins: a question word or a verb first, after a clause's end or a sign ("🙈")
_GERMAN_QUESTION_AT = re.compile(r"(?:[.!?,;:]\s*|\s[^\w\s]+\s*|\s+(?:und|aber)\s+)(?=(?:wie|was|wann|wo|warum|wieso|"
                                 r"kann|muss|geht|gilt|ist|sind|dauert|klappt)\b)", re.IGNORECASE)


def _told_antecedent_de(message: str, history: tuple[Turn, ...]) -> str:
    """The words a German message tells before its question that the conversation has not said, when there are
    ``MIN_TOLD_WORDS`` of them and the question itself names at most one thing ("wie lange dauert das?"): what its
    pointing word points at; else ""."""
    at = [m.end() for m in _GERMAN_QUESTION_AT.finditer(message)]
    if not at:
        return ""
    told, question = message[:at[-1]], message[at[-1]:]
    said = {w for t in history for w in _lower_words(t.content)}
    new = [w for w in _lower_words(told) if len(w) > 3 and w not in _STOP_DE and w not in said and w not in _SOCIAL
           and not any(c.isdigit() for c in w)]
    named = [w for w in _lower_words(question) if w not in NAMING_NOTHING and len(w) > 2]
    return " ".join(new) if len(new) >= MIN_TOLD_WORDS and len(named) <= 1 else ""


_SPEEDS = frozenset({"standard", "expedited", "express", "overnight", "economy", "priority", "next-day", "nextday",
                     "same-day", "sameday", "2-day", "two-day"})


# Ways to pay, by the names customers give them: "and if I'd paid with paypal?" after a Visa refund asks of PayPal alone
_PAYMENTS = frozenset({"visa", "mastercard", "amex", "paypal", "klarna", "affirm", "discover", "maestro", "giropay", "sepa",
                       "überweisung", "kreditkarte", "lastschrift", "sofortüberweisung"})
# Families of details one of which takes the place of another: a delivery speed, a way to pay
_REPLACING = (_SPEEDS, _PAYMENTS)


def _without_replaced(topic: str, message: str) -> str:
    """A follow-up's topic without the details its message names another of ("and if I'd paid with paypal?" after a
    question about a Visa refund: the topic keeps the refund, not Visa)."""
    said = set(_lower_words(message))
    drop = {w for family in _REPLACING if said & family for w in family - said}
    return " ".join(w for w in topic.split() if w not in drop) if drop else topic


def _stands_for(old: str, old_kind: str, new: str, new_kind: str) -> bool:
    """Whether an ellipsis's new detail takes the place of an old one: the same kind, or both delivery speeds ("what
    about overnight?" after "How much is standard shipping?"), whichever kinds the guards read the two words as."""
    return old_kind == new_kind or any(old in family and new in family for family in _REPLACING)


MAX_SHOWN_SLOT_WORDS = 3


def _ellipsis(message: str, previous: Resolution, running: dict[str, str],
              history: tuple[Turn, ...], *, german: bool = False) -> Resolution:
    """"And for Canada?": the previous question, with the new detail in place of the old one of its kind."""
    slot_match = (_ELLIPSIS_SLOT_DE if german else _ELLIPSIS_SLOT).match(message)
    slot = slot_match.group("slot").strip() if slot_match else ""
    found = conditions(slot) if slot else {}
    if slot and any(k == "name" for k in found.values()):
        # a town the customer names is its country ("to my mom in Guadalajara": Mexico), the place the previous
        # question's place stands for (twenty-first session)
        placed = places_as_countries(slot, "de" if german else "en")
        in_place = conditions(placed)
        if any(k == "place" and v not in found for v, k in in_place.items()):
            slot, found = placed, in_place
    if not found and slot.casefold() in _SPEEDS:  # "and expedited?": a delivery speed, whatever the guards read
        found = {slot.casefold(): "speed"}
    paid = [w for w in _lower_words(slot) if w in _PAYMENTS]
    if not found and len(paid) == 1:  # "and if I'd paid with paypal?": a way to pay in place of the one asked of
        found, slot = {paid[0]: "payment"}, paid[0]
    if german:  # a German noun is capitalised: a "name" is any noun ("Rücksendung"), no detail of the case
        found = {v: k for v, k in found.items() if k != "name"}
        if _GERMAN_CLAUSE.search(slot):  # "und wenn ich Express nehme, was kostet das?": a clause, no detail
            found, slot = {}, ""
        if slot and not found and len(_lower_words(slot)) <= MAX_GERMAN_SLOT_WORDS:
            # read only, never keyed: "und für die Wanderkarten?" asks the previous question of the maps
            joiner = slot_match.group("prep") or "für"
            return Resolution(message, f"{_after_new_question(previous.message).rstrip('?.! ')} {joiner} {slot}?",
                              How.REWRITTEN,
                              f"ellipsis on the previous question {previous.question!r}"[:300], history=history)
    if not slot or not found:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "an ellipsis whose new detail is not a place, plan, day, amount or name", history=history)
    base = previous.message
    # the assistant's answer to the previous question is about the old detail ("CA$9.95" before "and
    # for the UK?"): neither its words nor its figures belong to the new question
    at = max((i for i, t in enumerate(history) if t.role == "user" and t.content == base), default=None)
    answer = history[at + 1] if at is not None and at + 1 < len(history) else None
    if answer is not None and answer.role == "assistant":
        running = _running(tuple(t for t in history if t is not answer))
    base_conditions = {v: k for v, k in conditions(base).items() if not german or k != "name"}
    question = base
    replaced_any = False
    for value, kind in found.items():
        # the customer's own spelling, unless the slot says more than the detail ("sending something to my mom in
        # Mexico": "Mexico")
        shown = slot if len(found) == 1 and len(_lower_words(slot)) <= MAX_SHOWN_SLOT_WORDS else value
        same_kind = [v for v, k in base_conditions.items() if _stands_for(v, k, value, kind)]
        for old in same_kind:
            question = re.sub(rf"(?:\bthe\s+)?{re.escape(old)}", shown, question, flags=re.IGNORECASE)
            replaced_any = True
        running = {v: k for v, k in running.items() if not _stands_for(v, k, value, kind) or v == value}
    if not replaced_any:
        joiner = (slot_match.group("prep") or "für") if german else "for"
        question = f"{question.rstrip('?.! ')} {joiner} {slot}?"
    skip = (previous.message, answer.content) if answer is not None and answer.role == "assistant" else (previous.message,)
    rest = _conversation_topic(history, question, skip=skip)
    implied = (_implied_question(answer.content, slot) if answer is not None and answer.role == "assistant"
               and not _asks(base) else None)
    if implied:  # "I'm thinking about upgrading to Pro." / "Pro costs $9 per month ..." / "and Premier?"
        rest = " ".join(filter(None, (_topic(question, False), rest)))
        question = implied
    if rest:
        question = _with_topic(question, rest)
    question, carried = _with_conditions(question, running, conditions(question))
    return Resolution(message, question, How.REWRITTEN,
                      f"ellipsis on the previous question {previous.question!r}"[:300], conditions=carried,
                      history=history)


# What the assistant's answer to a statement told the customer, asked again for an ellipsis's new detail: "I'm
# thinking about upgrading to Pro." / "Pro costs $9 per month ..." / "and Premier?" asks what Premier costs. The
# answer's first sentence must name the kind (its verb) and state a figure of it.
_IMPLIED = ((re.compile(r"\b(?:costs?|priced|prices?|fees?|charges?)\b", re.I), "amount", "How much does {} cost?"),
            (re.compile(r"\b(?:takes?|lasts?|arrives?)\b", re.I), "duration", "How long does it take for {}?"))


def _implied_question(answer: str, slot: str) -> str | None:
    """The question an assistant's answer to a statement answered, for ``slot`` ("How much does Premier cost?"), or
    None when its first sentence names no kind of figure that it states."""
    first = next(iter(sentences_of(answer)), "")
    for pattern, kind, template in _IMPLIED:
        if pattern.search(first) and kind in kinds_in(first):
            return template.format(slot)
    return None


def _anaphora(message: str, dep: Dependence, previous: Resolution, running: dict[str, str],
              history: tuple[Turn, ...]) -> Resolution:
    """"How long does that take?": the message, with what it points at (the previous question's
    topic, what the last answer cited) and the running conditions."""
    topic = _topic(previous.question.split(" (")[0], german=False)
    if not topic:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          f"{dep.word!r} points at a question without a topic", history=history)
    last_assistant = next((t for t in reversed(history) if t.role == "assistant"), None)
    # (the customary "Anything else?" asks nothing: "is it free?" after it is still about the topic)
    if _assistant_asked(last_assistant) and len(_lower_words(message)) <= 4:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "a short reply to the assistant's question", history=history)
    own = conditions(message)
    topic = _without_replaced(_conversation_topic(history, message) or topic, message)
    question, carried = _with_conditions(_with_topic(message, topic), running, own)
    return Resolution(message, question, How.REWRITTEN,
                      f"{dep.word!r} resolved to the previous question {previous.question!r}"[:300],
                      conditions=carried, history=history)


def _checked_model_rewrite(message: str, rewritten: str, running: dict[str, str],
                           history: tuple[Turn, ...]) -> Resolution:
    """The model's rewrite, used for the caches only when it carries every running condition."""
    try:
        text = clean_question(rewritten)
    except AskRejected:
        return Resolution(message, _context_question(message, history), How.UNRESOLVED,
                          "the model's rewrite was not a question", history=history)
    missing = [v for v in running if not _states(text, v)]
    if missing or dependence(text).kind:
        return Resolution(message, f"{text} ({'; '.join(sorted(missing))})" if missing else text, How.UNRESOLVED,
                          f"the model's rewrite leaves out {', '.join(missing)[:120] or 'nothing'} or still points back",
                          history=history)
    return Resolution(message, text, How.MODEL, "rewritten by the model", conditions=tuple(sorted(running)),
                      history=history)


# A noun the message points at with a demonstrative ("how long is that link good for?", "gilt diese Frist auch ...?").
_POINTED_NOUN = re.compile(r"\b(?:that|this|those|these|dieser|diese|dieses|diesen|diesem)\s+(?P<noun>[^\W\d_]{3,})\b",
                           re.IGNORECASE)
_NOT_POINTED = {"one", "ones", "way", "time", "case", "thing", "point", "week", "month", "year", "morning", "evening",
                "mal", "woche", "jahr", "monat", "sache"}


def _pointed_at(message: str, history: tuple[Turn, ...]) -> str:
    """The latest earlier sentence, of either side, that names the thing the message points at ("that link" after
    "Actually wait, I can't remember my password" / "We'll send you a reset link ..."): "" when there is none.
    The customer's earlier messages alone do not say which link; the turn that last named it does."""
    m = _POINTED_NOUN.search(message)
    noun = m.group("noun").casefold() if m else ""
    if not noun or noun in _NOT_POINTED or noun in _STOP_EN or noun in _STOP_DE:
        return ""
    names = re.compile(rf"\b{re.escape(noun)}(?:s|es|e|en|n)?\b", re.IGNORECASE)
    for turn in reversed(history):
        said = next((x for x in reversed(sentences_of(turn.content)) if names.search(x)), None)
        if said:
            return said.strip()
    return ""


def _context_question(message: str, history: tuple[Turn, ...]) -> str:
    """What retrieval and the answerer read for a message that could not be resolved: the message,
    then the customer's earlier messages, newest first, within the question limit."""
    parts = [message]
    budget = settings.ASK_MAX_QUESTION_CHARS - len(message) - 4
    if said := _pointed_at(message, history):  # "that link": the sentence that last named a link
        parts.append(said)
        budget -= len(said) + 3
    for turn in reversed(history):
        if turn.role != "user":
            continue
        # a turn that began a new question ("andere Frage: ...") closed the topics before it, and its own words before
        # the mark ("ok danke, hat geklappt.")
        content = _after_new_question(turn.content)
        marked = content != turn.content
        if len(content) + 3 > budget:
            break
        parts.append(content)
        budget -= len(content) + 3
        if marked:
            break
    return " | ".join(parts)


def customers_words(resolution: Resolution) -> str:
    """A rewrite carrying the conversation's words, with the customer's words only; "" for any other resolution,
    or when the customer said nothing of a topic.

    The rewrite is keyed by every word of the conversation, the assistant's too, so that a detail said in passing
    keeps two conversations apart. But the assistant's turns are the help centre's sentences, and they pull what
    is searched and quoted towards themselves: after "Do you ship to Canada?" and "We deliver to five countries:
    the United States, Canada, the United Kingdom, Germany and Austria.", "How long does that take? (about:
    delivery to-canada acme outfitter five country united state ...)" finds the list of countries, where "How long
    does that take? (about: ship canada)" finds Canada's delivery times. Retrieval and the answerability check
    read both (``pipeline.retrieve``, ``pipeline.check_answerable``); the answerer reads this one, with the
    meaning of both (``pipeline.answer_request``): "that fee" after "a diagnostic fee applies" is the
    assistant's word."""
    question = resolution.question
    if resolution.how != How.REWRITTEN or TOPIC_MARK not in question or not resolution.history:
        return ""
    words = _topic_stems(resolution.history, resolution.message,
                         _side_turns(resolution.history) | _chatter_exchanges(resolution.history), users_only=True)
    return _with_topic(question.split(TOPIC_MARK, 1)[0], " ".join(words)) if words else ""


def last_reply(resolution: Resolution) -> str:
    """The assistant's last turn that says something (not the reply to small talk), or ""."""
    history = resolution.history
    aside = _chatter_exchanges(history)
    last = max((i for i, t in enumerate(history) if t.role == "assistant" and not _small_talk(t)
                and not _chatter_reply(history, i) and i not in aside), default=None)
    return history[last].content if last is not None else ""


def grounded(reply_terms, articles: dict[str, set[str]]) -> bool:
    """Whether an assistant's reply states the help centre's own words: at least ``CONVERSATION_GROUNDED_SHARE`` of
    its search terms (``retrieval.search.query_terms``: stemmed as the help centre's passages are, stop words out)
    are in one of ``articles`` (article id -> the search terms of the passages found for the reply). Evidence that
    the conversation's subject is one the help centre covers ("No. Return shipping is free for Premier members
    ..."), which a hand-off ("Sorry, our help centre doesn't cover ...") is not."""
    return grounded_in(reply_terms, articles) is not None


def grounded_in(reply_terms, articles: dict[str, set[str]]) -> str | None:
    """The article of ``articles`` whose words an assistant's reply states (``grounded``): the one with the most of its
    search terms, when that is at least ``CONVERSATION_GROUNDED_SHARE`` of them; else None."""
    terms = {t for t in reply_terms if len(t) > 2 and not t.isdigit()}
    if len(terms) < 4 or not articles:
        return None
    source = max(articles, key=lambda a: len(terms & articles[a]))
    return source if len(terms & articles[source]) / len(terms) >= settings.CONVERSATION_GROUNDED_SHARE else None


def asked_part(message: str) -> str:
    """The message without its sentences of small talk ("Nice. And if I end up not liking the watch, …?"
    -> "And if I end up not liking the watch, …?"); the message itself if nothing else is left."""
    kept = [s for s in re.split(r"(?<=[.!?])\s+", message.strip()) if not _small_talk(Turn("user", s))]
    return " ".join(kept) if kept else message


WORD_EDGES = ".,;:!?()\"'„“”"  # stripped off a word of a context question before ``drop`` reads it


def without_words(question: str, drop) -> str:
    """A rule rewrite with the words of its topic (``(about: …)``) for which ``drop(word)`` is true left out, and
    its message without small talk (``asked_part``); the conditions stay as they are. An unresolved message's
    context question (``_context_question``: "message | earlier turn | …"): the message without small talk, each
    earlier turn without its small talk and those words."""
    if TOPIC_MARK not in question:
        parts = question.split(" | ")
        if len(parts) < 2:
            return question
        rest = [" ".join(w for w in asked_part(p).split() if not drop(w.strip(WORD_EDGES)))
                for p in parts[1:]]
        return " | ".join([asked_part(parts[0]), *filter(None, rest)])
    head, rest = question.split(TOPIC_MARK, 1)
    head = asked_part(head)
    topic, _, tail = rest.partition(")")
    kept = [w for w in topic.split() if not drop(w)]
    return f"{head}{TOPIC_MARK}{' '.join(kept)}){tail}" if kept else f"{head}{tail}"


def resolved_normalized(resolution: Resolution) -> str:
    """The exact-cache form of a resolved question (``AskState.normalized``). A rule rewrite that carries the
    conversation's topic is keyed by its message's canonical form (``canonical_message``; sixth session): "How
    long does that take? (about: …)" and "how long will it take? (about: …)" share a key, as do "What does it
    cost?" and "How much does it cost?". The question itself (what retrieval, the answerer and staff read) keeps
    the customer's words. A conversation-scoped key ("yes please? (about: …)") keeps its message's words: a
    reply's words are all it has."""
    question = resolution.question
    if (resolution.how == How.REWRITTEN and TOPIC_MARK in question
            and not resolution.detail.startswith(_SCOPED_DETAIL)):
        head, rest = question.split(TOPIC_MARK, 1)
        question = f"{canonical_message(head)}?{TOPIC_MARK}{rest}"
    return normalize_question(question)


_SCOPED_DETAIL = "keyed by the conversation"
# What a question asks, by its first words: "how long", "how much" (what it costs), "when", "can" (may I)...
_ASKED_KIND = re.compile(r"^\W*(?:(?P<wh>how\s+long|how\s+much|how\s+many|how\s+soon|how\s+often|how|what's|whats|what|"
                         r"when|where|which|who|why)\b|(?P<modal>can|could|may|must|should|shall)\b|"
                         r"(?P<aux>do|does|did|will|would|is|are|am|was|were|has|have)\b)", re.IGNORECASE)
_COST_WORDS = {"cost", "price"}
# auxiliaries, pointing words and the like: "how long does that take" and "how long will it take" ask one thing
_MESSAGE_FILLER = {"do", "does", "did", "will", "would", "is", "are", "am", "was", "were", "be", "it", "that", "this",
                   "they", "them", "those", "these", "its", "there", "'s", "the", "a", "an", "to", "of"}


def canonical_message(text: str) -> str:
    """A message's words in the form two wordings of one question share: what it asks (its question word or
    modal; "what does it cost" and "how much is it" both ask "how much"), then its content words, canonical
    (``_canonical_word``) in order, a negation, direction or comparison tied to the word after it. Words that
    change the answer stay ("can" is not "must", "not", "before", "more", "off", and their order: "a UK card
    in the US" is not "a US card in the UK"); the auxiliaries and the pointing words go."""
    lowered = text.casefold().replace("’", "'").strip()
    m = _ASKED_KIND.match(lowered)
    kind = ""
    if m and m.group("wh"):
        kind = re.sub(r"\s+", " ", m.group("wh")).replace("what's", "what").replace("whats", "what")
    elif m and m.group("modal"):
        kind = {"could": "can", "may": "can", "shall": "should"}.get(m.group("modal"), m.group("modal"))
    words: list[str] = []  # in order: "a UK card in the US" is not "a US card in the UK"
    tie = ""
    for w in _lower_words(lowered[m.end():] if m else lowered):
        if w in _TOPIC_TIES:
            tie = "not" if w not in _DIRECTED_TIES else w
            continue
        if w in _MESSAGE_FILLER or (w in _STOP_EN and w not in _TOPIC_KEEP and w not in ("yes", "i", "we", "you")):
            if w not in ("the", "a", "an", "my", "your", "our"):
                tie = "" if tie in ("from", "to", "into") else tie
            continue
        word = _canonical_word(w)
        token = f"{tie}-{word}" if tie else word
        tie = ""
        if token not in words:
            words.append(token)
    if kind in ("what", "how much") and set(words) & _COST_WORDS:  # "what does it cost", "what's the price"
        kind, words = "how much", [w for w in words if w not in _COST_WORDS]
    return " ".join([kind or "?", *words])
