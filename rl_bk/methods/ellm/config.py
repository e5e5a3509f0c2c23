"""ELLM-PPO: RLlib's PPO (or APPO: :class:`ELLMAPPOConfig`) trained on ELLM's goal-suggestion
reward, one :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece with
:class:`ELLMIntrinsicReward` as its term; the policy is PPO's own (for ELLM's goal-conditioned
policy the env is wrapped instead: :mod:`rl_bk.methods.ellm.goal_observation`). Where it
departs from ELLM's reference (yuqingd/ellm), and why:
docs/methods.md#where-ellm-and-oni-here-depart-from-their-papers-and-why.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.appo.config import BaseAPPOConfig
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewardTerm, RewardTermsMixin
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.methods.ellm.intrinsic_reward import SUGGESTERS, ELLMIntrinsicReward
from rl_bk.methods.ellm.settings import ELLMSettings


class ELLMRewardMixin:
    """ELLM's goal-suggestion reward: its ``training(...)`` parameters and the reward term, for
    PPO (:class:`ELLMPPOConfig`) and APPO (:class:`ELLMAPPOConfig`) alike."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class)
        self.suggester: str = "llm"
        self.labeler: LabelerSpec = LabelerSpec()
        self.family: str | None = None
        self.ellm: ELLMSettings = ELLMSettings()  # the task file's ellm: section, whole

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        ellm: ELLMSettings = NotProvided,
        suggester: str = NotProvided,
        labeler: LabelerSpec = NotProvided,
        family: str | None = NotProvided,
        **kwargs: Any,
    ) -> ELLMPPOConfig:
        """
        Args:
            ellm: ELLM's settings (:class:`~rl_bk.methods.ellm.settings.ELLMSettings`,
                each field's meaning there); any of its fields may also be given by name
                (``training(ellm_coeff=0.5)``: a sweep's values), and replaces that field.
            suggester: "llm" (the labeler's goals; the oracle backend is ELLM's oracle) or
                "novelty" (every goal of the vocabulary).
            labeler: who suggests goals (LabelerSpec; oracle by default).
            family: the env family ("crafter", "babyai"): its goal vocabulary.
        """
        self.ellm = (self.ellm if ellm is NotProvided else ellm).take_from(kwargs)
        super().training(**kwargs)
        if suggester is not NotProvided:
            self.suggester = suggester
        if labeler is not NotProvided:
            self.labeler = labeler
        if family is not NotProvided:
            self.family = family
        return self

    @override(AlgorithmConfig)
    def validate(self) -> None:
        super().validate()
        if self.suggester not in SUGGESTERS:
            self._value_error(
                f"unknown ELLM suggester {self.suggester!r}; valid: {', '.join(SUGGESTERS)}"
            )
        if self.family is None:
            self._value_error(
                "ELLMPPOConfig needs training(family=...): the env family whose "
                "goal vocabulary suggestions use (crafter or babyai)"
            )
        if self.suggester == "llm" and not isinstance(self.labeler, LabelerSpec):
            self._value_error("the 'llm' suggester needs training(labeler=LabelerSpec(...))")

    @override(RewardTermsMixin)
    def reward_terms(self) -> list[RewardTerm]:
        reward_fn = ELLMIntrinsicReward(
            suggester=self.suggester, labeler=self.labeler, family=self.family, settings=self.ellm
        )
        return [IntrinsicReward(reward_fn)]


class ELLMPPOConfig(ELLMRewardMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options) on ELLM's reward::

        config = (ELLMPPOConfig()
                  .environment("Crafter-Text-v0")
                  .training(suggester="llm",
                            labeler=LabelerSpec(LabelerConfig(backend="llamacpp")),
                            family="crafter", ellm_coeff=1.0))

    ``ellm_coeff`` weighs ELLM's reward; the env reward's weight is ``extrinsic_coeff``.
    """


class ELLMAPPOConfig(ELLMRewardMixin, BaseAPPOConfig):
    """RLlib's APPO (asynchronous sampling, V-trace; rl-bk's waiting learner thread)
    on ELLM's reward."""
