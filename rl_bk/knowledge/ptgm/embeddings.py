"""State embeddings for PTGM: the space goals live in.

PTGM embeds Minecraft frames with MineCLIP (512-d). Our envs are captioned, so the default is
the packaged all-MiniLM-L6-v2 (384-d) on each state's caption ("caption-minilm"). The issue
also allows "a learned encoder" for the no-language case; instead of training one we offer
the raw flat observation, L2-normalised ("observation"): it needs no text and no extra model,
and cosine similarity on it still says which states look alike.

Rows are L2-normalised in both kinds, so a dot product is the cosine similarity that the
codebook assignment uses. A zero row stays zero (it matches every code equally: code 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from rl_bk.knowledge.trajectory import Chunk

EmbeddingKind = Literal["caption-minilm", "observation"]
KINDS: tuple[str, ...] = ("caption-minilm", "observation")


class TextEncoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """float32 copy with unit-length rows; zero rows stay zero (no division by zero)."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.where(norm > 0, norm, 1.0)).astype(np.float32, copy=False)


def state_embeddings(episodes: Sequence[Chunk], kind: EmbeddingKind = "caption-minilm",
                     embedder: TextEncoder | None = None) -> list[np.ndarray]:  # fmt: skip
    """One ``(n+1, D)`` float32 array of unit rows per episode, one row per state.

    ``embedder``: anything with ``encode(texts) -> (len, D)`` (default: the packaged MiniLM,
    loaded only for "caption-minilm"). Each distinct caption is encoded once: datasets repeat
    captions a lot (BabyAI: ~10k distinct among ~30k states).
    """
    if kind == "observation":
        return [normalize_rows(ep.observations) for ep in episodes]
    if kind != "caption-minilm":
        raise ValueError(f"unknown embedding kind {kind!r}; choose one of {KINDS}")
    if embedder is None:
        from rl_bk.labeling.embedding import SentenceEmbedder

        embedder = SentenceEmbedder()
    index: dict[str, int] = {}
    for ep in episodes:
        for caption in ep.captions:
            index.setdefault(caption, len(index))
    texts = list(index)
    vectors = normalize_rows(embedder.encode(texts)) if texts else np.zeros((0, 0), np.float32)
    if len(vectors) != len(texts):
        raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
    return [vectors[[index[c] for c in ep.captions]] for ep in episodes]
