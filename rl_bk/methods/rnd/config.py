"""RND-PPO's config and algorithm: RLlib's PPO, wired for Random Network Distillation, so that
nothing else has to be set (:class:`RNDPPOConfig`: the two RLModules, the intrinsic-reward and
two-headed GAE pieces, the learner, and the precollect callback). Defaults are BK's RND
settings (mansicer/background-knowledge-rl ``utils/config.py``; CleanRL's
``ppo_rnd_envpool.py``). Only single-agent, non-recurrent policies on flat Box observations.
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
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.methods.rnd.intrinsic_reward import ComputeIntrinsicRewards
from rl_bk.methods.rnd.learner import RNDPPOTorchLearner
from rl_bk.methods.rnd.precollect import PrecollectEpisodes, precollect_now
from rl_bk.methods.rnd.rl_module import (
    RND_MODULE_ID,
    RandomNetworkDistillation,
    TwoHeadedPPOTorchRLModule,
)
from rl_bk.methods.rnd.settings import RNDSettings
from rl_bk.methods.rnd.two_headed_gae import TwoHeadedGeneralAdvantageEstimation


class RNDPPOConfig(BasePPOConfig):
    """RND-PPO's one config, used like PPO's::

        config = (RNDPPOConfig()
                  .environment("BabyAI-Text-GoToLocal-RedBall-S20-v0")
                  .training(lr=3e-4, int_coeff=1.0, ext_coeff=2.0, int_gamma=0.99)
                  .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[256, 256])))
        algo = config.build_algo()

    What it wires:

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
    """

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or RNDPPO)
        self.rnd = RNDSettings()
        self.precollect_dir: str | None = None

    @override(PPOConfig)
    def training(
        self,
        *,
        rnd: RNDSettings = NotProvided,
        precollect_dir: str | None = NotProvided,
        **kwargs: Any,
    ) -> RNDPPOConfig:
        """PPO's training settings, plus RND's.

        Args:
            rnd: RND's settings (:class:`~rl_bk.methods.rnd.settings.RNDSettings`, each
                field's meaning there); any of its fields may also be given by name
                (``training(int_coeff=0.5)``), and is checked as the object's are.
            precollect_dir: a trajectory dataset folder; when set, the current stochastic
                policy's episodes are appended to it during training (BK's stage 1).
                A relative path is made absolute here (Tune trials run elsewhere).
        """
        self.rnd = (self.rnd if rnd is NotProvided else rnd).take_from(kwargs)
        super().training(**kwargs)
        if precollect_dir is not NotProvided:
            self.precollect_dir = str(Path(precollect_dir).resolve()) if precollect_dir else None
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
                        "hiddens": list(self.rnd.rnd_hiddens),
                        "output_dim": self.rnd.rnd_output_dim,
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
        pipeline.append(ComputeIntrinsicRewards(int_gamma=self.rnd.int_gamma))
        pipeline.append(
            TwoHeadedGeneralAdvantageEstimation(
                gamma=self.gamma,
                int_gamma=self.rnd.int_gamma,
                lambda_=self.lambda_,
                ext_coeff=self.rnd.ext_coeff,
                int_coeff=self.rnd.int_coeff,
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
        steps = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        return precollect_now(self, env_steps=int(steps))
