"""The embedding model: questions take a short path that must give the model's own vectors."""
import numpy as np
import pytest

from retrieval.embeddings import get_embedder

TEXTS = ["How do I reset my password?", "Wie kann ich mein Passwort zurücksetzen, wenn die E-Mail fehlt?", "a",
         "Can I return an opened item bought on sale for more than $500 after 30 days, or not?"]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_the_short_path_for_questions_gives_the_models_vectors(n):
    embedder = get_embedder()
    assert embedder._plain_mean_pooling()  # all-MiniLM-L6-v2: transformer, mean pooling, normalisation
    texts = TEXTS[:n]
    expected = embedder.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    got = embedder.encode(texts)  # takes the short path (at most 4 texts)
    assert got.dtype == np.float32 and got.shape == (n, embedder.dimensions)
    assert np.allclose(got, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
