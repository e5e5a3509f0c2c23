"""RND-PPO's config and algorithm: RLlib's PPO, wired for Random Network Distillation.

The user-facing surface is one config, used like PPO's:

    config = (RNDPPOConfig()
              .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
              .training(lr=3e-4, int_coeff=1.0, ext_coeff=2.0, int_gamma=0.99)
              .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[256, 256])))
    algo = config.build_algo()

What it wires, so that nothing else has to be set:

- the RLModules: the policy is :class:`TwoHeadedPPOTorchRLModule` (RLlib's default PPO
  module with an intrinsic value head, built from the task's ``DefaultModelConfig``); the
  learners also get the learner-only :class:`RandomNetworkDistillation` module beside it
  (``get_multi_rl_module_spec``), never the env runners;
- the learner connector: ``ComputeIntrinsicRewards`` then
  ``TwoHeadedGeneralAdvantageEstimation`` at the end of the pipeline, in place of PPO's
  one-headed GAE (which :class:`RNDPPOTorchLearner` removes);
- the learner class (:class:`RNDPPOTorchLearner`), and the algorithm class
  (:class:`RNDPPO`), which adds the precollect callback when ``precollect_dir`` is set.
  It is added at algorithm setup, not through ``.callbacks(...)``, so a later
  ``.callbacks(EpisodeMetricsCallback)`` does not replace it.

Defaults are BK's RND settings (mansicer/background-knowledge-rl ``utils/config.py``;
CleanRL's ``ppo_rnd_envpool.py``).
Only single-agent, non-recurrent policies on flat Box observations are supported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.algorithms.rnd_ppo.intrinsic_reward import ComputeIntrinsicRewards
from rl_bk.algorithms.rnd_ppo.learner import RNDPPOTorchLearner
from rl_bk.algorithms.rnd_ppo.precollect import PrecollectEpisodes, precollect_now
from rl_bk.algorithms.rnd_ppo.rl_module import (
    RND_MODULE_ID,
    RandomNetworkDistillation,
    TwoHeadedPPOTorchRLModule,
)
from rl_bk.algorithms.rnd_ppo.two_headed_gae import TwoHeadedGeneralAdvantageEstimation


class RNDPPOConfig(BasePPOConfig):
    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or RNDPPO)
        self.int_coeff: float = 1.0
        self.ext_coeff: float = 2.0
        self.int_gamma: float = 0.99
        self.rnd_output_dim: int = 512
        self.rnd_hiddens: list[int] = [256, 256]
        self.update_proportion: float = 0.25
        self.rnd_lr: float | None = None
        self.precollect_dir: str | None = None
        self.precollect_every_timesteps: int = 500_000
        self.precollect_episodes: int = 50

    @override(PPOConfig)
    def training(
        self,
        *,
        int_coeff: float = NotProvided,
        ext_coeff: float = NotProvided,
        int_gamma: float = NotProvided,
        rnd_output_dim: int = NotProvided,
        rnd_hiddens: list[int] = NotProvided,
        update_proportion: float = NotProvided,
        rnd_lr: float | None = NotProvided,
        precollect_dir: str | None = NotProvided,
        precollect_every_timesteps: int = NotProvided,
        precollect_episodes: int = NotProvided,
        **kwargs: Any,
    ) -> RNDPPOConfig:
        """PPO's training settings, plus RND's.

        Args:
            int_coeff: weight of the intrinsic advantage in the policy's advantage.
            ext_coeff: weight of the extrinsic advantage (CleanRL and BK: 2.0).
            int_gamma: discount of the intrinsic return (non-episodic: it bootstraps
                across episode ends too).
            rnd_output_dim: the embedding size of the RND target and predictor.
            rnd_hiddens: trunk layer sizes of both RND nets.
            update_proportion: fraction of each minibatch the predictor trains on.
            rnd_lr: the predictor's learning rate; None: the policy's ``lr``.
            precollect_dir: a trajectory dataset folder; when set, the current stochastic
                policy's episodes are appended to it during training (BK's stage 1).
                A relative path is made absolute here (Tune trials run elsewhere).
            precollect_every_timesteps: sampled env steps between two collections.
            precollect_episodes: episodes per collection.
        """
        super().training(**kwargs)
        if int_coeff is not NotProvided:
            self.int_coeff = int_coeff
        if ext_coeff is not NotProvided:
            self.ext_coeff = ext_coeff
        if int_gamma is not NotProvided:
            self.int_gamma = int_gamma
        if rnd_output_dim is not NotProvided:
            self.rnd_output_dim = rnd_output_dim
        if rnd_hiddens is not NotProvided:
            self.rnd_hiddens = rnd_hiddens
        if update_proportion is not NotProvided:
            self.update_proportion = update_proportion
        if rnd_lr is not NotProvided:
            self.rnd_lr = rnd_lr
        if precollect_dir is not NotProvided:
            self.precollect_dir = str(Path(precollect_dir).resolve()) if precollect_dir else None
        if precollect_every_timesteps is not NotProvided:
            self.precollect_every_timesteps = precollect_every_timesteps
        if precollect_episodes is not NotProvided:
            self.precollect_episodes = precollect_episodes
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if not (self.enable_rl_module_and_learner and self.enable_env_runner_and_connector_v2):
            self._value_error("RND-PPO runs on RLlib's new API stack only")
        if self.is_multi_agent:
            self._value_error(
                "RND-PPO is single-agent: its RND module sits beside the one "
                f"policy {DEFAULT_MODULE_ID!r}"
            )
        if not (self.use_critic and self.use_gae):
            self._value_error(
                "RND-PPO needs use_critic=True and use_gae=True: both value "
                "heads are trained on GAE targets"
            )
        if not self.add_default_connectors_to_learner_pipeline:
            self._value_error(
                "RND-PPO's learner pieces need RLlib's default learner connectors "
                "(add_default_connectors_to_learner_pipeline=True)"
            )
        if self.num_aggregator_actors_per_learner:
            self._value_error(
                "RND-PPO computes intrinsic rewards in the learner's own connector pipeline: "
                "set num_aggregator_actors_per_learner=0"
            )
        if self.num_learners > 1:
            # Each learner would keep its own obs and intrinsic-return statistics.
            self._value_error(
                "RND-PPO supports one learner (num_learners 0 or 1): its running "
                "statistics are not synchronised across learners"
            )
        model = self.model_config
        if model.get("use_lstm") or model.get("use_attention"):
            self._value_error(
                "RND-PPO does not support recurrent policies (use_lstm / "
                "use_attention): its GAE reads unpadded episode chunks"
            )
        self._validate_rnd_settings()

    def _validate_rnd_settings(self) -> None:
        if self.int_coeff < 0 or self.ext_coeff < 0 or self.int_coeff + self.ext_coeff == 0:
            self._value_error(
                f"int_coeff ({self.int_coeff}) and ext_coeff ({self.ext_coeff}) "
                "must be >= 0, and not both 0"
            )
        if not 0.0 <= self.int_gamma <= 1.0:
            self._value_error(f"int_gamma must be in [0, 1], got {self.int_gamma}")
        if not isinstance(self.rnd_output_dim, int) or self.rnd_output_dim < 1:
            self._value_error(f"rnd_output_dim must be a positive int, got {self.rnd_output_dim}")
        if not self.rnd_hiddens or any(not isinstance(h, int) or h < 1 for h in self.rnd_hiddens):
            self._value_error(
                f"rnd_hiddens must be a non-empty list of positive ints, got {self.rnd_hiddens}"
            )
        if not 0.0 < self.update_proportion <= 1.0:
            self._value_error(f"update_proportion must be in (0, 1], got {self.update_proportion}")
        if self.rnd_lr is not None and self.rnd_lr <= 0:
            self._value_error(f"rnd_lr must be > 0 (or None: the policy's lr), got {self.rnd_lr}")
        if self.precollect_every_timesteps < 1 or self.precollect_episodes < 1:
            self._value_error(
                "precollect_every_timesteps and precollect_episodes must be >= 1,"
                f" got {self.precollect_every_timesteps} and "
                f"{self.precollect_episodes}"
            )

    @override(PPOConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=TwoHeadedPPOTorchRLModule)

    @override(PPOConfig)
    def get_default_learner_class(self) -> type:
        return RNDPPOTorchLearner

    @override(PPOConfig)
    def get_multi_rl_module_spec(
        self, *, inference_only: bool = False, **kwargs: Any
    ) -> MultiRLModuleSpec:
        """PPO's spec, plus the learner-only RND module (unless building for inference).

        Added here rather than as a default MultiRLModuleSpec, because RLlib builds the
        env runners' single-agent module from the default spec; and built at call time
        from the config's attributes, so values set by Tune (``update_from_dict``) apply.
        """
        spec = super().get_multi_rl_module_spec(inference_only=inference_only, **kwargs)
        if inference_only or RND_MODULE_ID in spec.rl_module_specs:
            return spec
        policy = spec.rl_module_specs[DEFAULT_MODULE_ID]
        spec.add_modules(
            {
                RND_MODULE_ID: RLModuleSpec(
                    module_class=RandomNetworkDistillation,
                    observation_space=policy.observation_space,
                    action_space=policy.action_space,
                    learner_only=True,
                    model_config={
                        "hiddens": list(self.rnd_hiddens),
                        "output_dim": self.rnd_output_dim,
                    },
                )
            }
        )
        return spec

    @override(PPOConfig)
    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device
        )
        # After NumpyToTensor (the last default piece): both read the finished tensor batch.
        # PPOLearner.build then appends its one-headed GAE, which RNDPPOTorchLearner removes.
        pipeline.append(ComputeIntrinsicRewards(int_gamma=self.int_gamma))
        pipeline.append(
            TwoHeadedGeneralAdvantageEstimation(
                gamma=self.gamma,
                int_gamma=self.int_gamma,
                lambda_=self.lambda_,
                ext_coeff=self.ext_coeff,
                int_coeff=self.int_coeff,
            )
        )
        return pipeline


class RNDPPO(PPO):
    """PPO, with RND-PPO's config and the precollect callback (when configured)."""

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> RNDPPOConfig:
        return RNDPPOConfig()

    @override(PPO)
    def setup(self, config: Any) -> None:
        super().setup(config)
        if self.config.precollect_dir:
            # Beside the user's callbacks (config.callbacks_class), which RLlib has just
            # instantiated into this list.
            self.callbacks.append(PrecollectEpisodes())

    def precollect_now(self) -> int:
        """One more collection into ``precollect_dir`` now (e.g. after the last iteration)."""
        from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

        steps = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        return precollect_now(self, env_steps=int(steps))
