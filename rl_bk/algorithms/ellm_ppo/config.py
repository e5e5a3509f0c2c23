"""ELLM-PPO: RLlib's PPO (or APPO: :class:`ELLMAPPOConfig`) trained on ELLM's
goal-suggestion reward.

    config = (ELLMPPOConfig()
              .environment("Crafter-Text-v0")
              .training(suggester="llm", labeler=LabelerSpec(LabelerConfig(backend="llamacpp")),
                        family="crafter", ellm_coeff=1.0, extrinsic_coeff=1.0))

The learner connector gets :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`
right after PPO's artificial-step piece (before GAE), with an intrinsic-reward term whose
reward function is :class:`ELLMIntrinsicReward` (suggestions, novelty filter and matching:
see that module). The policy is PPO's own; for ELLM's goal-conditioned policy the env is
wrapped instead (:mod:`rl_bk.algorithms.ellm_ppo.goal_observation`; the ``ellm`` method does it
when the task's ``ellm.goal_conditioned`` is true).

Departures from ELLM's reference (yuqingd/ellm): PPO instead of double DQN (every method
of a task shares the task's PPO); the env's reward is kept (``extrinsic_coeff``, default 1;
ELLM's pretraining zeroed it: set 0 for that); the match uses the packaged all-MiniLM-L6-v2
at threshold 0.9 (ELLM: paraphrase-MiniLM-L3 at 0.99) on achieved texts the env writes in
the goal vocabulary, not the successful action's name.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.appo.config import BaseAPPOConfig
from rl_bk.algorithms.ellm_ppo.intrinsic_reward import SUGGESTERS, ELLMIntrinsicReward
from rl_bk.algorithms.ellm_ppo.settings import ELLMSettings
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards, add_reward_rewrite
from rl_bk.labeling.labeler import LabelerSpec


class ELLMRewardMixin:
    """ELLM's goal-suggestion reward: its ``training(...)`` parameters and the reward term, for
    PPO (:class:`ELLMPPOConfig`) and APPO (:class:`ELLMAPPOConfig`) alike."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class)
        self.suggester: str = "llm"
        self.labeler: LabelerSpec = LabelerSpec()
        self.family: str | None = None
        # The task file's settings, declared once (its goal_conditioned wraps the env instead).
        defaults = ELLMSettings()
        self.ellm_coeff: float = defaults.ellm_coeff
        self.extrinsic_coeff: float = defaults.extrinsic_coeff
        self.threshold: float | None = defaults.threshold
        self.max_goals: int | None = defaults.max_goals
        self.include_mission: bool = defaults.include_mission
        self.label_batch_size: int = defaults.label_batch_size
        self.label_timeout_s: float = defaults.label_timeout_s

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        suggester: str = NotProvided,
        labeler: LabelerSpec = NotProvided,
        family: str | None = NotProvided,
        ellm_coeff: float = NotProvided,
        extrinsic_coeff: float = NotProvided,
        threshold: float | None = NotProvided,
        max_goals: int | None = NotProvided,
        include_mission: bool = NotProvided,
        label_batch_size: int = NotProvided,
        label_timeout_s: float = NotProvided,
        **kwargs: Any,
    ) -> ELLMPPOConfig:
        """
        Args:
            suggester: "llm" (the labeler's goals; the oracle backend is ELLM's oracle) or
                "novelty" (every goal of the vocabulary).
            labeler: who suggests goals (LabelerSpec; oracle by default).
            family: the env family ("crafter", "babyai"): its goal vocabulary.
            ellm_coeff, extrinsic_coeff: r = extrinsic_coeff * r_env + ellm_coeff * r_ellm.
            threshold: cosine similarity a match must exceed (None: GoalMatcher's default).
            max_goals: suggestions asked per caption; None: every feasible goal from the
                oracle (ELLM's oracle), 5 from an LLM.
            include_mission: send the env's mission with each caption.
            label_batch_size: captions per labeler call (small, 4: the batch waits for the
                labeler, and an LLM answers a whole call at once; with 16, SmolLM2 at ~1
                caption/s here finished no current caption within a 20 s wait).
            label_timeout_s: how long a train batch may wait for its suggestions (0: never;
                steps without suggestions pay 0).
        """
        super().training(**kwargs)
        if suggester is not NotProvided:
            self.suggester = suggester
        if labeler is not NotProvided:
            self.labeler = labeler
        if family is not NotProvided:
            self.family = family
        if ellm_coeff is not NotProvided:
            self.ellm_coeff = ellm_coeff
        if extrinsic_coeff is not NotProvided:
            self.extrinsic_coeff = extrinsic_coeff
        if threshold is not NotProvided:
            self.threshold = threshold
        if max_goals is not NotProvided:
            self.max_goals = max_goals
        if include_mission is not NotProvided:
            self.include_mission = include_mission
        if label_batch_size is not NotProvided:
            self.label_batch_size = label_batch_size
        if label_timeout_s is not NotProvided:
            self.label_timeout_s = label_timeout_s
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

    @override(AlgorithmConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device
        )
        reward_fn = ELLMIntrinsicReward(
            suggester=self.suggester,
            labeler=self.labeler,
            family=self.family,
            ellm_coeff=self.ellm_coeff,
            threshold=self.threshold,
            max_goals=self.max_goals,
            include_mission=self.include_mission,
            label_batch_size=self.label_batch_size,
            label_timeout_s=self.label_timeout_s,
        )
        add_reward_rewrite(
            pipeline,
            RewriteRewards(
                terms=[IntrinsicReward(reward_fn)], extrinsic_coeff=self.extrinsic_coeff
            ),
        )
        return pipeline


class ELLMPPOConfig(ELLMRewardMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options) on ELLM's reward."""


class ELLMAPPOConfig(ELLMRewardMixin, BaseAPPOConfig):
    """RLlib's APPO (asynchronous sampling, V-trace; rl-bk's waiting learner thread)
    on ELLM's reward."""
