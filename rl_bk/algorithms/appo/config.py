"""RLlib's ``APPOConfig`` with rl-bk's APPO learner (:class:`BaseAPPOTorchLearner`); each
method's APPO config (``ShapedAPPOConfig``, ``ELLMAPPOConfig``, ``ONIAPPOConfig``,
``PTGMAPPOConfig``) builds on it."""

from __future__ import annotations

from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.utils.annotations import override

from rl_bk.algorithms.appo.learner import BaseAPPOTorchLearner
from rl_bk.connectors.learner.reward_rewrite import RewardTermsMixin


class BaseAPPOConfig(RewardTermsMixin, APPOConfig):
    """RLlib's APPO whose learner thread waits for its batches (:mod:`.learner` says why), on
    the env reward times ``extrinsic_coeff`` plus the method's reward terms."""

    @override(APPOConfig)
    def get_default_learner_class(self) -> type:
        return BaseAPPOTorchLearner
