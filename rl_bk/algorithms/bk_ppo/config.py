"""PPO (or APPO: :class:`ShapedAPPOConfig`) with potential-based reward shaping from a
configured potential source (BK's stage 3).

The algorithm is RLlib's PPO; what changes is the learner connector pipeline: right after
PPO's ``AddOneTsToEpisodesAndTruncate`` the :class:`RewriteRewards` piece, with a
:class:`PotentialShaping` term, rewrites the rewards of the train batch (one call to the
potential source per batch; the formula, the two episode-end conventions and the
normalisations are in that module), and PPO's GAE then runs on the shaped rewards. The env
runners never see the shaping, so the episode return RLlib
reports stays the environment's; the learner reports ``shaping_return_mean`` beside it.

    config = (ShapedPPOConfig()
              .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
              .training(potential=SourceSpec("bk-code", "/path/to/artifact"),
                        shaping_coeff=1.0, extrinsic_coeff=10.0))

The defaults are BK's (``train_rs.py``): ``extrinsic_coeff`` 10, Phi divided by the std of
its discounted running sum, each potential difference paid one step late.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.appo.config import BaseAPPOConfig
from rl_bk.algorithms.bk_ppo.potential_shaping import (
    CONVENTIONS,
    NORMALIZATIONS,
    PotentialShaping,
)
from rl_bk.algorithms.bk_ppo.settings import ShapingSettings
from rl_bk.algorithms.bk_ppo.sources import LazySource, SourceSpec
from rl_bk.algorithms.bk_ppo.window_history import EPISODE_STARTS
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.callbacks.env_slot import tag_env_slot
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards, add_reward_rewrite


class PotentialShapingMixin:
    """BK's potential-based shaping: its ``training(...)`` parameters and the reward term, for PPO
    (:class:`ShapedPPOConfig`) and APPO (:class:`ShapedAPPOConfig`) alike."""

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class)
        self.potential: SourceSpec | None = None
        # BK's values (mansicer/background-knowledge-rl, train_rs.py and utils/config.py),
        # declared once, in ShapingSettings (the task file's ``knowledge:`` section).
        defaults = ShapingSettings()
        self.shaping_coeff: float = defaults.shaping_coeff
        self.extrinsic_coeff: float = defaults.extrinsic_coeff
        self.potential_normalization: str = defaults.potential_normalization
        self.shaping_convention: str = defaults.shaping_convention
        self.episode_start_window: str = defaults.episode_start_window
        # Each episode learns its env slot when it starts: BK's shaping runs per slot.
        self.callbacks(on_episode_start=tag_env_slot)

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        potential: SourceSpec | None = NotProvided,
        shaping_coeff: float = NotProvided,
        extrinsic_coeff: float = NotProvided,
        potential_normalization: str = NotProvided,
        shaping_convention: str = NotProvided,
        episode_start_window: str = NotProvided,
        **kwargs: Any,
    ) -> ShapedPPOConfig:
        """
        Args:
            potential: where Phi comes from: a source kind ("bk-code", "bk-pref",
                "bk-goal") and its artifact folder; None: no shaping, only the env reward
                times ``extrinsic_coeff`` (BK's PPO: its ``train_rs.py`` with no potential).
            shaping_coeff: the shaping term's weight, ``coeff * F_t``.
            extrinsic_coeff: the environment reward's weight in the reward PPO trains on
                (BK: 10).
            potential_normalization: what Phi is divided by: ``"discounted-sum-std"``
                (BK's: the running std of Phi's discounted running sum), ``"std"`` (the
                running std of Phi) or ``"none"``.
            shaping_convention: ``"bk"`` (BK's: ``F_t = gamma Phi(s_t) - Phi(s_{t-1})``, the
                step that ends an episode is not charged) or ``"ng"`` (Ng et al.:
                ``F_t = gamma Phi(s_{t+1}) - Phi(s_t)``, ``Phi(terminal) = 0``).
            episode_start_window: the windows of an episode's first states: ``"repeat-first"``
                (BK's: filled with the first state and the first action) or ``"short"``.
        """
        super().training(**kwargs)
        if potential is not NotProvided:
            self.potential = potential
        if shaping_coeff is not NotProvided:
            self.shaping_coeff = shaping_coeff
        if extrinsic_coeff is not NotProvided:
            self.extrinsic_coeff = extrinsic_coeff
        if potential_normalization is not NotProvided:
            self.potential_normalization = potential_normalization
        if shaping_convention is not NotProvided:
            self.shaping_convention = shaping_convention
        if episode_start_window is not NotProvided:
            self.episode_start_window = episode_start_window
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
        if self.shaping_coeff < 0:
            self._value_error(f"shaping_coeff must be >= 0, got {self.shaping_coeff}")
        if self.extrinsic_coeff <= 0:
            self._value_error(f"extrinsic_coeff must be > 0, got {self.extrinsic_coeff}")
        if self.potential_normalization not in NORMALIZATIONS:
            self._value_error(
                f"potential_normalization must be one of {', '.join(NORMALIZATIONS)}"
                f", got {self.potential_normalization!r}"
            )
        if self.shaping_convention not in CONVENTIONS:
            self._value_error(
                f"shaping_convention must be one of {', '.join(CONVENTIONS)}, "
                f"got {self.shaping_convention!r}"
            )
        if self.episode_start_window not in EPISODE_STARTS:
            self._value_error(
                f"episode_start_window must be one of {', '.join(EPISODE_STARTS)}"
                f", got {self.episode_start_window!r}"
            )

    @override(AlgorithmConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device
        )
        # Right after the artificial-step piece: shaping sees that step and runs before
        # anything reads rewards (GAE, appended after everything; APPO's V-trace, in its loss).
        terms = []
        if self.potential is not None:
            terms.append(
                PotentialShaping(
                    potential_fn=LazySource(self.potential),
                    gamma=self.gamma,
                    coeff=self.shaping_coeff,
                    normalization=self.potential_normalization,
                    convention=self.shaping_convention,
                    episode_start=self.episode_start_window,
                )
            )
        add_reward_rewrite(
            pipeline, RewriteRewards(terms=terms, extrinsic_coeff=self.extrinsic_coeff)
        )
        return pipeline


class ShapedPPOConfig(PotentialShapingMixin, BasePPOConfig):
    """RLlib's PPO (with rl-bk's loss options: BK's to the letter on BK's tasks), shaped."""


class ShapedAPPOConfig(PotentialShapingMixin, BaseAPPOConfig):
    """RLlib's APPO (asynchronous sampling, V-trace; rl-bk's waiting learner thread), shaped by
    the same term."""
