from retrieval.embeddings import embed_query
from retrieval.search import search_chunks
from retrieval.services import active_generation


def test_search_returns_only_the_tenants_chunks(acme, initech):
    gen = active_generation()
    vec = embed_query("How many days do I have to return an item?")
    for tenant in (acme, initech):
        hits = search_chunks(gen, tenant.pk, "en", vec, 4)
        assert len(hits) == 4
        assert {h.article_pk for h in hits} <= set(tenant.articles.values_list("pk", flat=True))
        assert hits == sorted(hits, key=lambda h: -h.similarity)
        assert any("return" in (h.title + h.text).lower() for h in hits)


def test_search_filters_locale_and_still_returns_k(acme):
    gen = active_generation()
    vec = embed_query("Wie lange dauert der Versand?")
    hits = search_chunks(gen, acme.pk, "de", vec, 5)
    assert len(hits) == 5
    de_ids = set(acme.articles.filter(locale="de").values_list("pk", flat=True))
    assert {h.article_pk for h in hits} <= de_ids


def test_search_of_unknown_scope_is_empty(acme):
    assert search_chunks(active_generation(), acme.pk, "fr", embed_query("returns"), 4) == []
