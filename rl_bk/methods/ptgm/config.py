"""PTGM-PPO: a high-level PPO (or APPO: :class:`PTGMAPPOConfig`) over a codebook of goals,
regularised by a goal prior: ``goal_environment`` registers ``<env>+ptgm`` (an action picks a
goal, the frozen low-level policy runs ``low_level_steps`` env steps towards it), one
:class:`~rl_bk.connectors.learner.reward_rewrite.RewriteRewards` piece adds the prior-KL term,
and a callback counts env steps, not decisions. ``prior_kl_coeff=0`` is the "no KL" ablation.
Details: docs/methods.md#ptgms-pre-training-and-its-kl.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.appo.config import BaseAPPOConfig
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.connectors.learner.reward_rewrite import RewardTerm, RewardTermsMixin
from rl_bk.methods.ptgm.env_steps import PTGMMetricsCallback
from rl_bk.methods.ptgm.high_level_env import register_high_level_env
from rl_bk.methods.ptgm.prior_kl import PriorKLPenalty, PriorLogits
from rl_bk.methods.ptgm.settings import PTGMSettings


class PriorKLMixin:
    """PTGM's high level: its ``training(...)`` parameters and the prior-KL reward term, for PPO
    (:class:`PTGMPPOConfig`) and APPO (:class:`PTGMAPPOConfig`) alike."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class)
        self.ptgm_dir: str | None = None
        # The task file's ``ptgm:`` section, declared once, in PTGMSettings (the high level
        # reads its RL fields: prior_kl_coeff, low_level_steps, greedy_low_level).
        self.ptgm = PTGMSettings()
        self.callbacks(PTGMMetricsCallback)

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        ptgm_dir: str = NotProvided,
        ptgm: PTGMSettings = NotProvided,
        **kwargs: Any,
    ) -> PTGMPPOConfig:
        """
        Args:
            ptgm_dir: the folder of the pre-trained PTGM models.
            ptgm: PTGM's settings (:class:`~rl_bk.methods.ptgm.settings.PTGMSettings`, each
                field's meaning there; ``prior_kl_coeff`` 0 is the no-KL ablation); any of
                its fields may also be given by name (``training(prior_kl_coeff=0.1)``).
        """
        self.ptgm = (self.ptgm if ptgm is NotProvided else ptgm).take_from(kwargs)
        super().training(**kwargs)
        if ptgm_dir is not NotProvided:
            self.ptgm_dir = ptgm_dir
        return self

    def goal_environment(
        self, env: str, env_config: Mapping[str, Any] | None = None
    ) -> PTGMPPOConfig:
        """Runs on ``env`` through goals: registers ``<env>+ptgm`` and points the config at
        it, with the callback that counts env steps (call after ``training(ptgm_dir=...,
        low_level_steps=...)``, and after any ``callbacks(...)``)."""
        if self.ptgm_dir is None:
            raise ValueError(
                "call training(ptgm_dir=...) before goal_environment(): the "
                "high-level env needs the pre-trained models"
            )
        config = {
            **dict(env_config or {}),
            "ptgm_env": env,
            "ptgm_dir": str(self.ptgm_dir),
            "low_level_steps": self.ptgm.low_level_steps,
            "greedy_low_level": self.ptgm.greedy_low_level,
        }
        # The env counts its env steps in info; this callback makes them the results' count.
        self.callbacks(PTGMMetricsCallback)
        return self.environment(register_high_level_env(env), env_config=config)

    @override(AlgorithmConfig)
    def validate(self) -> None:
        super().validate()
        if self.ptgm_dir is None:
            self._value_error(
                "PTGMPPOConfig needs training(ptgm_dir=...): the folder of the "
                "pre-trained PTGM models (rl-bk knowledge build --kinds ptgm)"
            )
        if not str(self.env or "").endswith("+ptgm"):
            self._value_error(
                "PTGMPPOConfig runs on the high-level env: call "
                "goal_environment(env) instead of environment(env)"
            )

    @override(RewardTermsMixin)
    def reward_terms(self) -> list[RewardTerm]:
        prior = PriorLogits(str(self.ptgm_dir))
        return [PriorKLPenalty(prior_logits=prior, kl_coeff=self.ptgm.prior_kl_coeff)]


class PTGMPPOConfig(PriorKLMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options) over PTGM's goals::

        config = (PTGMPPOConfig()
                  .training(ptgm_dir=folder, prior_kl_coeff=0.05, low_level_steps=8)
                  .goal_environment("BabyAI-Text-GoToLocal-RedBall-S20-v0"))

    ``folder`` holds PTGM's pre-trained models (``rl-bk knowledge build --kinds ptgm``). PTGM's
    reference (PKU-RL/PTGM) trains its high level with PPO (lr 1e-4, γ 0.999, 5 epochs, batch
    40 on one env) over 100 goals of 100 env steps each, with ``kl_reward`` 0.05 in its README
    command; the task file sets the PPO side.
    """


class PTGMAPPOConfig(PriorKLMixin, BaseAPPOConfig):
    """RLlib's APPO (asynchronous sampling, V-trace; rl-bk's waiting learner thread)
    over PTGM's goals."""
