"""PTGM's whole pre-training on a trajectory dataset, saved for RL (:func:`build_ptgm`): embed
every state, cluster the embeddings into the goal codebook, behaviour-clone the
goal-conditioned low-level policy with hindsight goals, train the goal prior on the codes of
future states, and save all three (:meth:`PTGMModels.save`) with the report in ``ptgm.json``.
Both networks hold out the same episodes. Deterministic for a seed on one machine with a fixed
torch thread count. Details: docs/methods.md#ptgms-pre-training-and-its-kl.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rl_bk.knowledge.trajectory import Chunk
from rl_bk.methods.ptgm.pretraining.codebook import build_codebook
from rl_bk.methods.ptgm.pretraining.embeddings import (
    EmbeddingKind,
    TextEncoder,
    state_embeddings,
)
from rl_bk.methods.ptgm.pretraining.low_level import train_low_level
from rl_bk.methods.ptgm.pretraining.models import PTGMModels
from rl_bk.methods.ptgm.pretraining.prior import train_prior

logger = logging.getLogger(__name__)


def build_ptgm(
    episodes: Sequence[Chunk],
    folder: str | Path,
    *,
    n_goals: int = 16,
    embedding: EmbeddingKind = "caption-minilm",
    low_level_gap: tuple[int, int] = (1, 8),
    prior_gap: tuple[int, int] = (1, 8),
    epochs: int = 20,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
    max_codebook_samples: int | None = 20000,
    hidden: Sequence[int] = (256, 256),
    holdout: float = 0.1,
    n_actions: int | None = None,
    prior_epochs: int | None = None,
    prior_sees_code: bool = False,
    embedder: TextEncoder | None = None,
) -> dict[str, Any]:
    """Runs PTGM's pre-training on ``episodes`` and saves the models in ``folder``; returns
    the report (also in ``folder/ptgm.json``). ``n_actions``: the env's action count (default:
    the largest action in the data + 1); ``prior_epochs``: the prior's epochs when they
    should differ from the low level's (the prior overfits sooner: on 200 BabyAI episodes its
    held-out NLL is best after 1-4 epochs and at 20 is no better than the label frequencies);
    ``prior_sees_code``: the prior also reads a prediction of the current state's code
    (:class:`~rl_bk.methods.ptgm.pretraining.prior.GoalPrior`); ``embedder``: a text encoder
    for
    "caption-minilm" (default: the packaged MiniLM)."""
    episodes = [ep for ep in episodes if len(ep) > 0]
    if not episodes:
        raise ValueError("PTGM needs episodes with at least one step")
    started = time.perf_counter()
    seconds: dict[str, float] = {}

    t = time.perf_counter()
    embeddings = state_embeddings(episodes, embedding, embedder)
    seconds["embedding"] = time.perf_counter() - t

    t = time.perf_counter()
    stacked = np.concatenate(embeddings)
    captions = [c for ep in episodes for c in ep.captions]
    codebook = build_codebook(stacked, n_goals, seed, captions, max_codebook_samples)
    seconds["codebook"] = time.perf_counter() - t
    logger.info("PTGM codebook: %d of %d goals kept", len(codebook), n_goals)

    common = {
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "hidden": hidden,
        "holdout": holdout,
        "seed": seed,
    }
    t = time.perf_counter()
    low_level, low_report = train_low_level(
        episodes,
        embeddings,
        n_actions=n_actions,
        min_gap=low_level_gap[0],
        max_gap=low_level_gap[1],
        **common,
    )
    seconds["low_level"] = time.perf_counter() - t

    t = time.perf_counter()
    common["epochs"] = epochs if prior_epochs is None else prior_epochs
    prior, prior_report = train_prior(
        episodes,
        embeddings,
        codebook,
        min_gap=prior_gap[0],
        max_gap=prior_gap[1],
        sees_code=prior_sees_code,
        **common,
    )
    seconds["prior"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - started

    report: dict[str, Any] = {
        "settings": {
            "n_goals": n_goals,
            "embedding": embedding,
            "low_level_gap": list(low_level_gap),
            "prior_gap": list(prior_gap),
            "epochs": epochs,
            "batch_size": batch_size,
            "lr": lr,
            "seed": seed,
            "max_codebook_samples": max_codebook_samples,
            "hidden": list(hidden),
            "holdout": holdout,
            "n_actions": n_actions,
            "prior_epochs": prior_epochs,
            "prior_sees_code": prior_sees_code,
        },
        "n_goals_requested": n_goals,
        "n_goals": len(codebook),
        "goal_captions": codebook.captions,
        "goal_counts": codebook.counts.tolist(),
        "low_level": low_report,
        "prior": prior_report,
        "sizes": {
            "episodes": len(episodes),
            "states": len(stacked),
            "steps": int(sum(len(ep) for ep in episodes)),
            "distinct_captions": len(set(captions)),
            "obs_dim": low_level.config["obs_dim"],
            "goal_dim": codebook.dim,
            "n_actions": low_level.config["n_actions"],
        },
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }
    PTGMModels(codebook, low_level, prior, report).save(folder)
    return report
