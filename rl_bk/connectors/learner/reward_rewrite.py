"""The one learner piece that rewrites rewards before GAE, from reward terms:
``r'_t = extrinsic_coeff * r_t + sum over terms of term_t`` (with no term, a rescaled env
reward: BK's PPO baseline trains on 10 x the env reward). The terms: BK's potential-based
shaping, ELLM's, ONI's and Motif's intrinsic rewards (:mod:`.intrinsic_rewards`) and PTGM's KL
penalty. Where it sits and why: :class:`RewriteRewards`, and
docs/architecture.md#data-flow-from-the-environment-to-ppos-loss. :class:`RewardTermsMixin`
is the config side: every PPO and APPO base config installs the piece through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk, chunks_with_real_steps


class RewardTerm(Protocol):
    def __call__(self, chunks: Sequence[EpisodeChunk], rl_module: Any) -> list[np.ndarray]:
        """The term's addition to each chunk's real steps (``chunk.steps`` values each), for
        every chunk of the batch in batch order (chunks without real steps included)."""
        ...

    def batch_metrics(self) -> dict[str, float]:
        """What to log about the batch just rewritten (empty: nothing)."""
        ...


class RewriteRewards(ConnectorV2):
    """``r' = extrinsic_coeff * r + sum(terms)`` on every real step.

    A learner ConnectorV2 piece on episodes, right after the ``AddOneTsToEpisodesAndTruncate``
    of PPO and APPO and before the batch is built, so GAE (PPO) or V-trace (APPO) sees the
    rewritten rewards (the base configs put it there with :func:`add_reward_rewrite`, for the
    terms a method's ``reward_terms()`` returns: :class:`RewardTermsMixin`). Each
    term is called once per train batch with every episode chunk of the batch (one model pass,
    one label-store lookup, one Serve call per batch; never one per env step) and returns its
    addition to each chunk's real steps. Every term reads the environment's rewards, not
    another term's. The artificial last step PPO appends (reward 0, masked out of the loss) is
    left untouched, and the env runners never see the rewrite: the episode return RLlib
    reports stays the environment's. Each term logs its own metrics
    (:meth:`RewardTerm.batch_metrics`), under the names it always had.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        terms: Sequence[RewardTerm],
        extrinsic_coeff: float = 1.0,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        if not terms and extrinsic_coeff == 1.0:
            raise ValueError(
                "RewriteRewards with no reward term and extrinsic_coeff 1 changes "
                "nothing: give a term or another coefficient"
            )
        self.terms, self.extrinsic_coeff = list(terms), float(extrinsic_coeff)

    def __call__(
        self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
    ):
        found = chunks_with_real_steps(self, episodes, shared_data)
        if not any(c.steps for c in found):
            return batch
        # The view's rewards are a copy: set_rewards below does not change what terms read.
        new = [self.extrinsic_coeff * c.rewards for c in found]
        for term in self.terms:
            added = term(found, rl_module)
            if len(added) != len(found):
                raise ValueError(
                    f"{type(term).__name__} gave {len(added)} arrays for {len(found)} chunks"
                )
            for i, (chunk, values) in enumerate(zip(found, added)):
                values = np.asarray(values, dtype=np.float64).reshape(-1)
                if values.shape != (chunk.steps,):
                    raise ValueError(
                        f"{type(term).__name__} gave {values.shape[0]} values "
                        f"for a chunk of {chunk.steps} steps"
                    )
                new[i] = new[i] + values
        for chunk, rewards in zip(found, new):
            if chunk.steps:
                chunk.set_rewards(rewards)
        if metrics is not None:
            for term in self.terms:
                for key, value in term.batch_metrics().items():
                    metrics.log_value(key, value, window=1)
        return batch


def add_reward_rewrite(pipeline: Any, rewrite: RewriteRewards) -> None:
    """Puts ``rewrite`` right after the artificial-step piece, for PPO and APPO alike: APPO's
    config has already added that piece when the base config's ``build_learner_connector`` runs, so
    the rewrite goes after it; PPO's learner prepends it later (``PPOLearner.build``), so here
    the rewrite goes first and ends up right after it."""
    if any(isinstance(c, AddOneTsToEpisodesAndTruncate) for c in pipeline.connectors):
        pipeline.insert_after(AddOneTsToEpisodesAndTruncate, rewrite)
    else:
        pipeline.prepend(rewrite)


class RewardTermsMixin:
    """``training(extrinsic_coeff=...)`` and the :meth:`reward_terms` hook, for the PPO and
    APPO base configs alike."""

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class)
        self.extrinsic_coeff: float = 1.0

    @override(AlgorithmConfig)
    def training(self, *, extrinsic_coeff: float = NotProvided, **kwargs: Any):
        """
        Args:
            extrinsic_coeff: the env reward's weight in what the policy trains on (1: the
                env's reward as it is; 0: reward-free, the method's terms alone).
        """
        super().training(**kwargs)
        if extrinsic_coeff is not NotProvided:
            self.extrinsic_coeff = float(extrinsic_coeff)
        return self

    @override(AlgorithmConfig)
    def validate(self) -> None:
        super().validate()
        if not self.extrinsic_coeff >= 0:
            self._value_error(f"extrinsic_coeff must be >= 0, got {self.extrinsic_coeff}")

    def reward_terms(self) -> list[RewardTerm]:
        """The method's additions to the env reward (each called once per train batch)."""
        return []

    @override(AlgorithmConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device
        )
        terms = self.reward_terms()
        if terms or self.extrinsic_coeff != 1.0:
            rewrite = RewriteRewards(terms=terms, extrinsic_coeff=self.extrinsic_coeff)
            add_reward_rewrite(pipeline, rewrite)
        return pipeline
