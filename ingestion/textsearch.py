"""Full-text search vectors of chunks, in the language of the chunk's locale.

Every chunk keeps a ``tsvector`` of its heading (weight A) and text (weight B) built with its
locale's PostgreSQL text-search configuration (``german`` for ``de``, ``english`` for ``en``,
``simple`` for a locale without one: no stemming, no stop words, every word still found), and
the name of that configuration. Retrieval (``retrieval.search``) queries with the same
configuration. The vector is written with the chunk (``ingestion.services``) and re-written by
``search_vectors_refresh`` when the locale's configuration changes in the settings.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.search import SearchVector
from django.db.models import Q

from ingestion.models import Chunk


def language_of(locale: str) -> str:
    """A locale's language: "de" of "de-AT" or "de_at"."""
    return locale.split("-")[0].split("_")[0].lower()


def text_search_config(locale: str) -> str:
    """The text-search configuration of a locale: exact (``de-AT``), then its language (``de``), else ``simple``."""
    configs = settings.TEXT_SEARCH_CONFIGS
    return configs.get(locale) or configs.get(language_of(locale)) or "simple"


def search_vector(config: str) -> SearchVector:
    """The expression that builds a chunk's vector: the heading path weighs more than the text."""
    return (SearchVector("heading", config=config, weight="A")
            + SearchVector("text", config=config, weight="B"))


def search_vectors_write(chunks, locale: str) -> int:
    """Write the vectors of these chunks (a queryset of one locale's chunks)."""
    config = text_search_config(locale)
    return chunks.update(search_config=config, search_vector=search_vector(config))


def search_vectors_refresh() -> int:
    """Re-write the vectors of current chunks built with another configuration than their locale's
    now (a changed ``TEXT_SEARCH_CONFIGS``) or not at all; returns how many were written."""
    written = 0
    locales = Chunk.objects.filter(is_current=True).values_list("article__locale", flat=True).distinct()
    for locale in sorted(set(locales)):
        stale = Chunk.objects.filter(is_current=True, article__locale=locale).filter(
            ~Q(search_config=text_search_config(locale)) | Q(search_vector__isnull=True))
        written += search_vectors_write(Chunk.objects.filter(pk__in=stale.values("pk")), locale)
    return written
