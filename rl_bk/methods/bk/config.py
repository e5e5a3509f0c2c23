"""PPO (or APPO: :class:`ShapedAPPOConfig`) with potential-based reward shaping from a
configured potential source (BK's stage 3): right after PPO's ``AddOneTsToEpisodesAndTruncate``
one :class:`RewriteRewards` piece with a :class:`PotentialShaping` term rewrites the rewards of
each train batch, and PPO's GAE runs on the shaped rewards; the env runners never see it. The
defaults are BK's (``train_rs.py``). Details: docs/methods.md#bk-bk-code-bk-pref-bk-goal.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.appo.config import BaseAPPOConfig
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.callbacks.env_slot import tag_env_slot
from rl_bk.connectors.learner.reward_rewrite import RewardTerm, RewardTermsMixin
from rl_bk.methods.bk.potential_shaping import PotentialShaping
from rl_bk.methods.bk.settings import ShapingSettings
from rl_bk.methods.bk.sources import LazySource, SourceSpec


class PotentialShapingMixin:
    """BK's potential-based shaping: its ``training(...)`` parameters and the reward term, for PPO
    (:class:`ShapedPPOConfig`) and APPO (:class:`ShapedAPPOConfig`) alike."""

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class)
        self.potential: SourceSpec | None = None
        # BK's values (mansicer/background-knowledge-rl, train_rs.py and utils/config.py),
        # declared once, in ShapingSettings (the task file's ``knowledge:`` section).
        self.shaping = ShapingSettings()
        # Each episode learns its env slot when it starts: BK's shaping runs per slot.
        self.callbacks(on_episode_start=tag_env_slot)

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        potential: SourceSpec | None = NotProvided,
        shaping: ShapingSettings = NotProvided,
        **kwargs: Any,
    ) -> ShapedPPOConfig:
        """
        Args:
            potential: where Phi comes from: a source kind ("bk-code", "bk-pref",
                "bk-goal") and its artifact folder; None: no shaping, only the env reward
                times ``extrinsic_coeff`` (BK's PPO: its ``train_rs.py`` with no potential).
            shaping: how Phi shapes the rewards
                (:class:`~rl_bk.methods.bk.settings.ShapingSettings`, each field's meaning
                there); any of its fields may also be given by name
                (``training(shaping_coeff=0.5)``), and is checked as the task file's is.
        """
        self.shaping = (self.shaping if shaping is NotProvided else shaping).take_from(kwargs)
        super().training(**kwargs)
        if potential is not NotProvided:
            self.potential = potential
        return self

    @override(AlgorithmConfig)
    def validate(self) -> None:
        super().validate()
        if self.potential is not None and not isinstance(self.potential, SourceSpec):
            self._value_error(
                "ShapedPPOConfig's potential must be a SourceSpec(kind, path): the source of "
                "Phi (bk-code, bk-pref or bk-goal and its artifact folder), or None for no "
                f"shaping; got {self.potential!r}"
            )

    @override(RewardTermsMixin)
    def reward_terms(self) -> list[RewardTerm]:
        if self.potential is None:
            return []
        s = self.shaping
        return [
            PotentialShaping(
                potential_fn=LazySource(self.potential),
                gamma=self.gamma,
                coeff=s.shaping_coeff,
                normalization=s.potential_normalization,
                convention=s.shaping_convention,
                episode_start=s.episode_start_window,
            )
        ]


class ShapedPPOConfig(PotentialShapingMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options: BK's to the letter on BK's tasks), shaped::

        config = (ShapedPPOConfig()
                  .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
                  .training(potential=SourceSpec("bk-code", "/path/to/artifact"),
                            shaping_coeff=1.0, extrinsic_coeff=10.0))

    The defaults are BK's: Phi divided by the std of its discounted running sum, each
    potential difference paid one step late. BK's 10 x env reward is the task's
    ``ppo.extrinsic_coeff``, which every method of BK's tasks trains on. The learner reports
    ``shaping_return_mean`` beside the environment's return.
    """


class ShapedAPPOConfig(PotentialShapingMixin, BaseAPPOConfig):
    """RLlib's APPO (asynchronous sampling, V-trace; rl-bk's waiting learner thread), shaped by
    the same term."""
