"""The cache layers of the Ask path, constructed here and nowhere else.

Four layers share one interface (``core.cachelayer.CacheLayer``: ``lookup``, ``store``,
``purge_article``, ``purge_scope``, ``stats``):

- ``exact_layer``: answers in Redis by the hash of the complete answer spec (``exact``);
- ``semantic_layer``: verified answers in pgvector, served to questions meaning the same (``semantic``);
- ``search_layer``: search results in Redis (``search``);
- ``embedding_layer``: query and passage vectors in Redis, in ``retrieval`` (which may not import
  caching) and registered here.

The pipeline, purges, review, retention, evaluation and the benches use these instances.
"""
from caching.layers.exact import ExactLayer
from caching.layers.search import SearchLayer
from caching.layers.semantic import SemanticLayer
from retrieval.embeddings import embedding_cache

exact_layer = ExactLayer()
semantic_layer = SemanticLayer()
search_layer = SearchLayer()
embedding_layer = embedding_cache

LAYERS = (exact_layer, semantic_layer, search_layer, embedding_layer)
