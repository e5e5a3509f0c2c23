"""Intrinsic rewards added to a train batch's rewards, once per batch: a reward term of the
learner's :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece (after PPO's
``AddOneTsToEpisodesAndTruncate``, before GAE). It hands every episode chunk of the
batch to one ``reward_fn`` call (one model pass, one label-store lookup, one embedding call
per batch; never one per env step) and rewrites each real step's reward:

    r'_t = extrinsic_coeff * r_t + intrinsic_t

``reward_fn`` returns the intrinsic term already weighted (ONI's ``llm_coeff * r_int *
N^-beta``, ELLM's goal-match reward), so methods keep their own formulas. The artificial last
step PPO appends (reward 0, masked out of the loss) is left untouched. The env runners never
see the rewrite: the episode return RLlib reports stays the environment's, and this term logs
``intrinsic_reward_mean`` (per step) and ``intrinsic_return_mean`` (per chunk) beside it,
plus the source's own counters under ``intrinsic/``.

The reward function gets the learner's RLModule too, so an online reward model that lives in
it as a learner-only module (ONI's classifier and ranking model) scores with the weights the
learner trains.
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
    per batch."""

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
