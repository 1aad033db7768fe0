"""Key completeness: every input that shapes an answer is in the exact-cache key, and the key hashes
the very parameters the model receives."""
from __future__ import annotations

import dataclasses
import re
import unicodedata

import pytest
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st

from caching.keys import AnswerSpec
from caching.layers.exact import exact_key
from core.models import Tenant
from generation import prompt
from retrieval import search as retrieval_search
from supportbot import pipeline
from supportbot.questions import normalize_question, spelled_out
from tests.caching.helpers import cached_lookup, decision, offer, scripted_model

# One strategy a field type: a field of a new type fails here until it is covered.
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
VALUES = {
    "str": st.text(max_size=40),
    "int": st.integers(min_value=0, max_value=2**31),
    "dict": st.dictionaries(st.text(max_size=10), st.one_of(json_leaf, st.lists(json_leaf, max_size=3)), max_size=5),
}


def specs() -> st.SearchStrategy[AnswerSpec]:
    return st.builds(AnswerSpec, **{f.name: VALUES[f.type] for f in dataclasses.fields(AnswerSpec)})


@given(spec=specs(), data=st.data())
def test_changing_any_field_of_the_spec_changes_the_key(spec, data):
    key = exact_key(spec)
    for f in dataclasses.fields(AnswerSpec):
        old = getattr(spec, f.name)
        new = data.draw(VALUES[f.type].filter(lambda v, old=old: v != old), label=f.name)
        changed = dataclasses.replace(spec, **{f.name: new})
        assert exact_key(changed) != key, f"changing {f.name} from {old!r} to {new!r} kept the key"


@given(spec=specs())
def test_equal_specs_have_equal_keys(spec):
    copy = AnswerSpec(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(AnswerSpec)})
    assert exact_key(copy) == exact_key(spec)
    assert exact_key(spec).startswith(f"ans:a2:{{t:{spec.tenant_id}}}:")  # the tenant's hash tag


@given(spec=specs())
def test_a_remembered_key_is_the_key_computed_afresh(spec):
    from caching.keys import digest
    from caching.layers.exact import KEY_VERSION

    fresh = f"ans:{KEY_VERSION}:{{t:{spec.tenant_id}}}:{digest(spec.as_dict())}"
    assert exact_key(spec) == fresh and exact_key(spec) == fresh  # the second one from the memo


def test_values_python_calls_equal_but_json_does_not_keep_their_own_keys():
    base = dict(question="q", tenant="t", tenant_id=1, locale="en", answerer="a", model="m", model_revision="r",
                prompt_version="p", tenant_prompt_version="tp", retrieval_version="rv", policy_version=1)
    keys = [exact_key(AnswerSpec(**base, generation_params={"temperature": value}))
            for value in (1, 1.0, True, 0, 0.0, -0.0, False, None, "1", [1], (1,))]
    assert len(set(keys)) == len(keys) - 1  # only [1] and (1,) are the same JSON


@given(words=st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8), min_size=1, max_size=8),
       spaces=st.lists(st.sampled_from([" ", "  ", "\t", "\u00a0", "\n"]), min_size=8, max_size=8),
       tail=st.sampled_from(["", "?", "?!", " ?", "...", "\uff1f", "\u3002"]), upper=st.booleans())
def test_normalisation_folds_case_spacing_width_and_trailing_punctuation(words, spaces, tail, upper):
    plain = " ".join(words)
    noisy = "".join(w + s for w, s in zip(words, spaces)).strip() + tail
    noisy = noisy.upper() if upper else noisy
    assert normalize_question(noisy) == normalize_question(plain) == plain


# whitespace of every kind (controls, separators, no-break and wide spaces), the punctuation dropped at the end
AWKWARD_TEXT = st.text(st.sampled_from(list("ab Z9?!.,;:…。？！\t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u2028\u3000\u200bｱ①")),
                       max_size=16)


