"""PTGM's goal codebook: a few real dataset states whose embeddings are the high-level actions.
As PTGM (``goal_prior/generate_codebook.py``), k-means++ over the states' embeddings, each goal
the real sample nearest its cluster's centre, so every goal is a state the low-level policy
has been trained to reach; unlike PTGM, no t-SNE before it and no action sums in the features,
and identical vectors clustered once, weighted. Why:
docs/methods.md#ptgms-pre-training-and-its-kl.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rl_bk.methods.ptgm.pretraining.embeddings import normalize_rows


@dataclass
class Codebook:
    """``vectors`` (N, D) unit rows: the goals; ``sample_index`` (N,): each goal's row in the
    stacked embeddings it was built from; ``captions``: those samples' captions ("" when none
    were given); ``counts`` (N,): how many of those embeddings :func:`assign` maps to each
    goal; ``n_requested``: the ``n_goals`` asked for (N may be smaller: two clusters that pick
    the same vector pick the same sample, and such duplicates are dropped)."""

    vectors: np.ndarray
    sample_index: np.ndarray
    captions: list[str]
    counts: np.ndarray
    n_requested: int = 0

    def __post_init__(self) -> None:
        self.vectors = np.asarray(self.vectors, dtype=np.float32)
        self.sample_index = np.asarray(self.sample_index, dtype=np.int64).reshape(-1)
        self.counts = np.asarray(self.counts, dtype=np.int64).reshape(-1)
        self.captions = [str(c) for c in self.captions]
        n = len(self.vectors)
        if not (len(self.sample_index) == len(self.captions) == len(self.counts) == n):
            raise ValueError("codebook fields disagree on the number of goals")

    def __len__(self) -> int:
        return len(self.vectors)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def save(self, path: str) -> None:
        np.savez(
            path,
            vectors=self.vectors,
            sample_index=self.sample_index,
            counts=self.counts,
            captions=np.asarray(self.captions, dtype=str),
            n_requested=np.int64(self.n_requested),
        )

    @classmethod
    def load(cls, path: str) -> Codebook:
        with np.load(path, allow_pickle=False) as f:
            return cls(
                vectors=f["vectors"],
                sample_index=f["sample_index"],
                captions=f["captions"].tolist(),
                counts=f["counts"],
                n_requested=int(f["n_requested"]),
            )


def assign(codebook: Codebook, embeddings: np.ndarray) -> np.ndarray:
    """``(B,)`` int64: the goal of highest cosine similarity to each row (PTGM's
    ``goal_prior/dataset.py`` label). Codes are unit vectors, so the dot product's argmax is
    the cosine argmax whatever the rows' lengths; ties go to the lower index."""
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or embeddings.shape[1] != codebook.dim:
        raise ValueError(f"expected (B, {codebook.dim}) embeddings, got {embeddings.shape}")
    return np.argmax(embeddings @ codebook.vectors.T, axis=1).astype(np.int64)


def build_codebook(
    embeddings: np.ndarray,
    n_goals: int,
    seed: int = 0,
    captions: Sequence[str] | None = None,
    max_samples: int | None = None,
) -> Codebook:
    """KMeans (k-means++) over ``embeddings`` (M, D); each goal is the real sample nearest its
    cluster centre. ``max_samples``: cluster a uniform random subset of that many rows (PTGM
    also clusters a subsample); counts are still over all M rows."""
    # kept light: PTGM's trials load this package for its models; only a build needs sklearn
    from sklearn.cluster import KMeans

    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or len(embeddings) == 0:
        raise ValueError(f"need a non-empty (M, D) array of embeddings, got {embeddings.shape}")
    if n_goals < 1:
        raise ValueError(f"n_goals must be >= 1, got {n_goals}")
    if captions is not None and len(captions) != len(embeddings):
        raise ValueError(f"{len(captions)} captions for {len(embeddings)} embeddings")
    rng = np.random.default_rng(seed)
    rows = np.arange(len(embeddings))
    if max_samples is not None and len(rows) > max_samples:
        rows = np.sort(rng.choice(len(rows), size=max_samples, replace=False))
    unique, first, weight = np.unique(
        embeddings[rows], axis=0, return_index=True, return_counts=True
    )
    k = min(n_goals, len(unique))
    km = KMeans(n_clusters=k, init="k-means++", n_init=3, random_state=seed)
    km.fit(unique, sample_weight=weight.astype(np.float64))
    centres = km.cluster_centers_.astype(np.float32)
    # Nearest real sample to each centre (Euclidean, as KMeans measures), as PTGM's centers.pkl.
    d2 = (unique**2).sum(1)[None, :] - 2.0 * centres @ unique.T
    nearest = np.argmin(d2, axis=1)
    _, keep = np.unique(nearest, return_index=True)
    nearest = nearest[np.sort(keep)]  # first cluster to pick a sample keeps it
    sample_index = rows[first[nearest]]
    vectors = normalize_rows(embeddings[sample_index])
    caps = [captions[i] for i in sample_index] if captions is not None else [""] * len(nearest)
    book = Codebook(vectors, sample_index, caps, np.zeros(len(nearest), np.int64), n_goals)
    book.counts = np.bincount(assign(book, embeddings), minlength=len(book)).astype(np.int64)
    return book
