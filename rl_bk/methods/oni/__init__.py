"""ONI-PPO: PPO on online intrinsic rewards from LLM feedback (retrieval, classification,
ranking, cosine-BoW), and offline Motif. The names load lazily, so that the settings
(:mod:`.settings`) import without the RLlib classes."""

from __future__ import annotations

from rl_bk.algorithms.lazy_names import lazy_names

_WHERE = {
    "ONI_MODULE_ID": "rl_module",
    "REWARD_TYPES": "intrinsic_reward",
    "ONIAPPOConfig": "config",
    "ONIPPOConfig": "config",
    "OnlineIntrinsicReward": "intrinsic_reward",
    "OnlineRewardModel": "rl_module",
}
__all__ = sorted(_WHERE)
__getattr__ = lazy_names(__name__, _WHERE)
