"""What every rl-bk method trains on: the env reward times the task's ``ppo.extrinsic_coeff``
(shared by every method of a task, so that a comparison's rows differ by the method alone),
plus the terms the method's :meth:`RewardTermsMixin.reward_terms` adds, in one
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece (none when there is
nothing to rewrite). Details: docs/architecture.md#where-to-add-a-new-method.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.connectors.learner.reward_rewrite import (
    RewardTerm,
    RewriteRewards,
    add_reward_rewrite,
)


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
