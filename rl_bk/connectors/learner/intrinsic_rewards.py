"""Intrinsic rewards added to a train batch's rewards, once per batch: the reward term
(:class:`IntrinsicReward`) through which ELLM, ONI and Motif put ``r'_t = extrinsic_coeff *
r_t + intrinsic_t`` in the learner's
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece, before GAE, with one
``reward_fn`` call per batch, never one per env step. Details:
docs/methods.md#online-labelling-ellm-and-oni.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk

INTRINSIC_REWARD_MEAN = "intrinsic_reward_mean"
INTRINSIC_RETURN_MEAN = "intrinsic_return_mean"


class IntrinsicRewardFn(Protocol):
    def __call__(self, pieces: Sequence[EpisodeChunk], rl_module: Any) -> list[np.ndarray]:
        """The weighted intrinsic reward of each piece's real steps (``len(piece)`` each)."""
        ...

    def metrics(self) -> dict[str, float]: ...


class IntrinsicReward:
    """A method's intrinsic reward as a
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewardTerm` of
    :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`: ``reward_fn`` sees the
    batch's chunks (:class:`~rl_bk.connectors.learner.episode_chunks.EpisodeChunk`), once
    per batch (one model pass, one label-store lookup, one embedding call per batch).

    ``reward_fn`` returns the intrinsic term already weighted (ONI's ``llm_coeff * r_int *
    N^-beta``, ELLM's goal-match reward), so methods keep their own formulas. It gets the
    learner's RLModule too, so an online reward model that lives in it as a learner-only
    module (ONI's classifier and ranking model) scores with the weights the learner trains.
    The term logs ``intrinsic_reward_mean`` (per step) and ``intrinsic_return_mean`` (per
    chunk) beside the environment's return, plus the source's own counters under
    ``intrinsic/``.
    """

    def __init__(self, reward_fn: IntrinsicRewardFn):
        self.reward_fn = reward_fn
        self._metrics: dict[str, float] = {}

    def __call__(self, found: Sequence[EpisodeChunk], rl_module: Any) -> list[np.ndarray]:
        pieces = list(found)
        bonuses = [
            np.asarray(b, dtype=np.float64).reshape(-1) for b in self.reward_fn(pieces, rl_module)
        ]
        if len(bonuses) != len(pieces):
            raise ValueError(
                f"the intrinsic reward function gave {len(bonuses)} arrays for {len(pieces)} chunks"
            )
        total, steps = 0.0, 0
        for piece, bonus in zip(pieces, bonuses):
            if len(piece) == 0:
                continue
            if bonus.shape != (len(piece),):
                raise ValueError(
                    f"the intrinsic reward function gave {bonus.shape[0]} values "
                    f"for a chunk of {len(piece)} steps"
                )
            total += float(bonus.sum())
            steps += len(piece)
        self._metrics = {}
        if steps:
            self._metrics = {
                INTRINSIC_REWARD_MEAN: total / steps,
                INTRINSIC_RETURN_MEAN: total / len(pieces),
            }
            self._metrics.update({f"intrinsic/{k}": v for k, v in self.reward_fn.metrics().items()})
        return [b if len(p) else np.zeros(0) for p, b in zip(pieces, bonuses)]

    def batch_metrics(self) -> dict[str, float]:
        return self._metrics
