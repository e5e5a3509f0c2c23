"""ONI-PPO: PPO on online intrinsic rewards from LLM feedback (retrieval, classification,
ranking, cosine-BoW), and offline Motif."""

from rl_bk.algorithms.oni_ppo.config import ONIPPOConfig
from rl_bk.algorithms.oni_ppo.intrinsic_reward import REWARD_TYPES, OnlineIntrinsicReward
from rl_bk.algorithms.oni_ppo.rl_module import ONI_MODULE_ID, OnlineRewardModel

__all__ = [
           "ONI_MODULE_ID",
           "REWARD_TYPES",
           "ONIPPOConfig",
           "OnlineIntrinsicReward",
           "OnlineRewardModel",
]  # fmt: skip
