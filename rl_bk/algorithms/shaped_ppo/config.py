"""PPO with potential-based reward shaping from a configured potential source.

The algorithm is RLlib's PPO; what changes is the learner connector pipeline: right after
PPO's ``AddOneTsToEpisodesAndTruncate`` a :class:`PotentialBasedShaping` piece rewrites the
rewards of the train batch (one call to the potential source per batch, see that module for
the formula, episode boundaries and where it departs from BK), and PPO's GAE then runs on
the shaped rewards. The env runners never see the shaping, so the episode return RLlib
reports stays the environment's; the learner reports ``shaping_return_mean`` beside it.

    config = (ShapedPPOConfig()
              .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
              .training(potential=SourceSpec("bk-code", "/path/to/artifact"),
                        shaping_coeff=1.0, normalize_potential=True))
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.connectors.learner.potential_shaping import PotentialBasedShaping
from rl_bk.knowledge.sources import LazySource, SourceSpec


class ShapedPPOConfig(PPOConfig):
    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class)
        self.potential: SourceSpec | None = None
        self.shaping_coeff: float = 1.0
        self.extrinsic_coeff: float = 1.0
        self.normalize_potential: bool = True

    @override(PPOConfig)
    def training(
        self,
        *,
        potential: SourceSpec | None = NotProvided,
        shaping_coeff: float = NotProvided,
        extrinsic_coeff: float = NotProvided,
        normalize_potential: bool = NotProvided,
        **kwargs: Any,
    ) -> ShapedPPOConfig:
        """
        Args:
            potential: where Phi comes from: a source kind ("bk-code", "bk-pref",
                "bk-goal") and its artifact folder.
            shaping_coeff: the shaping term's weight, ``coeff * (gamma Phi(s') - Phi(s))``.
            extrinsic_coeff: the environment reward's weight in the reward PPO trains on
                (BK: 10; see rl_bk/connectors/learner/potential_shaping.py for why).
            normalize_potential: divide Phi by the running std of the potentials seen, so
                one coefficient fits sources of different scales.
        """
        super().training(**kwargs)
        if potential is not NotProvided:
            self.potential = potential
        if shaping_coeff is not NotProvided:
            self.shaping_coeff = shaping_coeff
        if extrinsic_coeff is not NotProvided:
            self.extrinsic_coeff = extrinsic_coeff
        if normalize_potential is not NotProvided:
            self.normalize_potential = normalize_potential
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if not isinstance(self.potential, SourceSpec):
            self._value_error(
                "ShapedPPOConfig needs training(potential=SourceSpec(kind, path)): the source "
                "of Phi (bk-code, bk-pref or bk-goal and its artifact folder)"
            )
        if self.shaping_coeff < 0:
            self._value_error(f"shaping_coeff must be >= 0, got {self.shaping_coeff}")
        if self.extrinsic_coeff <= 0:
            self._value_error(f"extrinsic_coeff must be > 0, got {self.extrinsic_coeff}")

    @override(PPOConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device
        )
        # First in the pipeline as built here: PPO's learner then prepends its
        # AddOneTsToEpisodesAndTruncate (PPOLearner.build), so shaping sees the artificial step
        # and runs before anything reads rewards; GAE is appended after everything.
        pipeline.prepend(
            PotentialBasedShaping(
                potential_fn=LazySource(self.potential), gamma=self.gamma,
                coeff=self.shaping_coeff,
                extrinsic_coeff=self.extrinsic_coeff, normalize=self.normalize_potential,
            ),
        )  # fmt: skip
        return pipeline
