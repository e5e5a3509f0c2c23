"""State embeddings for PTGM: the space goals live in. PTGM embeds Minecraft frames with
MineCLIP; rl-bk's envs are captioned, so the default is the packaged all-MiniLM-L6-v2 on each
state's caption ("caption-minilm"); without language, a learned autoencoder code ("learned")
or the raw flat observation ("observation"). Rows are L2-normalised, so a dot product is the
cosine similarity the codebook assignment uses; a zero row stays zero (code 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np
import torch
from torch import nn

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.labeling.embedding import SentenceEmbedder

EmbeddingKind = Literal["caption-minilm", "learned", "observation"]
KINDS: tuple[str, ...] = ("caption-minilm", "learned", "observation")


class TextEncoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """float32 copy with unit-length rows; zero rows stay zero (no division by zero)."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.where(norm > 0, norm, 1.0)).astype(np.float32, copy=False)


def state_embeddings(
    episodes: Sequence[Chunk],
    kind: EmbeddingKind = "caption-minilm",
    embedder: TextEncoder | None = None,
) -> list[np.ndarray]:
    """One ``(n+1, D)`` float32 array of unit rows per episode, one row per state.

    ``embedder``: anything with ``encode(texts) -> (len, D)`` (default: the packaged MiniLM,
    loaded only for "caption-minilm"). Each distinct caption is encoded once: datasets repeat
    captions a lot (BabyAI: ~10k distinct among ~30k states).
    """
    if kind == "observation":
        return [normalize_rows(ep.observations) for ep in episodes]
    if kind == "learned":
        return learned_embeddings(episodes)
    if kind != "caption-minilm":
        raise ValueError(f"unknown embedding kind {kind!r}; choose one of {KINDS}")
    if embedder is None:
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


def learned_embeddings(
    episodes: Sequence[Chunk], dim: int = 32, epochs: int = 30, seed: int = 0
) -> list[np.ndarray]:
    """Unit-row codes of an autoencoder fitted to the dataset's observations.

    An MLP (obs → 256 → ``dim`` → 256 → obs) trained to reconstruct standardised
    observations (MSE, Adam, minibatches of 256); a state's embedding is its ``dim``-d code.
    The codebook and the low-level policy's goals then live in a space where nearby codes
    reconstruct to similar observations, with no text involved. Deterministic for a seed.
    """
    obs = np.concatenate([np.asarray(ep.observations, np.float32) for ep in episodes])
    mean, std = obs.mean(0), obs.std(0) + 1e-6
    x = torch.from_numpy((obs - mean) / std)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = nn.Sequential(nn.Linear(x.shape[1], 256), nn.ReLU(), nn.Linear(256, dim))
        decoder = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, x.shape[1]))
    params = [*encoder.parameters(), *decoder.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for idx in np.array_split(rng.permutation(len(x)), max(1, len(x) // 256)):
            batch = x[torch.from_numpy(idx)]
            loss = nn.functional.mse_loss(decoder(encoder(batch)), batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        codes = normalize_rows(encoder(x).numpy())
    bounds = np.cumsum([len(ep.observations) for ep in episodes])[:-1]
    return list(np.split(codes, bounds))