@given(text=AWKWARD_TEXT)
def test_normalisation_is_its_regular_expression_definition(text):
    """normalize_question avoids regular expressions on the hit path: it must still say what they say."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    expected = re.sub(r"[\s?!.。？！,;:…]+$", "", re.sub(r"\s+", " ", folded).strip())
    assert normalize_question(text) == expected


# --------------------------------------------------------------------------- the spec the pipeline builds

def spec_for(tenant: Tenant, question: str = "What is your return policy?", locale: str = "en") -> AnswerSpec:
    state = pipeline.start(pipeline.Asker(Tenant.objects.get(pk=tenant.pk), locale), question, streamed=False)
    pipeline.check_eligibility(state)
    assert state.key == exact_key(state.spec)
    return state.spec


# Each change returns the settings override it enabled (or None); the test disables it.
def _edit_tenant(**fields):
    def apply(tenant, monkeypatch):
        Tenant.objects.filter(pk=tenant.pk).update(**fields)
    return apply


def _settings(**values):
    def apply(tenant, monkeypatch):
        override = override_settings(**values)
        override.enable()
        return override
    return apply


CHANGES = {
    "tenant instructions": ("tenant_prompt_version", _edit_tenant(instructions="Always answer in verse.")),
    "tenant few-shot examples": ("tenant_prompt_version", _edit_tenant(few_shot=[{"question": "q", "answer": "a"}])),
    "tenant name": ("tenant_prompt_version", _edit_tenant(name="Acme Outdoor Ltd")),
    "policy version": ("policy_version", _edit_tenant(policy_version=99)),
    "max tokens": ("generation_params", _settings(GENERATION_MAX_TOKENS=77)),
    "temperature": ("generation_params", _settings(GENERATION_TEMPERATURE=0.3)),
    "seed": ("generation_params", _settings(GENERATION_SEED=8)),
    "top k": ("retrieval_version", _settings(RETRIEVAL_TOP_K=7)),
    "min similarity": ("retrieval_version", _settings(RETRIEVAL_MIN_SIMILARITY=0.45)),
    "chunk size": ("retrieval_version", _settings(CHUNK_MAX_CHARS=400)),
    "term coverage": ("retrieval_version", _settings(RETRIEVAL_MIN_TERM_COVERAGE=0.8)),
    "fusion k": ("retrieval_version", _settings(RETRIEVAL_RRF_K=10)),
    "fusion candidates": ("retrieval_version", _settings(RETRIEVAL_CANDIDATES=50)),
    "text-search configs": ("retrieval_version", _settings(TEXT_SEARCH_CONFIGS={"en": "simple"})),
    "compound languages": ("retrieval_version", _settings(TEXT_SEARCH_COMPOUNDS=[])),
    "search method": ("retrieval_version",
                      lambda tenant, mp: mp.setattr(retrieval_search, "RETRIEVAL_VERSION", "hybrid-rrf-0")),
    "prompt templates": ("prompt_version",
                         lambda tenant, mp: mp.setattr(prompt, "PROMPT_VERSION", "0123456789abcdef")),
    "answerer": ("answerer", _settings(ASK_ANSWERER="extractive")),
    "extract budget": ("generation_params", _settings(ASK_ANSWERER="extractive", ASK_EXTRACT_MAX_CHARS=123)),
    "model revision": ("model_revision", _settings(VLLM_BASE_URL="http://127.0.0.1:9", VLLM_MODEL="m",
                                                    VLLM_MODEL_REVISION="rev-b")),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_input_the_pipeline_hashes_changes_the_key_and_hides_older_answers(acme, monkeypatch, settings, change):
    settings.ASK_ANSWERER = "model"  # the generative path's inputs; "answerer" switches to the extractive one
    field, apply = CHANGES[change]
    acme.semantic_mode = Tenant.SemanticMode.OFF  # a hit can only be exact
    acme.save(update_fields=["semantic_mode"])
    question = "What is your return policy?"
    before = spec_for(acme, question)
    assert offer(pipeline.Asker(acme, "en"), question).admitted

    override = apply(acme, monkeypatch)
    try:
        after = spec_for(acme, question)
        state, served = cached_lookup(pipeline.Asker(Tenant.objects.get(pk=acme.pk), "en"), question)
    finally:
        if override is not None:
            override.disable()

    assert getattr(after, field) != getattr(before, field)
    assert exact_key(after) != exact_key(before)
    assert served is None and decision(state, "exact").reason == "no entry"


def test_customers_share_a_key_only_for_general_questions(acme):
    """The customer is not in the key: answers in the shared caches are general by admission."""
    general = [spec_for(acme, "What is your return policy?") for _ in range(2)]
    assert exact_key(general[0]) == exact_key(general[1])
    assert exact_key(spec_for(acme, "What is your return policy?", "de")) != exact_key(general[0])


TRANSPORT = {"model", "messages", "stream", "stream_options", "cache_salt"}


@pytest.mark.parametrize("overrides", [
    {},
    {"GENERATION_MAX_TOKENS": 77},
    {"GENERATION_TEMPERATURE": 0.3},
    {"GENERATION_SEED": 8},
])
def test_the_key_hashes_exactly_the_parameters_the_model_receives(acme, overrides):
    question = "How do I reset my password?"
    with override_settings(**overrides), scripted_model("Use the reset link on the sign-in page [1].") as server:
        spec = spec_for(acme, question)
        result = pipeline.ask(pipeline.Asker(acme, "en"), question)
    assert result.status == "answered" and len(server.requests) == 1
    body = server.requests[0]["body"]
    sent = {k: v for k, v in body.items() if k not in TRANSPORT}
    assert sent == spec.generation_params  # nothing sampled that the key does not hash
    assert body["model"] == spec.model == "scripted-model"
    for name, value in overrides.items():
        param = name.removeprefix("GENERATION_").lower()
        assert sent[param] == value


@pytest.mark.parametrize("typed,written,locale", [
    ("thanks. and how many ppl can I share Premier with?", "thanks. and how many people can I share Premier with?", "en"),
    ("ok submitted it. how long till u guys decide?", "ok submitted it. how long till you guys decide?", "en"),
    ("im stuck, dont know my pw", "I'm stuck, don't know my password", "en"),
    ("zu teuer is, was kostet das?", "zu teuer ist, was kostet das?", "de"),
])
def test_chat_shorthand_is_written_out_before_anything_reads_the_question(typed, written, locale):
    assert spelled_out(typed, locale) == written


@pytest.mark.parametrize("text,locale", [
    ("U-lock for a U.S. order, mail u@example.com", "en"),  # parts of longer tokens
    ("I feel ill, is the store open?", "en"),  # "ill" and "is" are English words
    ("Ist das Paket ne Woche unterwegs?", "de"),  # German "ne" is a word ("nee") too
    ("I'm moving from Seattle to Vancouver BC next week", "en"),  # two capitals: a province's code, not "because"
])
def test_words_that_are_not_only_shorthand_stay(text, locale):
    assert spelled_out(text, locale) == text


def test_a_shorthand_question_and_its_written_out_twin_share_the_exact_key(acme):
    from supportbot.conversation import Conversation
    typed = pipeline.start(pipeline.Asker(acme, "en"), "how many ppl can share plus?", streamed=False)
    plain = pipeline.start(pipeline.Asker(acme, "en"), "how many people can share plus?", streamed=False)
    assert typed.normalized == plain.normalized
    assert Conversation.single("how many ppl").spelled_out("de").message == "how many ppl"  # English shorthand only
