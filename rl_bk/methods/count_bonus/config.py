"""Count-bonus PPO: RLlib's PPO (with rl-bk's loss options) plus a count-based exploration
bonus over the step captions, ``coeff / sqrt(N(caption))``, as an intrinsic-reward term
(:class:`~rl_bk.methods.count_bonus.intrinsic_reward.CaptionCountBonus`) of the one
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece before GAE. The
policy, the value head and PPO's loss are PPO's own.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewardTerm, RewardTermsMixin
from rl_bk.methods.count_bonus.intrinsic_reward import CaptionCountBonus
from rl_bk.methods.count_bonus.settings import CountBonusSettings


class CountBonusPPOConfig(BasePPOConfig):
    """RLlib's PPO on the env reward plus the caption count bonus::

        config = (CountBonusPPOConfig()
                  .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
                  .training(count_bonus=CountBonusSettings(coeff=0.1)))

    The settings object is kept whole; a sweep's values replace its fields by name.
    """

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class)
        self.count_bonus: CountBonusSettings = CountBonusSettings()  # count_bonus:, whole

    @override(AlgorithmConfig)
    def training(
        self, *, count_bonus: CountBonusSettings = NotProvided, **kwargs: Any
    ) -> CountBonusPPOConfig:
        """
        Args:
            count_bonus: the method's settings
                (:class:`~rl_bk.methods.count_bonus.settings.CountBonusSettings`); any of its
                fields may also be given by name (``training(coeff=0.05)``: a sweep's values),
                and replaces that field.
        """
        base = self.count_bonus if count_bonus is NotProvided else count_bonus
        self.count_bonus = base.take_from(kwargs)
        super().training(**kwargs)
        return self

    @override(RewardTermsMixin)
    def reward_terms(self) -> list[RewardTerm]:
        return [IntrinsicReward(CaptionCountBonus(self.count_bonus))]
