"""RLlib's ``APPOConfig`` with rl-bk's APPO learner (:class:`BaseAPPOTorchLearner`) and
module (:class:`ActorTargetAPPOTorchRLModule`); each method's APPO config
(``ShapedAPPOConfig``, ``ELLMAPPOConfig``, ``ONIAPPOConfig``, ``PTGMAPPOConfig``) builds on it."""

from __future__ import annotations

from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override

from rl_bk.algorithms.appo.learner import BaseAPPOTorchLearner
from rl_bk.algorithms.appo.rl_module import ActorTargetAPPOTorchRLModule
from rl_bk.connectors.learner.reward_rewrite import RewardTermsMixin


class BaseAPPOConfig(RewardTermsMixin, APPOConfig):
    """RLlib's APPO whose learner thread waits for its batches (:mod:`.learner` says why) and
    whose target policy skips the old critic network (:mod:`.rl_module`), on the env reward
    times ``extrinsic_coeff`` plus the method's reward terms."""

    @override(APPOConfig)
    def get_default_learner_class(self) -> type:
        return BaseAPPOTorchLearner

    @override(APPOConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=ActorTargetAPPOTorchRLModule)
