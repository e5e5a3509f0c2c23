"""RLlib's ``APPOConfig`` with rl-bk's APPO learner (:class:`BaseAPPOTorchLearner`); each
method's APPO config (``ShapedAPPOConfig``, ``ELLMAPPOConfig``, ``ONIAPPOConfig``,
``PTGMAPPOConfig``) builds on it."""

from __future__ import annotations

from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.utils.annotations import override


class BaseAPPOConfig(APPOConfig):
    """RLlib's APPO whose learner thread waits for its batches (:mod:`.learner` says why)."""

    @override(APPOConfig)
    def get_default_learner_class(self) -> type:
        from rl_bk.algorithms.appo.learner import BaseAPPOTorchLearner

        return BaseAPPOTorchLearner
