"""ELLM-PPO: PPO on ELLM's reward for achieving LLM-suggested goals."""

from rl_bk.algorithms.ellm_ppo.config import ELLMPPOConfig
from rl_bk.algorithms.ellm_ppo.intrinsic_reward import SUGGESTERS, ELLMIntrinsicReward

__all__ = ["SUGGESTERS", "ELLMIntrinsicReward", "ELLMPPOConfig"]
