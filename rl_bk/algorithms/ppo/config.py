"""RLlib's PPO with the loss options (and the time-limit convention) of CleanRL-style PPO
code, which BK's ``train_rs.py`` (mansicer/background-knowledge-rl) and RND's reference
implementation use. The defaults are RLlib's own behaviour, and every rl-bk method's config
subclasses this one, so the options apply to all of them.
"""

from __future__ import annotations

from typing import Any, Literal

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.ppo.learner import BasePPOTorchLearner
from rl_bk.connectors.learner.reward_rewrite import RewardTermsMixin

#: ``value_loss`` forms. "rllib": ``(V - R)^2`` clamped at ``vf_clip_param`` (RLlib's);
#: "cleanrl": ``0.5 * max((V - R)^2, (V_old + clip(V - V_old, +-clip_param) - R)^2)``, the
#: value's change from the sampled one clipped as the policy ratio is (CleanRL, BK).
VALUE_LOSSES = ("rllib", "cleanrl")
#: ``advantage_normalization``: over the whole train batch (RLlib's GAE connector), or again
#: over each minibatch (CleanRL's ``norm_adv``, BK's ``train_rs.py``).
ADVANTAGE_NORMALIZATIONS = ("batch", "minibatch")
#: torch's Adam epsilon, which RLlib's learner uses; CleanRL (and BK) use 1e-5.
TORCH_ADAM_EPSILON = 1e-8


class BasePPOConfig(RewardTermsMixin, PPOConfig):
    """RLlib's ``PPOConfig`` with CleanRL's loss options, each RLlib's by default, so a config
    that sets none of them is RLlib's PPO::

        config = (BasePPOConfig()
                  .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
                  .training(value_loss="cleanrl", advantage_normalization="minibatch",
                            adam_epsilon=1e-5, grad_clip=None))
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class)
        self.value_loss: Literal["rllib", "cleanrl"] = "rllib"
        self.advantage_normalization: Literal["batch", "minibatch"] = "batch"
        self.adam_epsilon: float = TORCH_ADAM_EPSILON
        self.bootstrap_time_limits: bool = True
        self.shuffle_first_epoch: bool = False
        self.minibatches_from_env_steps: bool = False

    @override(PPOConfig)
    def training(
        self,
        *,
        value_loss: Literal["rllib", "cleanrl"] = NotProvided,
        advantage_normalization: Literal["batch", "minibatch"] = NotProvided,
        adam_epsilon: float = NotProvided,
        bootstrap_time_limits: bool = NotProvided,
        shuffle_first_epoch: bool = NotProvided,
        minibatches_from_env_steps: bool = NotProvided,
        **kwargs: Any,
    ) -> BasePPOConfig:
        """
        Args:
            value_loss: "rllib" (the squared error, clamped at ``vf_clip_param``) or
                "cleanrl" (half the larger of the squared errors of the new value and of
                the old value moved at most ``clip_param`` towards it; BK's
                ``clip_vloss=True``).
            advantage_normalization: "batch" (RLlib's: once over the train batch) or
                "minibatch" (again over each minibatch, as CleanRL and BK).
            adam_epsilon: the policy optimiser's Adam epsilon (torch: 1e-8; BK: 1e-5).
            bootstrap_time_limits: True (RLlib's): GAE bootstraps from the value of the state
                where the env's time limit cut an episode; False (BK's and CleanRL's): that
                step ends the episode like a terminal one.
            shuffle_first_epoch: False (RLlib's): the first epoch takes the train batch's
                rows in episode order, as RLlib's minibatch iterator shuffles only from the
                second; True (CleanRL's and BK's): every epoch, the first included, draws
                its minibatches in a random order (:mod:`~rl_bk.connectors.learner.shuffled_rows`).
            minibatches_from_env_steps: False (RLlib's): an update takes minibatches until
                every row of the train batch, RLlib's artificial last step of each episode
                chunk included, was seen ``num_epochs`` times (17 of 256 on BK's 1,024 env
                steps); True (CleanRL's and BK's): ``num_epochs * train_batch_size_per_learner
                // minibatch_size`` minibatches (16).
        """
        super().training(**kwargs)
        if value_loss is not NotProvided:
            self.value_loss = value_loss
        if advantage_normalization is not NotProvided:
            self.advantage_normalization = advantage_normalization
        if adam_epsilon is not NotProvided:
            self.adam_epsilon = adam_epsilon
        if bootstrap_time_limits is not NotProvided:
            self.bootstrap_time_limits = bootstrap_time_limits
        if shuffle_first_epoch is not NotProvided:
            self.shuffle_first_epoch = shuffle_first_epoch
        if minibatches_from_env_steps is not NotProvided:
            self.minibatches_from_env_steps = minibatches_from_env_steps
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if self.value_loss not in VALUE_LOSSES:
            self._value_error(
                f"value_loss must be one of {', '.join(VALUE_LOSSES)}, got {self.value_loss!r}"
            )
        if self.advantage_normalization not in ADVANTAGE_NORMALIZATIONS:
            self._value_error(
                "advantage_normalization must be one of "
                f"{', '.join(ADVANTAGE_NORMALIZATIONS)}, got "
                f"{self.advantage_normalization!r}"
            )
        if not self.adam_epsilon > 0:
            self._value_error(f"adam_epsilon must be > 0, got {self.adam_epsilon}")

    @override(PPOConfig)
    def get_default_learner_class(self) -> type:
        return BasePPOTorchLearner
