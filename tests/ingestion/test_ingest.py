import pytest

from ingestion.models import Article, ArticleVersion, Chunk
from ingestion.parsing import ArticleParseError, chunk_markdown, parse_article
from ingestion.services import ingest_directory
from retrieval.models import ChunkEmbedding
from retrieval.services import index_sync
from tests import factories

ARTICLE = """---
id: returns
title: Returns
locale: en
url: https://help.example/returns
---
# Returns

You can return items within 30 days.

## Opened items
Opened earphones cannot be returned for hygiene reasons.
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_parse_article_reads_front_matter_and_body():
    a = parse_article(ARTICLE.encode())
    assert (a.external_id, a.title, a.locale, a.url) == ("returns", "Returns", "en", "https://help.example/returns")
    assert "30 days" in a.body


@pytest.mark.parametrize("raw, message", [
    (b"no front matter", "missing front matter"),
    (b"---\nid: x\ntitle: t\nlocale: en\n", "not closed"),
    (b"---\nid: x\ntitle: t\nlocale: en\n---\nbody", "lacks url"),
    (b"---\nid: X Y\ntitle: t\nlocale: en\nurl: https://a.b/c\n---\nbody", "must be lowercase"),
    (b"---\nid: x\ntitle: t\nlocale: english\nurl: https://a.b/c\n---\nbody", "locale"),
    (b"---\nid: x\ntitle: t\nlocale: en\nurl: javascript:alert(1)\n---\nbody", "url must start"),
    (b"---\nid: x\ntitle: t\nlocale: en\nurl: https://a.b/c\n---\n   \n", "no body"),
    (b"\xff\xfe\x00binary", "not UTF-8"),
])
def test_parse_article_rejects_bad_files(raw, message):
    with pytest.raises(ArticleParseError, match=message):
        parse_article(raw, "f.md")


def test_chunking_splits_by_heading_and_size():
    body = "# T\nintro\n\n## A\n" + ("word " * 400) + "\n\n## B\nshort"
    chunks = chunk_markdown("T", body, 300)
    assert chunks[0].text == "intro"
    assert all(len(c.text) <= 300 for c in chunks)
    assert [c.heading for c in chunks].count("T — A") > 1
    assert chunks[-1].heading == "T — B" and chunks[-1].text == "short"


def test_ingest_is_idempotent_and_detects_changes(db, tmp_path):
    t = factories.tenant("shop")
    write(tmp_path, "returns.md", ARTICLE)
    write(tmp_path, "shipping.md", ARTICLE.replace("id: returns", "id: shipping").replace("30 days", "5 days"))
    first = ingest_directory(tmp_path, t)
    assert sorted(first.created) == ["en/returns", "en/shipping"]
    again = ingest_directory(tmp_path, t)
    assert again.created == again.updated == [] and sorted(again.unchanged) == ["en/returns", "en/shipping"]
    assert ArticleVersion.objects.filter(article__tenant=t).count() == 2

    write(tmp_path, "returns.md", ARTICLE.replace("30 days", "45 days"))
    (tmp_path / "shipping.md").unlink()
    changed = ingest_directory(tmp_path, t)
    assert changed.updated == ["en/returns"] and changed.retired == ["en/shipping"]
    returns = Article.objects.get(tenant=t, external_id="returns")
    assert returns.version == 2
    current = Chunk.objects.filter(article=returns, is_current=True)
    assert current and all(c.article_version.version == 2 for c in current)
    assert any("45 days" in c.text for c in current)
    assert not Chunk.objects.filter(article__external_id="shipping", article__tenant=t, is_current=True).exists()
    assert Article.objects.get(tenant=t, external_id="shipping").status == Article.Status.RETIRED


def test_broken_file_changes_nothing_and_retires_nothing(db, tmp_path):
    t = factories.tenant("shop")
    write(tmp_path, "returns.md", ARTICLE)
    ingest_directory(tmp_path, t)
    (tmp_path / "returns.md").unlink()
    write(tmp_path, "broken.md", "---\nid: broken\n")
    report = ingest_directory(tmp_path, t)
    assert report.errors and report.retired == []
    assert Article.objects.get(tenant=t, external_id="returns").status == Article.Status.ACTIVE


def test_unknown_locale_is_reported(db, tmp_path):
    t = factories.tenant("shop", locales=("en",))
    write(tmp_path, "r.md", ARTICLE.replace("locale: en", "locale: fr"))
    report = ingest_directory(tmp_path, t)
    assert report.errors and "not one of" in report.errors[0]
    assert not Article.objects.filter(tenant=t).exists()


def test_index_sync_embeds_only_changed_chunks(db, tmp_path):
    t = factories.tenant("shop")
    write(tmp_path, "returns.md", ARTICLE)
    ingest_directory(tmp_path, t)
    first = index_sync(tenant_id=t.pk)
    assert first.changed == Chunk.objects.filter(article__tenant=t, is_current=True).count() > 0
    assert index_sync(tenant_id=t.pk).changed == 0
    write(tmp_path, "returns.md", ARTICLE.replace("30 days", "60 days"))
    ingest_directory(tmp_path, t)
    third = index_sync(tenant_id=t.pk)
    assert third.removed == first.changed  # the old version's vectors went
    assert third.changed == first.changed
    vectors = ChunkEmbedding.objects.filter(tenant=t)
    assert vectors.count() == first.changed
    assert all(v.chunk.is_current for v in vectors)
    # the unchanged section ("Opened items") came from the embedding cache, not the model
    assert third.cache_hits >= 1 and third.embedded < third.changed


def test_an_article_deleted_while_its_chunks_are_embedded_is_skipped(transactional_db, tmp_path, monkeypatch):
    """Another process deletes an article (a tenant erased) between reading its chunks and storing their vectors: the
    sync stores the others and does not fail (it raised an IntegrityError at commit)."""
    from retrieval import services

    t = factories.tenant("shop")
    write(tmp_path, "returns.md", ARTICLE)
    write(tmp_path, "other.md", ARTICLE.replace("id: returns", "id: other").replace("/returns", "/other"))
    ingest_directory(tmp_path, t)
    real = services.embed_texts

    def deleting(texts, **kwargs):
        Article.objects.filter(tenant=t, external_id="returns").delete()
        return real(texts, **kwargs)

    monkeypatch.setattr(services, "embed_texts", deleting)
    index_sync(tenant_id=t.pk)
    stored = set(ChunkEmbedding.objects.filter(tenant=t).values_list("article__external_id", flat=True))
    assert stored == {"other"}


def test_a_symlinked_file_is_refused_and_changes_nothing(db, tmp_path):
    """Issue 29 (second security review): an import folder must not pull in a file from elsewhere."""
    t = factories.tenant("shop")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = write(outside, "secret.md", ARTICLE.replace("id: returns", "id: secret"))
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "linked.md").symlink_to(secret)
    report = ingest_directory(kb, t)
    assert report.errors and "symbolic link" in report.errors[0]
    assert not Article.objects.filter(tenant=t).exists()


def test_an_oversized_file_is_refused_without_reading_it_whole(db, tmp_path, monkeypatch):
    from pathlib import Path

    from ingestion.parsing import MAX_ARTICLE_BYTES

    t = factories.tenant("shop")
    big = tmp_path / "big.md"
    with open(big, "wb") as f:
        f.truncate(MAX_ARTICLE_BYTES * 64)  # sparse: large on paper, nothing on disk

    def whole(self):
        raise AssertionError("read the whole file before the size check")

    monkeypatch.setattr(Path, "read_bytes", whole)
    report = ingest_directory(tmp_path, t)
    assert report.errors and "larger than" in report.errors[0]
