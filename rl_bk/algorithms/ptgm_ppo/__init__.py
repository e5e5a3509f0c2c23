"""PTGM-PPO: hierarchical RL over pre-trained goals (PKU-RL/PTGM), on the repo's envs."""

from rl_bk.algorithms.ptgm_ppo.config import PTGMPPOConfig
from rl_bk.algorithms.ptgm_ppo.high_level_env import HighLevelGoalEnv, register_high_level_env

__all__ = ["HighLevelGoalEnv", "PTGMPPOConfig", "register_high_level_env"]
