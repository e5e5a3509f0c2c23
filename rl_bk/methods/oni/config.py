"""ONI-PPO: RLlib's PPO (or APPO: :class:`ONIAPPOConfig`) trained on ONI's online intrinsic
rewards from LLM feedback: one :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`
piece with :class:`OnlineIntrinsicReward` as its term, and, for ``classification`` and
``ranking``, the learner-only :class:`OnlineRewardModel` beside the policy and a learner that
fits it after each update. PPO itself is unchanged; defaults are ONI's (facebookresearch/oni).
Details: docs/methods.md#online-labelling-ellm-and-oni.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.appo.config import BaseAPPOConfig
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewardTerm, RewardTermsMixin
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.methods.oni.intrinsic_reward import (
    LABELLED_TYPES,
    MODEL_TYPES,
    REWARD_TYPES,
    OnlineIntrinsicReward,
)
from rl_bk.methods.oni.learner import ONIAPPOTorchLearner, ONIPPOTorchLearner
from rl_bk.methods.oni.rl_module import ONI_MODULE_ID, OnlineRewardModel
from rl_bk.methods.oni.settings import ONISettings


class ONIRewardMixin:
    """ONI's online intrinsic reward: its ``training(...)`` parameters, the reward term and the
    learner-only reward model's spec, for PPO (:class:`ONIPPOConfig`) and APPO
    (:class:`ONIAPPOConfig`) alike."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class)
        self.reward_type: str = "retrieval"
        self.labeler: LabelerSpec = LabelerSpec()
        self.family: str | None = None
        self.motif_dir: str | None = None
        self.oni: ONISettings = ONISettings()  # the task file's oni: section, whole

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        oni: ONISettings = NotProvided,
        reward_type: str = NotProvided,
        labeler: LabelerSpec = NotProvided,
        family: str | None = NotProvided,
        motif_dir: str | None = NotProvided,
        **kwargs: Any,
    ) -> ONIPPOConfig:
        """
        Args:
            oni: ONI's settings (:class:`~rl_bk.methods.oni.settings.ONISettings`,
                each field's meaning there); any of its fields may also be given by name
                (``training(llm_coeff=0.2)``: a sweep's values), and replaces that field.
            reward_type: none | retrieval | classification | ranking | motif | cosine-bow.
            labeler: which LLM labels captions online (LabelerSpec; oracle by default).
            family: the env family, so labels are constrained to its vocabulary.
            motif_dir: the offline Motif reward model (reward_type="motif").
        """
        self.oni = (self.oni if oni is NotProvided else oni).take_from(kwargs)
        super().training(**kwargs)
        if reward_type is not NotProvided:
            self.reward_type = reward_type
        if labeler is not NotProvided:
            self.labeler = labeler
        if family is not NotProvided:
            self.family = family
        if motif_dir is not NotProvided:
            self.motif_dir = motif_dir
        return self

    @override(AlgorithmConfig)
    def validate(self) -> None:
        super().validate()
        if self.reward_type not in REWARD_TYPES:
            self._value_error(
                f"unknown ONI reward_type {self.reward_type!r}; valid: {', '.join(REWARD_TYPES)}"
            )
        if self.reward_type in LABELLED_TYPES and not isinstance(self.labeler, LabelerSpec):
            self._value_error(
                f"reward_type {self.reward_type!r} needs training(labeler="
                "LabelerSpec(...)): the LLM that labels captions"
            )
        if self.reward_type == "motif" and not self.motif_dir:
            self._value_error(
                "reward_type 'motif' needs training(motif_dir=...): a reward "
                "model built by `rl-bk knowledge build --kinds motif`"
            )
        if self.reward_type in MODEL_TYPES and self.num_learners > 1:
            self._value_error(
                "ONI's online reward model lives on one learner; use num_learners <= 1"
            )

    @override(AlgorithmConfig)
    def get_multi_rl_module_spec(
        self, *, inference_only: bool = False, **kwargs: Any
    ) -> MultiRLModuleSpec:
        """PPO's spec, plus the learner-only reward model for classification and ranking
        (added at call time, so a reward_type set by Tune applies)."""
        spec = super().get_multi_rl_module_spec(inference_only=inference_only, **kwargs)
        if (
            inference_only
            or self.reward_type not in MODEL_TYPES
            or ONI_MODULE_ID in spec.rl_module_specs
        ):
            return spec
        policy = spec.rl_module_specs[DEFAULT_MODULE_ID]
        spec.add_modules(
            {
                ONI_MODULE_ID: RLModuleSpec(
                    module_class=OnlineRewardModel,
                    observation_space=policy.observation_space,
                    action_space=policy.action_space,
                    learner_only=True,
                    model_config={"kind": self.reward_type},
                )
            }
        )
        return spec

    @override(RewardTermsMixin)
    def reward_terms(self) -> list[RewardTerm]:
        reward_fn = OnlineIntrinsicReward(
            reward_type=self.reward_type,
            labeler=self.labeler,
            family=self.family,
            motif_dir=self.motif_dir,
            seed=self.seed or 0,
            settings=self.oni,
        )
        return [IntrinsicReward(reward_fn)]


class ONIPPOConfig(ONIRewardMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options) on ONI's reward; its learner also fits the
    learner-only reward model (classification, ranking)::

        config = (ONIPPOConfig()
                  .environment("NetHack-Text-Score-v0")
                  .training(reward_type="classification",
                            labeler=LabelerSpec(LabelerConfig(backend="llamacpp")),
                            oni=ONISettings(caption_key="message"), extrinsic_coeff=0.1))
    """

    @override(BasePPOConfig)
    def get_default_learner_class(self) -> type:
        return ONIPPOTorchLearner


class ONIAPPOConfig(ONIRewardMixin, BaseAPPOConfig):
    """RLlib's APPO on ONI's reward; its learner also fits the learner-only reward model
    (classification, ranking), in APPO's learner thread."""

    @override(BaseAPPOConfig)
    def get_default_learner_class(self) -> type:
        return ONIAPPOTorchLearner
