"""ONI-PPO: RLlib's PPO (or APPO: :class:`ONIAPPOConfig`) trained on ONI's online intrinsic
rewards from LLM feedback.

    config = (ONIPPOConfig()
              .environment("NetHack-Text-Score-v0")
              .training(reward_type="classification", caption_key="message",
                        labeler=LabelerSpec(LabelerConfig(backend="llamacpp")),
                        llm_coeff=0.4, beta=3.0, extrinsic_coeff=0.1))

What it wires:

- the learner connector: :class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards`
  right after PPO's artificial-step piece (before GAE), with an intrinsic-reward term whose
  reward function is :class:`OnlineIntrinsicReward` (see that module for every reward
  type, the label queue and the count decay);
- for ``classification`` and ``ranking``: the learner-only :class:`OnlineRewardModel` beside
  the policy, and :class:`ONIPPOTorchLearner`, which fits it on the labels after each update.

PPO (clipped surrogate, GAE, one value head) is unchanged: ONI's reference trains APPO with
V-trace; here every method of a task shares the task's PPO, so comparisons stay fair. Defaults
are ONI's (facebookresearch/oni): llm_coeff 0.4, beta 3, classification threshold 0.5, ranking
threshold -0.5 on the normalised scale, reward-model lr 1e-4, minibatch 256, 32 steps per new
labels below 25k labels. ``extrinsic_coeff`` defaults to 1: ONI used 0.1 on NetHack Score and
10 elsewhere, so task files set it.
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
from rl_bk.algorithms.oni_ppo.intrinsic_reward import (
    LABELLED_TYPES,
    MODEL_TYPES,
    REWARD_TYPES,
    OnlineIntrinsicReward,
)
from rl_bk.algorithms.oni_ppo.learner import ONIAPPOTorchLearner, ONIPPOTorchLearner
from rl_bk.algorithms.oni_ppo.rl_module import ONI_MODULE_ID, OnlineRewardModel
from rl_bk.algorithms.oni_ppo.settings import ONISettings
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards, add_reward_rewrite
from rl_bk.labeling.labeler import LabelerSpec


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
        # The task file's settings, declared once, in ONISettings.
        defaults = ONISettings()
        self.caption_key: str = defaults.caption_key
        self.goal: str = defaults.goal
        self.extrinsic_coeff: float = defaults.extrinsic_coeff
        self.llm_coeff: float = defaults.llm_coeff
        self.beta: float = defaults.beta
        self.label_batch_size: int = defaults.label_batch_size
        self.label_busy_fraction: float = defaults.label_busy_fraction
        self.min_examples: int = defaults.min_examples
        self.classification_threshold: float = defaults.classification_threshold
        self.ranking_threshold: float = defaults.ranking_threshold
        self.ranking_quantile: float | None = defaults.ranking_quantile
        self.motif_quantile: float | None = defaults.motif_quantile
        self.cosine_threshold: float = defaults.cosine_threshold
        self.pairs_per_batch: int = defaults.pairs_per_batch
        self.reward_model_steps: int = defaults.reward_model_steps
        self.reward_model_batch_size: int = defaults.reward_model_batch_size
        self.reward_model_lr: float = defaults.reward_model_lr
        self.reward_model_full_until: int = defaults.reward_model_full_until
        self.reward_model_in_background: bool = defaults.reward_model_in_background

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        reward_type: str = NotProvided,
        labeler: LabelerSpec = NotProvided,
        caption_key: str = NotProvided,
        family: str | None = NotProvided,
        goal: str = NotProvided,
        extrinsic_coeff: float = NotProvided,
        llm_coeff: float = NotProvided,
        beta: float = NotProvided,
        label_batch_size: int = NotProvided,
        label_busy_fraction: float = NotProvided,
        min_examples: int = NotProvided,
        classification_threshold: float = NotProvided,
        ranking_threshold: float = NotProvided,
        ranking_quantile: float | None = NotProvided,
        cosine_threshold: float = NotProvided,
        pairs_per_batch: int = NotProvided,
        motif_dir: str | None = NotProvided,
        motif_quantile: float | None = NotProvided,
        reward_model_lr: float = NotProvided,
        reward_model_batch_size: int = NotProvided,
        reward_model_steps: int = NotProvided,
        reward_model_full_until: int = NotProvided,
        reward_model_in_background: bool = NotProvided,
        **kwargs: Any,
    ) -> ONIPPOConfig:
        """
        Args:
            reward_type: none | retrieval | classification | ranking | motif | cosine-bow.
            labeler: which LLM labels captions online (LabelerSpec; oracle by default).
            caption_key: the info key holding a step's caption ("message" on NetHack).
            family: the env family, so labels are constrained to its vocabulary.
            goal: the task in words: the labeller's criterion and cosine-BoW's target.
            extrinsic_coeff, llm_coeff, beta: r = ext * r_env + llm * r_int * N ** -beta.
            label_batch_size: captions (or pairs) per labeler call.
            label_busy_fraction: the largest share of wall time a labeler computing on this
                machine (LabelerSpec.computes_here: the embedded llama.cpp model) may spend
                labelling; it rests in between. 1 = label flat out. A remote labeler is
                never held back.
            min_examples: labelled examples before a reward model's output is paid.
            classification_threshold: p(helpful) above which classification pays 1.
            ranking_threshold: the normalised ranking reward is kept above this value.
            ranking_quantile: instead, keep it above this quantile of the batch's values.
            cosine_threshold: cosine-BoW similarity kept above this value.
            pairs_per_batch: caption pairs queued per batch for ranking labels.
            motif_dir: the offline Motif reward model (reward_type="motif").
            motif_quantile: Motif's threshold, a quantile of the normalised reward over its
                dataset (Motif's README: 0.5; 0.05 to 0.95 in steps of 0.05); None: use
                ``ranking_threshold``.
            reward_model_lr, reward_model_batch_size, reward_model_steps,
            reward_model_full_until: fitting the online model (see the learner).
            reward_model_in_background: fit in a thread beside training (default) or in
                place after each update, as ONI.
        """
        super().training(**kwargs)
        if reward_type is not NotProvided:
            self.reward_type = reward_type
        if labeler is not NotProvided:
            self.labeler = labeler
        if caption_key is not NotProvided:
            self.caption_key = caption_key
        if family is not NotProvided:
            self.family = family
        if goal is not NotProvided:
            self.goal = goal
        if extrinsic_coeff is not NotProvided:
            self.extrinsic_coeff = extrinsic_coeff
        if llm_coeff is not NotProvided:
            self.llm_coeff = llm_coeff
        if beta is not NotProvided:
            self.beta = beta
        if label_batch_size is not NotProvided:
            self.label_batch_size = label_batch_size
        if label_busy_fraction is not NotProvided:
            self.label_busy_fraction = label_busy_fraction
        if min_examples is not NotProvided:
            self.min_examples = min_examples
        if classification_threshold is not NotProvided:
            self.classification_threshold = classification_threshold
        if ranking_threshold is not NotProvided:
            self.ranking_threshold = ranking_threshold
        if ranking_quantile is not NotProvided:
            self.ranking_quantile = ranking_quantile
        if cosine_threshold is not NotProvided:
            self.cosine_threshold = cosine_threshold
        if pairs_per_batch is not NotProvided:
            self.pairs_per_batch = pairs_per_batch
        if motif_dir is not NotProvided:
            self.motif_dir = motif_dir
        if motif_quantile is not NotProvided:
            self.motif_quantile = motif_quantile
        if reward_model_lr is not NotProvided:
            self.reward_model_lr = reward_model_lr
        if reward_model_batch_size is not NotProvided:
            self.reward_model_batch_size = reward_model_batch_size
        if reward_model_steps is not NotProvided:
            self.reward_model_steps = reward_model_steps
        if reward_model_full_until is not NotProvided:
            self.reward_model_full_until = reward_model_full_until
        if reward_model_in_background is not NotProvided:
            self.reward_model_in_background = reward_model_in_background
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
        if not 0.0 < self.label_busy_fraction <= 1.0:
            self._value_error(
                f"label_busy_fraction is a share of wall time in (0, 1], got "
                f"{self.label_busy_fraction}"
            )
        for name in ("llm_coeff", "beta", "extrinsic_coeff"):
            if getattr(self, name) < 0:
                self._value_error(f"{name} must be >= 0, got {getattr(self, name)}")

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

    @override(AlgorithmConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device
        )
        reward_fn = OnlineIntrinsicReward(
            reward_type=self.reward_type,
            labeler=self.labeler,
            caption_key=self.caption_key,
            family=self.family,
            goal=self.goal,
            llm_coeff=self.llm_coeff,
            beta=self.beta,
            label_batch_size=self.label_batch_size,
            label_busy_fraction=self.label_busy_fraction,
            min_examples=self.min_examples,
            classification_threshold=self.classification_threshold,
            ranking_threshold=self.ranking_threshold,
            ranking_quantile=self.ranking_quantile,
            cosine_threshold=self.cosine_threshold,
            pairs_per_batch=self.pairs_per_batch,
            motif_dir=self.motif_dir,
            motif_quantile=self.motif_quantile,
            seed=self.seed or 0,
        )
        # Right after the artificial-step piece: rewritten before GAE or V-trace reads them.
        add_reward_rewrite(
            pipeline,
            RewriteRewards(
                terms=[IntrinsicReward(reward_fn)], extrinsic_coeff=self.extrinsic_coeff
            ),
        )
        return pipeline


class ONIPPOConfig(ONIRewardMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options) on ONI's reward; its learner also fits the
    learner-only reward model (classification, ranking)."""

    @override(BasePPOConfig)
    def get_default_learner_class(self) -> type:
        return ONIPPOTorchLearner


class ONIAPPOConfig(ONIRewardMixin, BaseAPPOConfig):
    """RLlib's APPO on ONI's reward; its learner also fits the learner-only reward model
    (classification, ranking), in APPO's learner thread."""

    @override(BaseAPPOConfig)
    def get_default_learner_class(self) -> type:
        return ONIAPPOTorchLearner
