"""Markdown articles with front matter, and chunking by heading and size."""
from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

REQUIRED_KEYS = ("id", "title", "locale", "url")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,199}$")
LOCALE_RE = re.compile(r"^[a-z]{2}(-[A-Z]{2})?$")
MAX_ARTICLE_BYTES = 512 * 1024


class ArticleParseError(ValueError):
    pass


@dataclass(frozen=True)
class ParsedArticle:
    external_id: str
    title: str
    locale: str
    url: str
    body: str
    source_path: str = ""

    @property
    def content_hash(self) -> str:
        return content_hash(self.title, self.url, self.body)


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    # Control characters other than newline and tab have no place in an article.
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cc")


def parse_article(raw: bytes | str, source_path: str = "") -> ParsedArticle:
    if isinstance(raw, bytes):
        if len(raw) > MAX_ARTICLE_BYTES:
            raise ArticleParseError(f"{source_path}: larger than {MAX_ARTICLE_BYTES} bytes")
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArticleParseError(f"{source_path}: not UTF-8 text ({exc.reason})") from None
    text = _clean(raw).lstrip("\ufeff")
    if not text.startswith("---\n"):
        raise ArticleParseError(f"{source_path}: missing front matter (a first line of '---')")
    end = text.find("\n---", 4)
    if end < 0:
        raise ArticleParseError(f"{source_path}: front matter is not closed with '---'")
    meta: dict[str, str] = {}
    for n, line in enumerate(text[4:end].split("\n"), start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ArticleParseError(f"{source_path}: line {n} of the front matter is not 'key: value'")
        meta[key.strip().lower()] = value.strip().strip('"').strip("'")
    missing = [k for k in REQUIRED_KEYS if not meta.get(k)]
    if missing:
        raise ArticleParseError(f"{source_path}: front matter lacks {', '.join(missing)}")
    if not ID_RE.match(meta["id"]):
        raise ArticleParseError(f"{source_path}: id {meta['id']!r} must be lowercase letters, digits, . _ -")
    if not LOCALE_RE.match(meta["locale"]):
        raise ArticleParseError(f"{source_path}: locale {meta['locale']!r} is not like 'en' or 'de'")
    if not re.match(r"^https?://", meta["url"]):
        raise ArticleParseError(f"{source_path}: url must start with http:// or https://")
    body = text[end + 4:].lstrip("-").strip("\n")
    if not body.strip():
        raise ArticleParseError(f"{source_path}: the article has no body")
    return ParsedArticle(meta["id"], meta["title"][:300], meta["locale"], meta["url"][:500], body, source_path)


def parse_file(path: Path) -> ParsedArticle:
    """Parse one article file: a regular file, never a symbolic link (an import folder must not pull in
    files from elsewhere on the host), read no further than ``MAX_ARTICLE_BYTES`` + 1."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if path.is_symlink():
            raise ArticleParseError(f"{path}: a symbolic link, refused (import the file itself)") from None
        raise ArticleParseError(f"{path}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArticleParseError(f"{path}: not a regular file")
        if info.st_size > MAX_ARTICLE_BYTES:
            raise ArticleParseError(f"{path}: larger than {MAX_ARTICLE_BYTES} bytes")
        raw = f.read(MAX_ARTICLE_BYTES + 1)  # the file may have grown since the stat
    return parse_article(raw, str(path))


@dataclass(frozen=True)
class ChunkText:
    heading: str
    text: str

    @property
    def content_hash(self) -> str:
        return content_hash(self.heading, self.text)


def _split_long(text: str, max_chars: int) -> list[str]:
    """Split on paragraphs, then sentences, so a piece stays under max_chars."""
    pieces: list[str] = []
    current = ""
    units = []
    for para in re.split(r"\n\s*\n", text):
        if len(para) <= max_chars:
            units.append(para)
        else:
            units.extend(s for s in re.split(r"(?<=[.!?])\s+", para) if s)
    for unit in units:
        while len(unit) > max_chars:  # one enormous sentence: hard cut
            pieces.append(unit[:max_chars])
            unit = unit[max_chars:]
        if current and len(current) + 2 + len(unit) > max_chars:
            pieces.append(current)
            current = unit
        else:
            current = f"{current}\n\n{unit}" if current else unit
    if current.strip():
        pieces.append(current)
    return [p.strip() for p in pieces if p.strip()]


def chunk_markdown(title: str, body: str, max_chars: int) -> list[ChunkText]:
    """One chunk per heading section; long sections split by paragraph and sentence."""
    sections: list[tuple[str, list[str]]] = [(title, [])]
    for line in body.split("\n"):
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if m:
            heading = m.group(2).strip()
            sections.append((title if m.group(1) == "#" else f"{title} — {heading}", []))
        else:
            sections[-1][1].append(line)
    chunks: list[ChunkText] = []
    for heading, lines in sections:
        text = "\n".join(lines).strip()
        if not text:
            continue
        for piece in _split_long(text, max_chars):
            chunks.append(ChunkText(heading[:300], piece))
    return chunks
